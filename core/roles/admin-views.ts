// What a role's components show on the admin API. Each component contributes an AdminExtension
// (views, status-page sections, routes, metrics); a role passes the ones it runs:
//   createAdminApp({ registry, readiness, extensions: [adminViews({ registry, reflection, clients })] })
// Peerings, virtual nodes, offloaded namespaces, IPAM allocations and tunnels become more keys
// of AdminComponents, each with its own extension function, in the same shape.
import { existsSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Hono } from "hono";
import * as v from "valibot";
import {
  byLabel,
  parseInput,
  ProblemError,
  readBodyLimited,
  sumCounter,
  summarizeHistogram,
  type AdminEnv,
  type AdminExtension,
  type LatencySummary,
} from "../admin/index.ts";
import type { KubeClient } from "../kube/client.ts";
import type { MetricFamily, Registry } from "../metrics/index.ts";
import { apiVersionOf } from "../reflection/abi.ts";
import type { DropinWatcher } from "../reflection/engine/dropins.ts";
import type { PluginInfo, ReflectionEngine } from "../reflection/engine/engine.ts";
import { validatePlugin } from "../reflection/validate.ts";
import { isBuiltinName } from "../../reflectors/index.ts";

export interface ReflectionComponent {
  engine: ReflectionEngine;
  /** The drop-in directory and its watcher; without them plugins can be listed, not managed. */
  dropins?: DropinWatcher;
  pluginDir?: string;
  /** Largest .wasm accepted by PUT /api/plugins/<name> (default 8 MiB). */
  maxPluginBytes?: number;
}

export interface AdminComponents {
  /** The role's registry: the views read latencies and counts from it, and API client counters go in it. */
  registry: Registry;
  reflection?: ReflectionComponent;
  /** Kubernetes clients by a bounded name ("local", "remote"), for request and error counters. */
  clients?: Record<string, Pick<KubeClient, "stats">>;
}

const DEFAULT_MAX_PLUGIN_BYTES = 8 << 20;
const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d];
const PluginName = v.pipe(
  v.string(),
  v.regex(
    /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
    "a plugin name is a DNS label: lowercase letters, digits and -, at most 63",
  ),
);
const NoQuery = v.strictObject({}, "this endpoint takes no query parameters");
const UploadType = v.optional(
  v.picklist(["application/wasm", "application/octet-stream"], "send the plugin as Content-Type: application/wasm"),
);

export function adminViews(components: AdminComponents): AdminExtension {
  const parts: AdminExtension[] = [];
  if (components.reflection) parts.push(reflectionExtension(components.registry, components.reflection));
  if (components.clients) parts.push(kubeClientsExtension(components.registry, components.clients));
  return {
    views: Object.assign({}, ...parts.map((p) => p.views)),
    status: parts.flatMap((p) => p.status ?? []),
    routes: Object.assign({}, ...parts.map((p) => p.routes)),
    maxRequestBodyBytes: Math.max(0, ...parts.map((p) => p.maxRequestBodyBytes ?? 0)),
  };
}

function kubeClientsExtension(registry: Registry, clients: Record<string, Pick<KubeClient, "stats">>): AdminExtension {
  const entries = Object.entries(clients);
  if (!registry.has("liqo_kube_client_requests_total")) {
    registry.callbackCounter({
      name: "liqo_kube_client_requests_total",
      help: "Requests sent to a Kubernetes API server, by client.",
      labelNames: ["cluster"] as const,
      collect: () => entries.map(([cluster, c]) => ({ labels: { cluster }, value: c.stats.requests })),
    });
    registry.callbackCounter({
      name: "liqo_kube_client_errors_total",
      help: "Requests to a Kubernetes API server that failed (error status or no answer), by client.",
      labelNames: ["cluster"] as const,
      collect: () => entries.map(([cluster, c]) => ({ labels: { cluster }, value: c.stats.errors })),
    });
  }
  return {
    views: {
      "kube-clients": () =>
        entries.map(([cluster, c]) => ({ cluster, requests: c.stats.requests, errors: c.stats.errors })),
    },
    status: [
      {
        title: "Kubernetes API clients",
        view: "kube-clients",
        columns: [
          { key: "cluster", label: "cluster" },
          { key: "requests", label: "requests", format: "count" },
          { key: "errors", label: "errors", format: "count" },
        ],
      },
    ],
  };
}

// Metrics are scraped into views at most this often, so a busy status page or a load test
// costs the reflectors one registry walk per interval, not one per request.
const METRICS_MEMO_MS = 250;

function memoizedFamilies(registry: Registry): () => Promise<MetricFamily[]> {
  let at = 0;
  let pending: Promise<MetricFamily[]> | undefined;
  return () => {
    if (!pending || Date.now() - at > METRICS_MEMO_MS) {
      at = Date.now();
      pending = registry.collect();
    }
    return pending;
  };
}

interface PluginRow extends PluginInfo {
  file?: string;
  reconciles: number;
  errors: number;
  callLatency?: LatencySummary;
}

function reflectionExtension(registry: Registry, r: ReflectionComponent): AdminExtension {
  const families = memoizedFamilies(registry);
  const pluginOf = (labels: Record<string, string>) => labels.reflector?.split("/")[0];
  const uploads = registry.has("liqo_reflection_plugin_uploads_total")
    ? undefined
    : registry.counter({
        name: "liqo_reflection_plugin_uploads_total",
        help: "Plugin uploads and removals through the admin API, by outcome.",
        labelNames: ["outcome"] as const,
      });
  if (!registry.has("liqo_reflection_plugin_calls_total")) {
    registry.callbackCounter({
      name: "liqo_reflection_plugin_calls_total",
      help: "Calls into a loaded plugin since it was (re)loaded.",
      labelNames: ["plugin"] as const,
      collect: () => r.engine.plugins().map((p) => ({ labels: { plugin: p.name }, value: p.calls })),
    });
    registry.callbackCounter({
      name: "liqo_reflection_plugin_recycles_total",
      help: "Times a plugin's instance was recycled to return its memory.",
      labelNames: ["plugin"] as const,
      collect: () => r.engine.plugins().map((p) => ({ labels: { plugin: p.name }, value: p.recycles })),
    });
  }

  async function pluginRows(): Promise<PluginRow[]> {
    const f = await families();
    const reconciles = sumCounter(f, "liqo_reflection_reconciles_total", pluginOf);
    const errors = sumCounter(f, "liqo_reflection_errors_total", pluginOf);
    const calls = summarizeHistogram(f, "liqo_reflection_plugin_call_seconds", pluginOf);
    const files = new Map((r.dropins?.files() ?? []).filter((s) => s.plugin).map((s) => [s.plugin!, s.file]));
    return r.engine.plugins().map((p) => ({
      ...p,
      file: files.get(p.name),
      reconciles: reconciles.get(p.name) ?? 0,
      errors: errors.get(p.name) ?? 0,
      callLatency: calls.get(p.name),
    }));
  }

  async function reflectorRows() {
    const f = await families();
    const reflector = byLabel("reflector");
    const latency = summarizeHistogram(f, "liqo_reflection_reconcile_seconds", reflector);
    const calls = summarizeHistogram(f, "liqo_reflection_plugin_call_seconds", reflector);
    const errors = sumCounter(f, "liqo_reflection_errors_total", reflector);
    return r.engine.reflectors().map((x) => ({
      ...x,
      plugin: x.name.split("/")[0],
      errors: errors.get(x.name) ?? 0,
      reconcileLatency: latency.get(x.name),
      callLatency: calls.get(x.name),
    }));
  }

  return {
    views: {
      plugins: pluginRows,
      reflectors: reflectorRows,
      pairs: () => r.engine.pairs(),
      dropins: () => r.dropins?.files() ?? [],
    },
    status: [
      {
        title: "Reflectors",
        view: "reflectors",
        empty: "no reflector runs: no plugin is loaded",
        columns: [
          { key: "name", label: "reflector" },
          { key: "direction", label: "direction" },
          { key: "pairs", label: "pairs", format: "count" },
          { key: "queueDepth", label: "queued", format: "count" },
          { key: "handled", label: "handled", format: "count" },
          { key: "failed", label: "failed", format: "count" },
          { key: "errors", label: "errors", format: "count" },
          { key: "reconcileLatency.p99Seconds", label: "reconcile p99", format: "seconds" },
          { key: "callLatency.meanSeconds", label: "plugin call mean", format: "seconds" },
        ],
      },
      {
        title: "Plugins",
        view: "plugins",
        columns: [
          { key: "name", label: "plugin" },
          { key: "version", label: "version" },
          { key: "trust", label: "trust" },
          { key: "state", label: "state", format: "state" },
          { key: "quarantineReason", label: "quarantine reason" },
          { key: "calls", label: "calls", format: "count" },
          { key: "reconciles", label: "reconciles", format: "count" },
          { key: "errors", label: "errors", format: "count" },
          { key: "callLatency.p99Seconds", label: "call p99", format: "seconds" },
          { key: "resources", label: "resources" },
          { key: "source", label: "source" },
        ],
      },
      {
        title: "Namespace pairs",
        view: "pairs",
        empty: "no namespace is paired yet",
        columns: [
          { key: "localNamespace", label: "local namespace" },
          { key: "remoteNamespace", label: "remote namespace" },
        ],
      },
      {
        title: "Drop-in files",
        view: "dropins",
        empty: r.pluginDir ? `no .wasm file in ${r.pluginDir}` : "no plugin directory configured",
        columns: [
          { key: "file", label: "file" },
          { key: "plugin", label: "plugin" },
          { key: "error", label: "error" },
        ],
      },
    ],
    routes: { "/api/plugins": pluginRoutes(r, pluginRows, uploads) },
    maxRequestBodyBytes: r.maxPluginBytes ?? DEFAULT_MAX_PLUGIN_BYTES,
  };
}

type Uploads = { inc(labels: { outcome: string }): void } | undefined;

function pluginRoutes(r: ReflectionComponent, rows: () => Promise<PluginRow[]>, uploads: Uploads): Hono<AdminEnv> {
  const maxBytes = r.maxPluginBytes ?? DEFAULT_MAX_PLUGIN_BYTES;
  const api = new Hono<AdminEnv>();
  // Uploads and removals one at a time: each one is a write, a directory scan and a check.
  let chain: Promise<unknown> = Promise.resolve();
  const serialized = <T>(work: () => Promise<T>): Promise<T> => {
    const run = chain.then(work, work);
    chain = run.catch(() => undefined);
    return run;
  };

  const nameOf = (param: string) => parseInput(PluginName, param, "plugin name");
  const refuseBuiltin = (name: string) => {
    const loaded = r.engine.plugins().find((p) => p.name === name);
    if (isBuiltinName(name) || loaded?.trust === "builtin") {
      throw new ProblemError({
        status: 409,
        reason: "BuiltinPlugin",
        detail: `${name} is a built-in reflector; built-ins are chosen with --builtins and cannot be replaced or removed here`,
      });
    }
  };
  const managed = (): { dir: string; dropins: DropinWatcher } => {
    if (!r.pluginDir || !r.dropins) {
      throw new ProblemError({
        status: 409,
        reason: "NoPluginDirectory",
        detail:
          "this process runs without a plugin directory; start it with --plugin-dir <dir> to manage drop-in plugins",
      });
    }
    return { dir: r.pluginDir, dropins: r.dropins };
  };
  function fail(outcome: string, problem: ProblemError): never {
    uploads?.inc({ outcome });
    throw problem;
  }

  api.get("/", async (c) => {
    parseInput(NoQuery, c.req.query(), "query");
    return c.json({
      pluginDir: r.pluginDir ?? null,
      maxPluginBytes: maxBytes,
      plugins: await rows(),
      files: r.dropins?.files() ?? [],
    });
  });

  api.get("/:name", async (c) => {
    const name = nameOf(c.req.param("name"));
    const row = (await rows()).find((p) => p.name === name);
    if (!row) throw new ProblemError({ status: 404, reason: "NotFound", detail: `no plugin named ${name} is loaded` });
    return c.json(row);
  });

  api.put("/:name", async (c) => {
    const name = nameOf(c.req.param("name"));
    parseInput(NoQuery, c.req.query(), "query");
    parseInput(
      UploadType,
      c.req.header("content-type")?.split(";")[0]?.trim().toLowerCase() || undefined,
      "Content-Type",
    );
    refuseBuiltin(name);
    const { dir, dropins } = managed();
    const bytes = await readBodyLimited(c.req.raw, maxBytes, `plugin ${name}`).catch((err) => fail("rejected", err));
    if (!WASM_MAGIC.every((b, i) => bytes[i] === b))
      fail("rejected", invalid(name, ["the body is not a WebAssembly module (it does not start with \\0asm)"]));
    const verdict = await validatePlugin(bytes);
    if (!verdict.ok) fail("rejected", invalid(name, verdict.problems));
    const manifest = verdict.manifest!;
    if (manifest.name !== name) {
      fail(
        "rejected",
        new ProblemError({
          status: 422,
          reason: "NameMismatch",
          detail: `the plugin's manifest names it ${manifest.name}; upload it as PUT /api/plugins/${manifest.name}`,
        }),
      );
    }
    const kinds = manifest.resources.map((res) => `${res.kind}.${apiVersionOf(res)}`);
    const clash = r.engine
      .plugins()
      .filter((p) => p.name !== name)
      .flatMap((p) => p.resources.map((res) => ({ plugin: p.name, kind: res.split(" (")[0]! })))
      .filter((x) => kinds.includes(x.kind));
    if (clash.length) {
      fail(
        "rejected",
        new ProblemError({
          status: 409,
          reason: "Conflict",
          detail: `${clash.map((x) => `${x.kind} is already reflected by plugin ${x.plugin}`).join("; ")}; one kind has one reflector: remove that plugin first`,
        }),
      );
    }

    return serialized(async () => {
      const states = dropins.files();
      const file = states.find((s) => s.plugin === name)?.file ?? `${name}.wasm`;
      const owner = states.find((s) => s.file === file)?.plugin;
      if (owner && owner !== name)
        fail(
          "rejected",
          new ProblemError({ status: 409, reason: "Conflict", detail: `file ${file} holds plugin ${owner}` }),
        );
      const path = join(dir, file);
      const previous = existsSync(path) ? readFileSync(path) : undefined;
      atomicWrite(dir, file, bytes);
      await dropins.scan();
      const hash = Bun.hash(bytes).toString(16);
      const state = dropins.files().find((s) => s.file === file && s.hash === hash);
      const loaded = r.engine.plugins().find((p) => p.name === name && p.state === "ready");
      if (!state?.plugin || !loaded) {
        // Put the directory back as it was, so a failed upload leaves nothing behind.
        if (previous) atomicWrite(dir, file, previous);
        else unlinkSync(path);
        await dropins.scan();
        fail(
          "load-failed",
          new ProblemError({
            status: 422,
            reason: "LoadFailed",
            detail: `plugin ${name} passed validation but the engine did not load it: ${state?.error ?? "it is not running"}`,
          }),
        );
      }
      uploads?.inc({ outcome: previous ? "replaced" : "created" });
      const row = (await rows()).find((p) => p.name === name);
      return c.json({ plugin: row, file, replaced: Boolean(previous) }, previous ? 200 : 201, {
        location: `/api/plugins/${name}`,
      });
    });
  });

  api.delete("/:name", async (c) => {
    const name = nameOf(c.req.param("name"));
    parseInput(NoQuery, c.req.query(), "query");
    refuseBuiltin(name);
    const { dir, dropins } = managed();
    return serialized(async () => {
      const file =
        dropins.files().find((s) => s.plugin === name)?.file ??
        (existsSync(join(dir, `${name}.wasm`)) ? `${name}.wasm` : undefined);
      if (!file)
        throw new ProblemError({
          status: 404,
          reason: "NotFound",
          detail: `no drop-in plugin named ${name} in ${dir}`,
        });
      unlinkSync(join(dir, file));
      await dropins.scan();
      if (r.engine.plugins().some((p) => p.name === name)) {
        throw new ProblemError({
          status: 500,
          reason: "RemoveFailed",
          detail: `file ${file} was removed but plugin ${name} still runs; see the role's log`,
        });
      }
      uploads?.inc({ outcome: "removed" });
      return c.json({ removed: name, file });
    });
  });

  return api;
}

function invalid(name: string, problems: string[]): ProblemError {
  return new ProblemError({
    status: 422,
    reason: "InvalidPlugin",
    detail: `plugin ${name} failed validation: ${problems.join("; ")}`,
    extra: { problems },
  });
}

/** Writes next to the target under a dot-name the watcher ignores, then renames: the watcher never sees half a file. */
function atomicWrite(dir: string, file: string, bytes: Uint8Array) {
  const temp = join(dir, `.${file}.${process.pid}.${Date.now().toString(36)}.tmp`);
  writeFileSync(temp, bytes, { flush: true });
  try {
    renameSync(temp, join(dir, file));
  } catch (err) {
    unlinkSync(temp);
    throw err;
  }
}
