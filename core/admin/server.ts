// Serves an admin app with Bun.serve (or, when client certificates are accepted, through
// mtls.ts). Loopback by default: the API shows internal state, so exposing it is a deliberate
// act that needs auth and TLS, or an explicit opt-out when a proxy in front provides both.
import { Hono } from "hono";
import * as v from "valibot";
import { silentLogger, type Logger } from "../log.ts";
import { hasBuiltInAuth, requiredBodyBytes } from "./app.ts";
import { AdminConfigError, createAuthMiddleware, type AdminAuthOptions, type AdminEnv } from "./auth.ts";
import { startMtlsServer } from "./mtls.ts";
import { createErrorHandler, notFound } from "./problem.ts";

type Pem = string | Bun.BunFile;

export interface AdminTlsOptions {
  /** PEM contents (or Bun.file(path)) of the serving certificate chain and key. */
  cert: Pem;
  key: Pem;
  ca?: Pem;
  passphrase?: string;
  /** CA(s) of accepted client certificates; with auth `clientCertificates`, they stand in for tokens. */
  clientCa?: Pem;
}

export interface AdminServerOptions {
  app: { fetch: (request: Request) => Response | Promise<Response> };
  host?: string;
  /** 0 picks a free port; read it back from the returned server. */
  port: number;
  tls?: AdminTlsOptions;
  /** Token auth applied in front of the app (for apps built without `auth`). */
  auth?: AdminAuthOptions;
  /** Allow a non-loopback host without any token auth or TLS, e.g. behind an authenticating, TLS-terminating proxy. */
  allowAnonymous?: boolean;
  /** Largest request body accepted (default 1 MiB, or what the app's routes declared when more, e.g. plugin uploads). */
  maxRequestBodySize?: number;
  logger?: Logger;
}

export interface AdminServer {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  /** Stops listening and closes open connections. */
  stop(): Promise<void>;
}

const pem = v.union([v.pipe(v.string(), v.minLength(1)), v.instance(Blob)], "expected PEM text or a file");
const ServerOptionsSchema = v.object({
  host: v.pipe(v.string(), v.minLength(1, "host must not be empty")),
  port: v.pipe(v.number(), v.integer("port must be an integer"), v.minValue(0), v.maxValue(65535)),
  tls: v.optional(
    v.object({
      cert: pem,
      key: pem,
      ca: v.optional(pem),
      passphrase: v.optional(v.string()),
      clientCa: v.optional(pem),
    }),
  ),
  maxRequestBodySize: v.pipe(v.number(), v.integer(), v.minValue(1)),
});

export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h);
}

function withAuth(app: AdminServerOptions["app"], auth: AdminAuthOptions, logger: Logger) {
  const outer = new Hono<AdminEnv>();
  outer.onError(createErrorHandler(logger));
  outer.notFound(notFound);
  outer.use("*", createAuthMiddleware(auth));
  outer.all("*", (c) => app.fetch(c.req.raw));
  return outer;
}

export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const logger = options.logger ?? silentLogger;
  const host = options.host ?? "127.0.0.1";
  const checked = v.safeParse(ServerOptionsSchema, {
    host,
    port: options.port,
    tls: options.tls,
    // Twice the routes' own limit: up to there the route answers an oversized body with a problem
    // naming its limit; beyond it Bun refuses with a bare 413 before any handler runs.
    maxRequestBodySize: options.maxRequestBodySize ?? Math.max(1 << 20, 2 * requiredBodyBytes(options.app)),
  });
  if (!checked.success) {
    const issues = checked.issues.map((i) => `${v.getDotPath(i) ?? "options"}: ${i.message}`);
    throw new AdminConfigError(`invalid admin server options: ${issues.join("; ")}`);
  }
  const builtIn = hasBuiltInAuth(options.app);
  if (options.auth && builtIn)
    throw new AdminConfigError("auth is configured on both the admin app and the server; configure it once");
  const authenticated = builtIn || options.auth !== undefined;
  if (!isLoopbackHost(host) && !authenticated && !options.allowAnonymous) {
    throw new AdminConfigError(
      `refusing to serve the admin API on ${host} without auth; configure tokens or set allowAnonymous`,
    );
  }
  if (!isLoopbackHost(host) && !options.tls && !options.allowAnonymous) {
    // Tokens and the state the API shows would cross the network in clear text.
    throw new AdminConfigError(
      `refusing to serve the admin API on ${host} without TLS; configure tls (a certificate and key) or bind a loopback address`,
    );
  }

  const handler = options.auth ? withAuth(options.app, options.auth, logger) : options.app;
  let listening: { port: number; stop(): Promise<void> };
  try {
    if (options.tls?.clientCa) {
      const text = async (p: Pem) => (typeof p === "string" ? p : p.text());
      listening = await startMtlsServer({
        host,
        port: checked.output.port,
        cert: await text(options.tls.cert),
        key: await text(options.tls.key),
        passphrase: options.tls.passphrase,
        clientCa: await text(options.tls.clientCa),
        maxRequestBodySize: checked.output.maxRequestBodySize,
        fetch: (request) => handler.fetch(request),
      });
    } else {
      const server = Bun.serve({
        hostname: host,
        port: checked.output.port,
        tls: options.tls,
        maxRequestBodySize: checked.output.maxRequestBodySize,
        fetch: (request) => handler.fetch(request),
      });
      listening = { port: server.port!, stop: () => server.stop(true) };
    }
  } catch (err) {
    throw new AdminConfigError(
      `cannot listen on ${host}:${options.port}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  const port = listening.port;
  const scheme = options.tls ? "https" : "http";
  const url = `${scheme}://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}`;
  logger.info("admin API listening", {
    url,
    auth: authenticated,
    tls: Boolean(options.tls),
    clientCertificates: Boolean(options.tls?.clientCa),
  });
  return {
    host,
    port,
    url,
    stop: () => listening.stop(),
  };
}
