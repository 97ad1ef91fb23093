// The admin HTTP app every role serves: liveness, readiness, Prometheus metrics and the role's
// own JSON views. Auth (when configured) is the first middleware, so routes a role mounts later
// with app.route() are protected too.
import { Hono } from "hono";
import * as v from "valibot";
import { silentLogger, type Logger } from "../log.ts";
import { createRegistry, PROMETHEUS_CONTENT_TYPE, registerProcessMetrics, type Registry } from "../metrics/index.ts";
import { createAuthMiddleware, type AdminAuthOptions, type AdminEnv } from "./auth.ts";
import { createErrorHandler, notFound, parseInput, ProblemError } from "./problem.ts";
import { mergeExtensions, type AdminExtension, type View } from "./extensions.ts";
import { CHECK_NAME_PATTERN, createReadiness, type CheckResult, type Readiness } from "./readiness.ts";
import { createStatusPageHandler, type StatusPageOptions } from "./status-page.ts";

export type { View } from "./extensions.ts";

export interface AdminAppOptions {
  /** The role's metrics; a fresh registry when absent. */
  registry?: Registry;
  /** Add process_* metrics to the registry unless it has them already (default true). */
  processMetrics?: boolean;
  readiness?: Readiness;
  auth?: AdminAuthOptions;
  /** Served at GET /views/<name>; listed at GET /views. */
  views?: Record<string, View>;
  /** Components' views, status sections and routes (see extensions.ts); merged with `views`. */
  extensions?: AdminExtension[];
  /** The HTML status page at GET / and /status; `false` leaves it out. */
  statusPage?: StatusPageOptions | false;
  logger?: Logger;
}

export type AdminApp = Hono<AdminEnv>;

const apps = new WeakSet<object>();
const bodyLimits = new WeakMap<object, number>();

/** True when the app was built with auth, so the server does not stack a second layer. */
export function hasBuiltInAuth(app: object): boolean {
  return apps.has(app);
}

/** The largest request body one of the app's routes accepts (0 when none declared one). */
export function requiredBodyBytes(app: object): number {
  return bodyLimits.get(app) ?? 0;
}

const VIEW_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
// c.req.queries() gives every parameter as a list; verbose may appear once, with no value or a boolean.
const VerboseFlag = v.tuple(
  [v.picklist(["", "true", "1", "false", "0"], "verbose takes no value, or true/false")],
  "verbose may appear once",
);
const ReadyzQuery = v.strictObject(
  {
    verbose: v.optional(VerboseFlag),
    exclude: v.optional(v.array(v.pipe(v.string(), v.regex(CHECK_NAME_PATTERN, "exclude names a readiness check")))),
  },
  "unknown query parameter",
);

function isOn(value: string | undefined): boolean {
  return value !== undefined && value !== "false" && value !== "0";
}

function notReady(failed: CheckResult[], shown: CheckResult[]): ProblemError {
  const list = failed.map((c) => `${c.name} (${c.reason})`).join(", ");
  return new ProblemError({
    status: 503,
    reason: "NotReady",
    title: "Not ready",
    detail: `${failed.length} readiness check${failed.length === 1 ? "" : "s"} failed: ${list}`,
    extra: { checks: shown },
  });
}

export function createAdminApp(options: AdminAppOptions = {}): AdminApp {
  const logger = options.logger ?? silentLogger;
  const registry = options.registry ?? createRegistry({ logger });
  if (options.processMetrics !== false && !registry.has("process_cpu_seconds_total")) registerProcessMetrics(registry);
  const readiness = options.readiness ?? createReadiness({ logger });
  const extra = mergeExtensions([{ views: options.views }, ...(options.extensions ?? [])]);
  const views = new Map(Object.entries(extra.views));
  for (const [name, view] of views) {
    if (!VIEW_NAME.test(name))
      throw new TypeError(`view name ${JSON.stringify(name)} must be lowercase letters, digits and "-"`);
    if (typeof view !== "function") throw new TypeError(`view ${name} must be a function`);
  }

  const app: AdminApp = new Hono<AdminEnv>();
  app.onError(createErrorHandler(logger));
  app.notFound(notFound);
  if (options.auth) {
    app.use("*", createAuthMiddleware(options.auth));
    apps.add(app);
  }
  if (extra.maxRequestBodyBytes > 0) bodyLimits.set(app, extra.maxRequestBodyBytes);

  healthRoutes(app, readiness);

  app.get("/metrics", async (c) => {
    return c.body(await registry.expose(), 200, {
      "content-type": PROMETHEUS_CONTENT_TYPE,
      "cache-control": "no-store",
    });
  });

  app.get("/views", (c) => c.json({ views: [...views.keys()].sort() }));

  app.get("/views/:name", async (c) => {
    const name = c.req.param("name");
    const view = views.get(name);
    if (!view)
      throw new ProblemError({ status: 404, reason: "NotFound", detail: `no view named ${JSON.stringify(name)}` });
    let data: unknown;
    try {
      data = await view({ query: c.req.query() });
    } catch (err) {
      if (err instanceof ProblemError) throw err;
      logger.warn("admin view failed", { view: name, err });
      throw new ProblemError(
        {
          status: 500,
          reason: "ViewFailed",
          detail: `view ${name} failed: ${err instanceof Error ? err.message : String(err)}`,
        },
        { cause: err },
      );
    }
    return c.json(data === undefined ? null : data);
  });

  if (options.statusPage !== false) {
    const page = createStatusPageHandler({
      title: options.statusPage?.title ?? "liqo",
      refreshSeconds: options.statusPage?.refreshSeconds ?? 2,
      sections: extra.status,
      views,
      readiness,
      logger,
    });
    app.get("/", page);
    app.get("/status", page);
  }
  for (const [path, sub] of Object.entries(extra.routes)) app.route(path, sub);

  return app;
}

/** GET /healthz, /readyz (?exclude=, ?verbose) and /readyz/<check>: the admin API's and the probe port's. */
function healthRoutes(app: Hono<AdminEnv>, readiness: Readiness): void {
  app.get("/healthz", (c) => c.json({ status: "ok" }, 200, { "cache-control": "no-store" }));

  app.get("/readyz", async (c) => {
    const query = parseInput(ReadyzQuery, c.req.queries(), "readyz query");
    const verbose = isOn(query.verbose?.[0]);
    const report = await readiness.run({ exclude: query.exclude });
    const failed = report.checks.filter((check) => !check.ok);
    if (!report.ready) throw notReady(failed, verbose ? report.checks : failed);
    return c.json(verbose ? { status: "ready", checks: report.checks } : { status: "ready" }, 200, {
      "cache-control": "no-store",
    });
  });

  app.get("/readyz/:check", async (c) => {
    const name = c.req.param("check");
    if (!readiness.has(name))
      throw new ProblemError({
        status: 404,
        reason: "NotFound",
        detail: `no readiness check named ${JSON.stringify(name)}`,
      });
    const report = await readiness.run({ only: name });
    if (!report.ready) throw notReady(report.checks, report.checks);
    return c.json({ status: "ready", checks: report.checks }, 200, { "cache-control": "no-store" });
  });
}

/**
 * The kubelet's probes, on their own plain-HTTP port (probes dial the pod IP, where the admin API
 * does not listen): liveness and readiness only, as on the admin API. Nothing else is served here,
 * so the port can face the pod network without TLS or tokens.
 */
export function createHealthApp(options: { readiness: Readiness; logger?: Logger }): AdminApp {
  const app: AdminApp = new Hono<AdminEnv>();
  app.onError(createErrorHandler(options.logger ?? silentLogger));
  app.notFound(notFound);
  healthRoutes(app, options.readiness);
  return app;
}
