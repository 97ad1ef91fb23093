// What every role command shares: flags parsing helpers, the admin server (its flags, auth, TLS,
// readiness and the cluster views), waiting for a signal.
import { existsSync, readFileSync, watch, type FSWatcher } from "node:fs";
import { CliError } from "../cli-errors.ts";
import { parseThreshold } from "../continuity/threshold.ts";
import {
  AdminConfigError,
  createAdminApp,
  createHealthApp,
  createReadiness,
  isLoopbackHost,
  startAdminServer,
  type AdminAuthOptions,
  type AdminExtension,
  type AdminServer,
  type AdminTlsOptions,
  type AdminToken,
  type Readiness,
  type ReadinessCheck,
  type View,
} from "../admin/index.ts";
import { createMetricsApp, kubeMetricsAuthorizer } from "../admin/secure-metrics.ts";
import { createKubeClient, type KubeClient } from "../kube/client.ts";
import type { Logger } from "../log.ts";
import type { Registry } from "../metrics/index.ts";
import { clusterViews } from "./admin-views-cluster.ts";

/** --service-continuity-threshold, checked before anything starts. */
export function continuityThresholdFlag(text: string): number {
  try {
    return parseThreshold(text, "--service-continuity-threshold");
  } catch (err) {
    throw new CliError((err as Error).message);
  }
}

/** host:port (an IPv6 host in brackets) into the host to bind or dial, brackets off, and the port. */
export function hostPort(value: string, flag: string): { host: string; port: number } {
  const m = /^(.+):(\d+)$/.exec(value);
  if (!m || Number(m[2]) > 65535) throw new CliError(`--${flag} must be host:port, got ${value}`);
  return { host: m[1]!.replace(/^\[|\]$/g, ""), port: Number(m[2]) };
}

/** k=v,k2=v2 (cluster labels, resources) into a map; an empty string is an empty map. */
export function keyValues(value: string | undefined, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = part.indexOf("=");
    if (eq <= 0) throw new CliError(`--${flag}: "${part}" is not key=value`);
    out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

/**
 * The admin flags every role takes; spread into a command's args: `args: { ...adminArgs("127.0.0.1:8081"), ... }`.
 * Loopback needs nothing; any other address needs TLS and a credential (see serveAdmin).
 */
export function adminArgs(defaultAddress: string) {
  return {
    "admin-address": {
      type: "string",
      default: defaultAddress,
      description:
        "host:port of the admin API (port 0 picks one); beyond loopback it needs --admin-tls-* and a token or client CA",
    },
    "admin-token-file": {
      type: "string",
      description: "file holding the admin API's write token (16+ printable characters); turns token auth on",
    },
    "admin-read-token-file": {
      type: "string",
      description: "file holding a read-only admin token (GET/HEAD only: scrapers, status page)",
    },
    "admin-tls-cert-file": {
      type: "string",
      description: "serving certificate of the admin API (PEM); with --admin-tls-key-file it serves HTTPS",
    },
    "admin-tls-key-file": { type: "string", description: "key of --admin-tls-cert-file (PEM)" },
    "admin-client-ca-file": {
      type: "string",
      description:
        "CA (PEM) whose client certificates are accepted instead of tokens (O=liqo-admin:write for write access)",
    },
    "health-address": {
      type: "string",
      description:
        "host:port of a plain-HTTP listener serving only /healthz and /readyz, for the kubelet's httpGet probes (off when not given)",
    },
    "metrics-address": {
      type: "string",
      description:
        "host:port of an HTTPS listener serving only GET /metrics to callers the API server authenticates and authorizes (TokenReview, then SubjectAccessReview of get /metrics); needs --metrics-tls-cert-file and --metrics-tls-key-file (off when not given)",
    },
    "metrics-tls-cert-file": { type: "string", description: "serving certificate of --metrics-address (PEM)" },
    "metrics-tls-key-file": { type: "string", description: "key of --metrics-tls-cert-file (PEM)" },
  } as const;
}

/** The parsed admin flags (what citty gives for adminArgs). */
export interface AdminFlags {
  "admin-address": string;
  "admin-token-file"?: string;
  "admin-read-token-file"?: string;
  "admin-tls-cert-file"?: string;
  "admin-tls-key-file"?: string;
  "admin-client-ca-file"?: string;
  "health-address"?: string;
  "metrics-address"?: string;
  "metrics-tls-cert-file"?: string;
  "metrics-tls-key-file"?: string;
}

const CREDENTIAL_FLAGS = "--admin-token-file, --admin-read-token-file or --admin-client-ca-file";

function readFlagFile(path: string, flag: string): string {
  if (!existsSync(path)) throw new CliError(`--${flag} ${path} does not exist`);
  return readFileSync(path, "utf8");
}

function readToken(path: string, flag: string): string {
  const token = readFlagFile(path, flag).trim();
  if (token.length < 16 || !/^[\x21-\x7e]+$/.test(token)) {
    throw new CliError(
      `--${flag} ${path}: the token must be at least 16 printable characters without spaces; make one with: openssl rand -hex 32 > ${path}`,
    );
  }
  return token;
}

/** Flags → the server's TLS and auth; refuses an address beyond loopback without TLS and a credential. */
export function adminSecurity(flags: AdminFlags): {
  host: string;
  port: number;
  tls?: AdminTlsOptions;
  auth?: AdminAuthOptions;
} {
  const { host, port } = hostPort(flags["admin-address"], "admin-address");
  const certFile = flags["admin-tls-cert-file"];
  const keyFile = flags["admin-tls-key-file"];
  if (Boolean(certFile) !== Boolean(keyFile))
    throw new CliError("--admin-tls-cert-file and --admin-tls-key-file go together: give both or neither");
  const caFile = flags["admin-client-ca-file"];
  if (caFile && !certFile)
    throw new CliError("--admin-client-ca-file needs HTTPS: give --admin-tls-cert-file and --admin-tls-key-file too");
  const tokens: AdminToken[] = [];
  if (flags["admin-token-file"])
    tokens.push({
      token: readToken(flags["admin-token-file"], "admin-token-file"),
      role: "write",
      name: "admin-token-file",
    });
  if (flags["admin-read-token-file"])
    tokens.push({
      token: readToken(flags["admin-read-token-file"], "admin-read-token-file"),
      role: "read-only",
      name: "admin-read-token-file",
    });
  if (tokens.length === 2 && tokens[0]!.token === tokens[1]!.token)
    throw new CliError("--admin-token-file and --admin-read-token-file hold the same token; use two different tokens");
  if (!isLoopbackHost(host) && (!certFile || (!tokens.length && !caFile))) {
    throw new CliError(
      `refusing to serve the admin API on ${flags["admin-address"]} beyond loopback ` +
        `${!certFile ? "without TLS (--admin-tls-cert-file and --admin-tls-key-file)" : ""}${!certFile && !tokens.length && !caFile ? " and " : ""}` +
        `${!tokens.length && !caFile ? `without a credential (${CREDENTIAL_FLAGS})` : ""}; give them, or bind 127.0.0.1`,
    );
  }
  const tls =
    certFile && keyFile
      ? {
          cert: readFlagFile(certFile, "admin-tls-cert-file"),
          key: readFlagFile(keyFile, "admin-tls-key-file"),
          clientCa: caFile ? readFlagFile(caFile, "admin-client-ca-file") : undefined,
        }
      : undefined;
  const auth = tokens.length || caFile ? { tokens, clientCertificates: Boolean(caFile) } : undefined;
  return { host, port, tls, auth };
}

export interface ServeAdminOptions {
  /** The role's parsed adminArgs flags. */
  args?: AdminFlags;
  /** Just an address (loopback, no auth): for callers that have not moved to `args`. */
  address?: string;
  registry: Registry;
  logger: Logger;
  /** Status page title (default "liqo"). */
  title?: string;
  views?: Record<string, View>;
  extensions?: AdminExtension[];
  /** Readiness checks, e.g. "caches-synced"; more can be added later on the returned readiness. */
  checks?: Record<string, ReadinessCheck>;
  /** Readiness of a role that holds a Lease: fails while another replica leads. */
  leader?: ReadinessCheck;
  /** The role's cluster: adds the peerings, virtual-nodes, offloaded-namespaces, ipam and tunnels views (except names the role offers itself). */
  client?: KubeClient;
}

/** The admin server, its readiness, and the probe and metrics listeners when their flags are given. */
export type ServedAdmin = AdminServer & { readiness: Readiness; health?: AdminServer; metrics?: AdminServer };

export async function serveAdmin(o: ServeAdminOptions): Promise<ServedAdmin> {
  const flags = o.args ?? { "admin-address": o.address ?? "127.0.0.1:0" };
  const security = adminSecurity(flags);
  const metrics = metricsListener(flags);
  const health = flags["health-address"] ? hostPort(flags["health-address"], "health-address") : undefined;
  const readiness = createReadiness({ logger: o.logger });
  for (const [name, check] of Object.entries(o.checks ?? {})) readiness.add(name, check);
  if (o.leader) readiness.add("leader", o.leader);
  const own = [...Object.keys(o.views ?? {}), ...(o.extensions ?? []).flatMap((e) => Object.keys(e.views ?? {}))];
  const extensions = [...(o.extensions ?? [])];
  if (o.client) extensions.push(clusterViews(o.client, { exclude: own }));
  const servers: AdminServer[] = [];
  try {
    const app = createAdminApp({
      registry: o.registry,
      readiness,
      logger: o.logger,
      views: o.views,
      extensions,
      auth: security.auth,
      statusPage: { title: o.title ?? "liqo" },
    });
    const server = await startAdminServer({
      app,
      host: security.host,
      port: security.port,
      tls: security.tls,
      logger: o.logger,
    });
    servers.push(server);
    let healthServer: AdminServer | undefined;
    let metricsServer: AdminServer | undefined;
    if (health) {
      // Probes carry no credential and need none: this app answers nothing but health and readiness.
      const app = createHealthApp({ readiness, logger: o.logger });
      healthServer = await startAdminServer({
        app,
        host: health.host,
        port: health.port,
        allowAnonymous: true,
        logger: o.logger,
      });
      servers.push(healthServer);
    }
    if (metrics) {
      const authorizer = kubeMetricsAuthorizer(o.client ?? createKubeClient({}));
      const app = createMetricsApp({ registry: o.registry, authorizer, logger: o.logger });
      // The app checks every request's token with the API server; the server's own auth layer stays off.
      metricsServer = await startAdminServer({
        app,
        host: metrics.host,
        port: metrics.port,
        tls: metrics.tls,
        allowAnonymous: true,
        logger: o.logger,
      });
      servers.push(metricsServer);
    }
    const stops = servers.map((s) => s.stop);
    return Object.assign(server, {
      readiness,
      health: healthServer,
      metrics: metricsServer,
      stop: async () => {
        await Promise.all(stops.map((stop) => stop()));
      },
    });
  } catch (err) {
    await Promise.all(servers.map((s) => s.stop().catch(() => {})));
    if (err instanceof AdminConfigError) throw new CliError(`admin API: ${err.message}`, undefined, { cause: err });
    throw err;
  }
}

/** The --metrics-* flags: an address and its certificate, or nothing; one without the other is refused. */
export function metricsListener(
  flags: AdminFlags,
): { host: string; port: number; tls: { cert: string; key: string } } | undefined {
  const certFile = flags["metrics-tls-cert-file"];
  const keyFile = flags["metrics-tls-key-file"];
  if (!flags["metrics-address"]) {
    if (certFile || keyFile)
      throw new CliError("--metrics-tls-cert-file and --metrics-tls-key-file need --metrics-address");
    return undefined;
  }
  const { host, port } = hostPort(flags["metrics-address"], "metrics-address");
  if (!certFile || !keyFile)
    throw new CliError(
      `--metrics-address ${flags["metrics-address"]} serves HTTPS only (tokens travel in it): give --metrics-tls-cert-file and --metrics-tls-key-file`,
    );
  return {
    host,
    port,
    tls: {
      cert: readFlagFile(certFile, "metrics-tls-cert-file"),
      key: readFlagFile(keyFile, "metrics-tls-key-file"),
    },
  };
}

export function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    for (const s of ["SIGINT", "SIGTERM"] as const) process.once(s, () => resolve());
  });
}

/**
 * Calls `onChange` with a config file's text whenever it changes. Editors and `kubectl cp` write in
 * steps, so a change is read once the file settles; a periodic re-read catches what a watch misses
 * (a ConfigMap volume swaps a symlink). Returns a function that stops watching.
 */
export function watchConfigFile(path: string, onChange: (text: string) => void, intervalMs = 5000): () => void {
  let last = readFileSync(path, "utf8");
  let settle: ReturnType<typeof setTimeout> | undefined;
  const reload = () => {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch {
      return;
    }
    if (text === last) return;
    last = text;
    onChange(text);
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(path, () => {
      clearTimeout(settle);
      settle = setTimeout(reload, 200);
    });
  } catch {
    /* the periodic re-read still works */
  }
  const timer = setInterval(reload, intervalMs);
  return () => {
    clearTimeout(settle);
    clearInterval(timer);
    watcher?.close();
  };
}
