// `liqo proxy`: the in-band proxy (Liqo's liqo-proxy). It runs as a pod of the cluster's pod
// network, so a peer reaches it through the WireGuard tunnel at its remapped pod address, and it
// exposes nothing but two destinations: an HTTP CONNECT proxy (port "http") that only opens tunnels
// to the API server and the authentication service (the client's TLS runs end to end inside), and
// a plain TCP forwarder (port "auth") to the authentication service, for clients that cannot speak
// CONNECT (a peer's first /ids request). Serves the shared admin API: readiness and connection metrics.
import { defineCommand } from "citty";
import { adminArgs, adminSecurity, hostPort, serveAdmin, untilSignal } from "./shared.ts";
import { CliError } from "../cli-errors.ts";
import { createLogger } from "../log.ts";
import { createRegistry } from "../metrics/index.ts";
import { startConnectProxy, startForwarder } from "../../netfabric/inband/proxy.ts";

/** host:port,host:port → list; hosts compared case-insensitively, IPv6 without brackets. */
export function destinations(value: string, flag: string): { host: string; port: number }[] {
  const list = value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((v) => {
      const { host, port } = hostPort(v, flag);
      if (port < 1) throw new CliError(`--${flag}: port 0 is not a destination, got ${v}`);
      return { host: host.toLowerCase(), port };
    });
  if (list.length === 0) throw new CliError(`--${flag} needs at least one host:port`);
  return list;
}

/** The API server in a pod (the Service kubernetes.default the kubelet exports), unless given. */
function apiServerDefault(): string | undefined {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  return host && port ? `${host.includes(":") ? `[${host}]` : host}:${port}` : undefined;
}

export default defineCommand({
  meta: {
    name: "proxy",
    description:
      "in-band proxy: HTTP CONNECT to the API server and the auth service only, and a TCP forwarder to the auth service",
  },
  args: {
    listen: {
      type: "string",
      default: "0.0.0.0:8118",
      description: 'host:port of the HTTP CONNECT proxy (Service port "http")',
    },
    "auth-listen": {
      type: "string",
      default: "0.0.0.0:8443",
      description: 'host:port of the TCP forwarder to the auth service (Service port "auth")',
    },
    "api-server": {
      type: "string",
      description:
        "host:port[,host:port] the API server is reached at (every name peers' kubeconfigs use); default $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT",
    },
    "auth-service": {
      type: "string",
      required: true,
      description: "host:port of the liqo auth service, e.g. liqo-auth.liqo.svc:443",
    },
    ...adminArgs("127.0.0.1:8095"),
  },
  async run({ args }) {
    const log = createLogger({ role: "proxy" });
    adminSecurity(args);
    const apiValue = args["api-server"] ?? apiServerDefault();
    if (!apiValue)
      throw new CliError(
        "--api-server is required outside a pod (KUBERNETES_SERVICE_HOST is not set): pass the API server's host:port",
      );
    const api = destinations(apiValue, "api-server");
    const [auth] = destinations(args["auth-service"], "auth-service");
    const listen = hostPort(args.listen, "listen");
    const authListen = hostPort(args["auth-listen"], "auth-listen");
    const allowed = [...api, auth!];

    const registry = createRegistry();
    const connections = registry.counter({
      name: "liqo_proxy_connections_total",
      help: "Connections by listener and outcome.",
      labelNames: ["listener", "outcome"] as const,
    });
    const allow = (host: string, port: number) => {
      const ok = allowed.some((d) => d.host === host.toLowerCase() && d.port === port);
      if (!ok) {
        connections.inc({ listener: "http", outcome: "forbidden" });
        log.warn("CONNECT refused: only the API server and the auth service are reachable through this proxy", {
          destination: `${host}:${port}`,
        });
      }
      return ok;
    };
    let proxy, forwarder;
    try {
      proxy = startConnectProxy({
        listen: { hostname: listen.host, port: listen.port },
        allow,
        onConnection: () => connections.inc({ listener: "http", outcome: "opened" }),
      });
      forwarder = startForwarder({
        listen: { hostname: authListen.host, port: authListen.port },
        to: { hostname: auth!.host, port: auth!.port },
        onConnection: () => connections.inc({ listener: "auth", outcome: "opened" }),
      });
    } catch (err) {
      proxy?.stop(true);
      throw new CliError(`cannot listen: ${(err as Error).message}; check --listen and --auth-listen`);
    }
    const server = await serveAdmin({
      args,
      registry,
      logger: log,
      title: "liqo proxy",
      checks: { listening: () => true },
    });
    log.info("proxy running", {
      http: `${listen.host}:${proxy.port}`,
      auth: `${authListen.host}:${forwarder.port}`,
      destinations: allowed.map((d) => `${d.host}:${d.port}`),
    });
    console.log(`proxy on ${listen.host}:${proxy.port}, auth forwarder on ${authListen.host}:${forwarder.port}`);
    console.log(`admin API on ${server.url}`);
    await untilSignal();
    log.info("stopping");
    proxy.stop(true);
    forwarder.stop(true);
    await server.stop();
  },
});
