// `liqo auth`: the authentication service (Liqo's liqo-auth). On start it makes sure the cluster
// identity and the auth token exist, then serves /ids and /identity over HTTPS, and the admin
// API (/healthz, /readyz, /metrics) on a separate address.
import { defineCommand } from "citty";
import { existsSync, readFileSync } from "node:fs";
import { CliError } from "../cli-errors.ts";
import { adminArgs, adminSecurity, serveAdmin } from "./shared.ts";
import { createKubeClient } from "../kube/client.ts";
import { createLogger } from "../log.ts";
import { createRegistry } from "../metrics/index.ts";
import { clusterNameProblem, ensureClusterIdentity, parseClusterLabels } from "../peering/identity.ts";
import { createAuthServer, ensureAuthToken } from "../peering/auth/index.ts";
import { recordAuthUrl } from "../peering/auth-url.ts";

export function splitAddress(flag: string, value: string): { host: string; port: number } {
  const [host, port] = value.split(/:(?=\d+$)/);
  if (!host || port === undefined || Number(port) > 65535)
    throw new CliError(`--${flag} must be host:port (port 0 picks one), got ${value}`);
  return { host: host.replace(/^\[|\]$/g, ""), port: Number(port) };
}

export default defineCommand({
  meta: {
    name: "auth",
    description:
      "Serve the authentication service: cluster identity (/ids) and peer identities for the auth token (/identity)",
  },
  args: {
    kubeconfig: {
      type: "string",
      description: "kubeconfig of the local cluster (default: KUBECONFIG, ~/.kube/config)",
    },
    context: { type: "string", description: "context in the kubeconfig" },
    "liqo-namespace": {
      type: "string",
      default: "liqo",
      description: "namespace of the cluster identity and the auth token",
    },
    "cluster-name": {
      type: "string",
      description: "this cluster's name on first install (default: generated); kept afterwards",
    },
    "cluster-labels": { type: "string", description: "labels identifying the cluster on first install, k=v,k2=v2" },
    "api-server-url": {
      type: "string",
      description: "API server URL given to peers (default: the kubeconfig's server)",
    },
    "api-server-ca-file": { type: "string", description: "CA (PEM) of that API server (default: the kubeconfig's CA)" },
    "tls-cert-file": { type: "string", required: true, description: "serving certificate (PEM)" },
    "tls-key-file": { type: "string", required: true, description: "serving key (PEM)" },
    address: { type: "string", default: "0.0.0.0:8443", description: "host:port of the auth service" },
    "advertise-url": {
      type: "string",
      description:
        "the URL peers reach this service at, recorded for liqoctl generate peer-command (default https://<address>, unless it is 0.0.0.0)",
    },
    ...adminArgs("127.0.0.1:8091"),
  },
  async run({ args }) {
    for (const f of [args["tls-cert-file"], args["tls-key-file"], args["api-server-ca-file"]].filter(
      Boolean,
    ) as string[]) {
      if (!existsSync(f)) throw new CliError(`${f} does not exist`);
    }
    const listen = splitAddress("address", args.address);
    adminSecurity(args); // bad admin flags fail before anything starts
    if (args["cluster-name"] !== undefined) {
      const problem = clusterNameProblem(args["cluster-name"]);
      if (problem) throw new CliError(`--cluster-name: ${problem}`);
    }
    let clusterLabels: Record<string, string> | undefined;
    try {
      clusterLabels = args["cluster-labels"] === undefined ? undefined : parseClusterLabels(args["cluster-labels"]);
    } catch (err) {
      throw new CliError(`--cluster-labels: ${(err as Error).message}`);
    }
    if (args["api-server-url"] !== undefined && !/^https:\/\/[^/\s]+/.test(args["api-server-url"])) {
      throw new CliError(`--api-server-url must be an https:// URL, got ${args["api-server-url"]}`);
    }

    const log = createLogger({ role: "auth" });
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const liqoNamespace = args["liqo-namespace"];
    const clusterIdentity = await ensureClusterIdentity(client, {
      liqoNamespace,
      clusterName: args["cluster-name"],
      clusterLabels,
      logger: log,
    });
    await ensureAuthToken(client, { liqoNamespace });

    const kubeCluster = client.kc.getCurrentCluster()!;
    const apiServerCa = args["api-server-ca-file"]
      ? readFileSync(args["api-server-ca-file"], "utf8")
      : kubeCluster.caData
        ? Buffer.from(kubeCluster.caData, "base64").toString("utf8")
        : kubeCluster.caFile
          ? readFileSync(kubeCluster.caFile, "utf8")
          : undefined;
    const registry = createRegistry();
    const auth = await createAuthServer({
      client,
      liqoNamespace,
      clusterIdentity,
      registry,
      logger: log,
      apiServerUrl: args["api-server-url"] ?? client.server,
      apiServerCa,
      tls: { cert: args["tls-cert-file"], key: args["tls-key-file"] },
      host: listen.host,
      port: listen.port,
    });
    const advertised =
      args["advertise-url"] ??
      (listen.host === "0.0.0.0" || listen.host === "::" ? undefined : `https://${listen.host}:${auth.port}`);
    if (advertised) await recordAuthUrl(client, liqoNamespace, advertised);
    const adminServer = await serveAdmin({
      args,
      registry,
      logger: log,
      client,
      title: `liqo auth: ${clusterIdentity.clusterName} (${clusterIdentity.clusterId})`,
      checks: {
        "twin-binder-synced": () =>
          auth.ready || { ok: false, reason: "the twin-namespace binder is still listing namespaces" },
      },
    });
    console.log(
      `auth service on ${auth.url} (cluster ${clusterIdentity.clusterName}, ID ${clusterIdentity.clusterId}); admin API on ${adminServer.url}`,
    );

    await new Promise<void>((resolve) => {
      for (const s of ["SIGINT", "SIGTERM"] as const) process.once(s, () => resolve());
    });
    log.info("stopping");
    await adminServer.stop();
    await auth.stop();
  },
});
