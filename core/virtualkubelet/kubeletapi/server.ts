// The virtual kubelet's HTTPS API: what the local API server calls on a node's kubelet for
// `kubectl logs`, `kubectl exec` and metrics, answered from the remote cluster.
// node:https rather than Bun.serve, for two reasons: exec arrives as an HTTP/1.1 upgrade to
// SPDY/3.1, which needs the raw socket (Bun.serve only upgrades to WebSocket), and the caller is
// authenticated by its client certificate, which needs the TLS verdict per connection.
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import type { Duplex } from "node:stream";
import type { KubeClient } from "../../kube/client.ts";
import { keyOf } from "../../kube/resources.ts";
import { silentLogger, type Logger } from "../../log.ts";
import { execRequestFromQuery, serveExecUpgrade, EXEC_PROTOCOL } from "./exec.ts";
import { serveContainerLogs, validateLogQuery } from "./logs.ts";
import { PORTFORWARD_PROTOCOL, servePortForwardUpgrade } from "./portforward.ts";
import { serveRun } from "./run.ts";
import { METRICS_UNAVAILABLE_STATUS, metricsUnavailable } from "./stats.ts";
import { KubeletApiError, type PodResolver, type RemotePodRef } from "./types.ts";

export interface KubeletApiOptions {
  remote: KubeClient;
  resolvePod: PodResolver;
  /** The serving certificate and key (PEM). The rig's API servers do not verify it. */
  tls: { cert: string | Buffer; key: string | Buffer };
  /** Callers must present a client certificate signed by this CA (PEM): the local cluster's CA. */
  auth: { clientCA: string | Buffer };
  host?: string;
  /** 0 picks a free port; read it back from `port`. */
  port?: number;
  /** For /stats/summary. */
  nodeName?: string;
  logger?: Logger;
}

export interface KubeletApi {
  readonly port: number;
  readonly url: string;
  readonly stats: { requests: number; unauthorized: number; logs: number; execs: number; portForwards: number };
  close(): Promise<void>;
}

type Route = { kind: "logs" | "exec" | "run" | "portForward"; namespace: string; pod: string; container: string };

export function parseRoute(pathname: string): Route | undefined {
  // /portForward/{namespace}/{pod}[/{uid}]: no container, the pod's network namespace is shared.
  const pf = /^\/portForward\/([^/]+)\/([^/]+)(?:\/[^/]+)?$/.exec(pathname);
  if (pf)
    return {
      kind: "portForward",
      namespace: decodeURIComponent(pf[1]!),
      pod: decodeURIComponent(pf[2]!),
      container: "",
    };
  const m = /^\/(containerLogs|exec|run)\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(pathname);
  if (!m) return undefined;
  const kind = m[1] === "containerLogs" ? "logs" : (m[1] as "exec" | "run");
  return {
    kind,
    namespace: decodeURIComponent(m[2]!),
    pod: decodeURIComponent(m[3]!),
    container: decodeURIComponent(m[4]!),
  };
}

function textError(res: ServerResponse, status: number, message: string) {
  if (res.headersSent) return void res.end();
  res
    .writeHead(status, { "content-type": "text/plain; charset=utf-8" })
    .end(message.endsWith("\n") ? message : `${message}\n`);
}

function rejectUpgrade(socket: Duplex, status: number, reason: string, message: string) {
  // The answer is final: once it is out, the connection goes (a peer may keep it open otherwise).
  socket.once("finish", () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(message) + 1}\r\nconnection: close\r\n\r\n${message}\n`,
  );
}

const unauthorizedMessage = (socket: TLSSocket) =>
  `a client certificate signed by the cluster CA is required (the API server's --kubelet-client-certificate)` +
  (socket.authorizationError ? `; the TLS layer said: ${socket.authorizationError}` : "");

export async function createKubeletApi(options: KubeletApiOptions): Promise<KubeletApi> {
  if (!options.auth?.clientCA)
    throw new KubeletApiError(
      0,
      "kubelet API: auth.clientCA is required: pass the PEM of the CA that signs the API server's kubelet client certificate",
    );
  if (!options.tls?.cert || !options.tls?.key)
    throw new KubeletApiError(0, "kubelet API: tls.cert and tls.key (PEM) are required");
  const log = (options.logger ?? silentLogger).child({ component: "kubelet-api" });
  const stats = { requests: 0, unauthorized: 0, logs: 0, execs: 0, portForwards: 0 };
  // Upgraded sockets leave the HTTP server's bookkeeping: close() must end them itself.
  const upgraded = new Set<Duplex>();

  async function resolve(route: Route): Promise<RemotePodRef> {
    const target = await options.resolvePod(route.namespace, route.pod);
    if (!target) {
      throw new KubeletApiError(
        404,
        `pod ${route.namespace}/${route.pod} is not running on this virtual node ` +
          `(it has no remote counterpart); check that the pod is bound to this node and has been offloaded`,
      );
    }
    return target;
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse) {
    stats.requests++;
    const socket = req.socket as TLSSocket;
    if (!socket.authorized) {
      stats.unauthorized++;
      return textError(res, 401, unauthorizedMessage(socket));
    }
    const url = new URL(req.url ?? "/", "https://kubelet");
    try {
      if (url.pathname === "/healthz") return void res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      if (url.pathname === "/stats/summary" || url.pathname === "/metrics/resource") {
        return textError(
          res,
          METRICS_UNAVAILABLE_STATUS,
          metricsUnavailable(options.nodeName ?? "virtual-node", url.pathname as "/stats/summary"),
        );
      }
      const route = parseRoute(url.pathname);
      if (!route)
        return textError(
          res,
          404,
          `no such kubelet endpoint: ${req.method} ${url.pathname} (served: /containerLogs, /exec, /run, /portForward, /stats/summary, /metrics/resource, /healthz)`,
        );
      if (route.kind === "exec")
        return textError(
          res,
          400,
          `exec needs a streaming upgrade (SPDY/3.1, protocol ${EXEC_PROTOCOL}); use kubectl exec`,
        );
      if (route.kind === "portForward")
        return textError(
          res,
          400,
          `portForward needs a streaming upgrade (SPDY/3.1, protocol ${PORTFORWARD_PROTOCOL}); use kubectl port-forward`,
        );
      const target = await resolve(route);
      if (route.kind === "logs") {
        if (req.method !== "GET") return textError(res, 405, "containerLogs answers GET only");
        const bad = validateLogQuery(url.searchParams);
        if (bad) return textError(res, 400, bad);
        stats.logs++;
        // No timeout on a log stream: follow mode may stay quiet for hours.
        req.setTimeout?.(0);
        return await serveContainerLogs(req, res, options.remote, target, route.container, url.searchParams, log);
      }
      if (req.method !== "POST") return textError(res, 405, "run answers POST only");
      return await serveRun(res, options.remote, target, route.container, url.searchParams);
    } catch (err) {
      if (err instanceof KubeletApiError) return textError(res, err.status, err.message);
      log.error("kubelet API request failed", { err, path: url.pathname });
      return textError(res, 500, `internal error: ${(err as Error).message}`);
    }
  }

  async function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    stats.requests++;
    upgraded.add(socket);
    socket.once("close", () => upgraded.delete(socket));
    const tlsSocket = socket as TLSSocket;
    if (!tlsSocket.authorized) {
      stats.unauthorized++;
      return rejectUpgrade(socket, 401, "Unauthorized", unauthorizedMessage(tlsSocket));
    }
    const url = new URL(req.url ?? "/", "https://kubelet");
    const route = parseRoute(url.pathname);
    if (!route || (route.kind !== "exec" && route.kind !== "portForward")) {
      return rejectUpgrade(
        socket,
        404,
        "Not Found",
        `no streaming endpoint at ${url.pathname}; only /exec/{namespace}/{pod}/{container} and /portForward/{namespace}/{pod} upgrade`,
      );
    }
    if (String(req.headers.upgrade ?? "").toLowerCase() !== "spdy/3.1") {
      return rejectUpgrade(
        socket,
        400,
        "Bad Request",
        `${route.kind} upgrades to SPDY/3.1 only, not "${req.headers.upgrade}"`,
      );
    }
    const portForward = route.kind === "portForward";
    const protocol = portForward ? PORTFORWARD_PROTOCOL : EXEC_PROTOCOL;
    const offered = String(req.headers["x-stream-protocol-version"] ?? "")
      .split(",")
      .map((s) => s.trim());
    if (!offered.includes(protocol)) {
      return rejectUpgrade(
        socket,
        403,
        "Forbidden",
        `none of the offered stream protocols (${req.headers["x-stream-protocol-version"] ?? "none"}) is supported; ${portForward ? "port-forward" : "this kubelet"} speaks ${protocol}`,
      );
    }
    const exec = portForward ? undefined : execRequestFromQuery(route.container, url.searchParams);
    if (exec && !exec.command.length)
      return rejectUpgrade(socket, 400, "Bad Request", "exec needs a command (command=...)");
    let target: RemotePodRef;
    try {
      target = await resolve(route);
    } catch (err) {
      const e = err as KubeletApiError;
      return rejectUpgrade(
        socket,
        e.status || 500,
        e.status === 404 ? "Not Found" : "Internal Server Error",
        e.message,
      );
    }
    const podLog = log.child({ pod: keyOf(route.namespace, route.pod) });
    if (!exec) {
      stats.portForwards++;
      return servePortForwardUpgrade(socket, head, options.remote, target, podLog);
    }
    stats.execs++;
    serveExecUpgrade(socket, head, options.remote, target, exec, podLog);
  }

  const server = https.createServer(
    {
      cert: options.tls.cert,
      key: options.tls.key,
      ca: options.auth.clientCA,
      // Ask for a certificate but let unauthenticated callers in, so they get a 401 that says why
      // instead of an opaque TLS alert.
      requestCert: true,
      rejectUnauthorized: false,
    },
    (req, res) => void onRequest(req, res),
  );
  server.on("upgrade", (req, socket, head) => void onUpgrade(req, socket, head));
  // Every connection, so close() can end long log streams and idle keep-alives at once.
  const connections = new Set<Duplex>();
  server.on("secureConnection", (socket: Duplex) => {
    connections.add(socket);
    socket.once("close", () => connections.delete(socket));
  });
  // Log streams and exec sessions stay open as long as the user wants.
  server.timeout = 0;
  server.requestTimeout = 0;
  server.keepAliveTimeout = 60_000;

  const host = options.host ?? "0.0.0.0";
  await new Promise<void>((resolveListen, rejectListen) => {
    server.once("error", (err) =>
      rejectListen(new KubeletApiError(0, `kubelet API cannot listen on ${host}:${options.port ?? 0}: ${err.message}`)),
    );
    server.listen(options.port ?? 0, host, () => resolveListen());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : (options.port ?? 0);
  log.info("kubelet API listening", { host, port });
  return {
    port,
    url: `https://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`,
    stats,
    close: () =>
      new Promise<void>((done) => {
        for (const s of [...upgraded, ...connections]) s.destroy();
        server.closeAllConnections?.();
        server.close(() => done());
      }),
  };
}
