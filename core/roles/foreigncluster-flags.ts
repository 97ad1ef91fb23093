// The `liqo controller-manager` flags and wiring of the ForeignCluster controller (consumer side of
// peering), kept apart so the role file stays a list of controllers.
//
// In-process virtual kubelets serve the kubelet API on --kubelet-address, each on a free port, with
// one serving certificate for that address (the API server does not check kubelet serving
// certificates unless --kubelet-certificate-authority is set; when it is, sign this one with that CA).
import { existsSync, readFileSync } from "node:fs";
import { CliError } from "../cli-errors.ts";
import type { KubeClient } from "../kube/client.ts";
import type { Logger } from "../log.ts";
import type { Registry } from "../metrics/index.ts";
import { createForeignClusterController } from "../peering/foreigncluster/index.ts";
import { readClusterIdentity } from "../peering/identity.ts";
import { createCrdReplicator } from "../peering/replicator/index.ts";
import { apiServerAddress } from "../virtualkubelet/pods/forge.ts";

export const foreignClusterArgs = {
  "liqo-namespace": {
    type: "string",
    default: "liqo",
    description: "namespace of the cluster identity, auth tokens and peering Secrets",
  },
  "auth-url": {
    type: "string",
    description: "this cluster's authentication service URL, told to providers (foreigncluster)",
  },
  "kubelet-address": {
    type: "string",
    default: "127.0.0.1",
    description: "address the API server reaches in-process virtual kubelets on (foreigncluster)",
  },
  "kubelet-cert-file": {
    type: "string",
    description: "serving certificate of the virtual kubelets' API for that address (PEM)",
  },
  "kubelet-key-file": { type: "string", description: "its key (PEM)" },
  "kubelet-client-ca-file": {
    type: "string",
    description: "CA of this cluster: the API server's kubelet client certificate must be signed by it",
  },
  "api-server-url": {
    type: "string",
    description:
      "https URL peers' pods reach this cluster's API server at: offloaded pods that mount a ServiceAccount token talk to it (default: none, they mount no token)",
  },
} as const;

type Args = { [K in keyof typeof foreignClusterArgs]?: string } & { "cluster-id": string; "cluster-name": string };

function pem(path: string | undefined, flag: string): string | undefined {
  if (path === undefined) return undefined;
  if (!existsSync(path)) throw new CliError(`--${flag} ${path} does not exist`);
  return readFileSync(path, "utf8");
}

export async function foreignClusterController(
  args: Args,
  o: {
    client: KubeClient;
    registry: Registry;
    logger: Logger;
    virtualStorageClass?: string;
    /** --cluster-labels; without it, the labels kept with the cluster identity. */
    clusterLabels?: Record<string, string>;
    /** Service continuity: the threshold, and the tunnels' state (the servicecontinuity controller). */
    continuity?: { thresholdMs: number; tunnelUnreachableSince?: (remoteClusterId: string) => number | undefined };
  },
) {
  const files = [
    ["kubelet-cert-file", args["kubelet-cert-file"]],
    ["kubelet-key-file", args["kubelet-key-file"]],
    ["kubelet-client-ca-file", args["kubelet-client-ca-file"]],
  ] as const;
  const given = files.filter(([, v]) => v !== undefined);
  if (given.length && given.length !== files.length) {
    throw new CliError(
      `--kubelet-cert-file, --kubelet-key-file and --kubelet-client-ca-file go together; missing ${files
        .filter(([, v]) => v === undefined)
        .map(([f]) => `--${f}`)
        .join(", ")}`,
    );
  }
  if (args["auth-url"] !== undefined && !/^https:\/\/[^/\s]+/.test(args["auth-url"]))
    throw new CliError(`--auth-url must be an https:// URL, got ${args["auth-url"]}`);
  const apiServerUrl = args["api-server-url"];
  if (apiServerUrl !== undefined && !apiServerAddress(apiServerUrl))
    throw new CliError(`--api-server-url must be an https:// URL, got ${apiServerUrl}`);
  const cert = pem(args["kubelet-cert-file"], "kubelet-cert-file");
  const key = pem(args["kubelet-key-file"], "kubelet-key-file");
  const clientCA = pem(args["kubelet-client-ca-file"], "kubelet-client-ca-file");
  const liqoNamespace = args["liqo-namespace"] ?? "liqo";
  const identity = await readClusterIdentity(o.client, liqoNamespace).catch(() => undefined);
  return createForeignClusterController({
    client: o.client,
    liqoNamespace,
    registry: o.registry,
    logger: o.logger,
    localCluster: {
      clusterId: args["cluster-id"],
      clusterName: args["cluster-name"],
      clusterLabels: o.clusterLabels ?? identity?.clusterLabels,
    },
    authUrl: args["auth-url"],
    continuity: o.continuity,
    kubelet:
      cert && key && clientCA
        ? {
            host: args["kubelet-address"] ?? "127.0.0.1",
            tls: { cert, key },
            clientCA,
            apiServerUrl,
            virtualStorageClass: o.virtualStorageClass,
          }
        : undefined,
    replicator: (r) => {
      const replicator = createCrdReplicator(r);
      // start() waits for both clusters' caches; the peering must not block on a slow remote.
      return {
        start: () => {
          replicator
            .start()
            .catch((err) =>
              o.logger.warn("CRD replicator failed to start", { err, remoteClusterId: r.remoteClusterId }),
            );
        },
        stop: () => replicator.stop(),
      };
    },
  });
}
