// `liqo controller-manager`: the cluster-wide controllers of liqo: peering (foreigncluster on the
// consumer, with its in-process virtual kubelets; resourcerequest on the provider), namespace
// offloading (consumer side) and ShadowPods (provider side), optionally behind leader election.
import { defineCommand } from "citty";
import { CliError } from "../cli-errors.ts";
import { createKubeClient } from "../kube/client.ts";
import { createLogger } from "../log.ts";
import { createRegistry, registerProcessMetrics } from "../metrics/index.ts";
import { createMcsController, isPeerPolicy, PEER_POLICIES } from "../mcs/index.ts";
import { createClustersetDns, splitAddress } from "../mcs/dns/index.ts";
import { createNamespaceOffloadingController } from "../offloading/index.ts";
import { parseClusterLabels } from "../peering/identity.ts";
import { createShadowPodController, POD_SECURITY_LEVELS, type PodSecurityLevel } from "../shadowpod/controller.ts";
import { parseDefaultRequests, QUOTA_MODES, type QuotaMode } from "../shadowpod/quota.ts";
import { foreignClusterArgs, foreignClusterController } from "./foreigncluster-flags.ts";
import { resourceRequestArgs, resourceRequestController, sharingPercentageFlag } from "./resourcerequest-flags.ts";
import { discoveryArgs, discoveryController, discoveryTtl, searchDomainController } from "./discovery-flags.ts";
import { storageArgs, storageConfig, storageController } from "./storage-flags.ts";
import { electLeader, leaderElectionArgs, leaderElectionConfig } from "./leader-flags.ts";
import { adminArgs, adminSecurity, continuityThresholdFlag, serveAdmin, untilSignal } from "./shared.ts";
import { createContinuityController } from "../continuity/controller.ts";
import { DEFAULT_CONTINUITY_THRESHOLD_MS } from "../continuity/threshold.ts";

/** Every controller, in start order; the default, as Liqo's controller manager runs them all. */
export const CONTROLLERS = [
  "namespaceoffloading",
  "shadowpod",
  "resourcerequest",
  "foreigncluster",
  "mcs",
  "servicecontinuity",
] as const;
/** Run only when asked for: discovery needs the node's network (mDNS), so the chart runs it apart. */
export const OPTIONAL_CONTROLLERS = ["discovery", "searchdomain"] as const;

/** --cluster-labels, checked before anything starts; undefined when not given (the identity's are used). */
export function clusterLabelsFlag(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined) return undefined;
  try {
    return parseClusterLabels(text);
  } catch (err) {
    throw new CliError(`--cluster-labels: ${(err as Error).message}`);
  }
}

/** The --controllers list, checked: a typo fails at start instead of leaving a controller out. */
export function parseControllers(text: string): string[] {
  const wanted = text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const known: readonly string[] = [...CONTROLLERS, ...OPTIONAL_CONTROLLERS];
  const unknown = wanted.filter((c) => !known.includes(c));
  if (unknown.length)
    throw new CliError(`unknown controller(s) ${unknown.join(", ")}; choose from ${known.join(", ")}`);
  if (!wanted.length) throw new CliError(`--controllers is empty; choose from ${CONTROLLERS.join(", ")}`);
  return wanted;
}

export default defineCommand({
  meta: {
    name: "controller-manager",
    description:
      "Run liqo's controllers: peering (foreigncluster, resourcerequest), namespace offloading and ShadowPods",
  },
  args: {
    kubeconfig: { type: "string", description: "kubeconfig of the cluster (default: KUBECONFIG, ~/.kube/config)" },
    context: { type: "string", description: "context in the kubeconfig" },
    "cluster-id": { type: "string", required: true, description: "this cluster's ID" },
    "cluster-name": { type: "string", required: true, description: "this cluster's name" },
    "cluster-labels": {
      type: "string",
      description:
        "labels identifying this cluster, told to peers for their virtual nodes: k=v,k2=v2, Liqo's flag (default: those kept with the cluster identity, liqo-clusterid-configmap)",
    },
    controllers: {
      type: "string",
      default: CONTROLLERS.join(","),
      description: `controllers to run, comma-separated (default: all: ${CONTROLLERS.join(", ")})`,
    },
    ...foreignClusterArgs,
    ...resourceRequestArgs,
    "peer-pod-security": {
      type: "string",
      default: "baseline",
      description:
        "Pod Security Standard the pods peers offload here must meet: baseline (no privileged containers, host namespaces, hostPath or host ports), restricted, or privileged (shadowpod)",
    },
    "peer-quota": {
      type: "string",
      default: "hard",
      description:
        "What a peer's pods may take here: hard (its ShadowPods past its offer get no pod until there is room), soft (they run, flagged with an Event), none (shadowpod)",
    },
    "peer-default-requests": {
      type: "string",
      default: "",
      description:
        "Requests written into a peer's containers that state none, so they count against its offer, e.g. cpu=100m,memory=128Mi (default: none; such pods count as the scheduler counts them) (shadowpod)",
    },
    "mcs-peer-policy": {
      type: "string",
      default: "ExportAndImport",
      description: `what the Multi-Cluster Services API exchanges with peers whose ForeignCluster has no mcs.liqo.io/peer-policy annotation: ${PEER_POLICIES.join(", ")} (mcs)`,
    },
    "clusterset-dns-address": {
      type: "string",
      default: "",
      description:
        "host:port to answer DNS queries for the clusterset.local zone on (UDP and TCP), e.g. 0.0.0.0:5353; served by every replica, leader or not (default: off)",
    },
    "service-continuity-threshold": {
      type: "string",
      default: `${DEFAULT_CONTINUITY_THRESHOLD_MS / 1000}s`,
      description:
        "how long a peer may be unreachable before its endpoints are marked not ready: offloaded pods here (foreigncluster), the endpoints a consumer reflected here (servicecontinuity), the endpoints imported from an exporting peer (mcs); e.g. 15s, 1m",
    },
    ...storageArgs,
    ...discoveryArgs,
    ...leaderElectionArgs,
    ...adminArgs("127.0.0.1:8081"),
  },
  async run({ args }) {
    const wanted = parseControllers(args.controllers);
    adminSecurity(args); // bad admin flags fail before anything starts
    const podSecurity = args["peer-pod-security"] as PodSecurityLevel;
    if (!POD_SECURITY_LEVELS.includes(podSecurity))
      throw new CliError(
        `--peer-pod-security "${args["peer-pod-security"]}" is not a Pod Security Standard; choose from ${POD_SECURITY_LEVELS.join(", ")}`,
      );
    const quota = peerQuotaFlags(args);
    const mcsPolicy = args["mcs-peer-policy"];
    if (!isPeerPolicy(mcsPolicy))
      throw new CliError(`--mcs-peer-policy "${mcsPolicy}" is not a policy; choose from ${PEER_POLICIES.join(", ")}`);
    const dnsAddress = args["clusterset-dns-address"];
    if (dnsAddress) {
      try {
        splitAddress(dnsAddress);
      } catch (err) {
        throw new CliError(`--clusterset-dns-address: ${(err as Error).message}`);
      }
    }
    if (wanted.includes("resourcerequest")) sharingPercentageFlag(args);
    const clusterLabels = clusterLabelsFlag(args["cluster-labels"]);
    if (wanted.includes("discovery")) discoveryTtl(args["discovery-ttl"]);
    const continuityThresholdMs = continuityThresholdFlag(args["service-continuity-threshold"]);
    const election = leaderElectionConfig(args);
    const storage = storageConfig(args);
    const log = createLogger({ role: "controller-manager" });
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const registry = createRegistry();
    registerProcessMetrics(registry);
    const running: { name: string; start(): Promise<void>; stop(): Promise<void> }[] = [];
    if (wanted.includes("namespaceoffloading")) {
      running.push({
        name: "namespaceoffloading",
        ...createNamespaceOffloadingController({
          client,
          localCluster: { clusterID: args["cluster-id"], clusterName: args["cluster-name"] },
          logger: log,
        }),
      });
    }
    if (wanted.includes("shadowpod"))
      running.push({
        name: "shadowpod",
        ...createShadowPodController({ client, logger: log, podSecurity, quota, registry }),
      });
    if (wanted.includes("resourcerequest"))
      running.push({
        name: "resourcerequest",
        ...(await resourceRequestController(args, { client, registry, logger: log, storage, clusterLabels })),
      });
    // Built before the ForeignCluster controller: its virtual kubelets read the tunnels' state from it.
    const continuity = wanted.includes("servicecontinuity")
      ? createContinuityController({ client, thresholdMs: continuityThresholdMs, logger: log, registry })
      : undefined;
    if (wanted.includes("foreigncluster"))
      running.push({
        name: "foreigncluster",
        ...(await foreignClusterController(args, {
          client,
          registry,
          logger: log,
          virtualStorageClass: storage?.virtualStorageClass,
          clusterLabels,
          continuity: { thresholdMs: continuityThresholdMs, tunnelUnreachableSince: continuity?.unreachableSince },
        })),
      });
    const mcs = wanted.includes("mcs")
      ? createMcsController({
          client,
          localClusterId: args["cluster-id"],
          logger: log,
          defaultPolicy: mcsPolicy,
          registry,
          continuityThresholdMs,
        })
      : undefined;
    if (mcs) running.push({ name: "mcs", start: mcs.start, stop: mcs.stop });
    if (continuity) running.push({ name: "servicecontinuity", start: continuity.start, stop: continuity.stop });
    if (wanted.includes("discovery"))
      running.push({ name: "discovery", ...discoveryController(args, { client, registry, logger: log }) });
    if (wanted.includes("searchdomain"))
      running.push({ name: "searchdomain", ...searchDomainController(args, { client, logger: log }) });
    if (storage) running.push({ name: "storage", ...storageController(storage, { client, logger: log }) });
    // Not behind leader election: every replica answers, from its own caches.
    const dns = dnsAddress ? createClustersetDns({ client, address: dnsAddress, logger: log, registry }) : undefined;
    if (dns) await dns.start();
    const started = new Set<string>();
    const startAll = async () => {
      for (const c of running) {
        await c.start(); // resolves once the controller's informers have synced
        started.add(c.name);
      }
      log.info("controller-manager running", { controllers: [...started] });
    };
    const stopAll = async () => {
      for (const c of running) if (started.delete(c.name)) await c.stop();
    };
    const leadership = election && electLeader(election, { client, logger: log, lead: startAll, stepDown: stopAll });
    // Served before the controllers start, so /readyz answers "starting" instead of nothing.
    const admin = await serveAdmin({
      args,
      registry,
      logger: log,
      client,
      title: `liqo controller-manager: ${args["cluster-name"]} (${args["cluster-id"]})`,
      views: {
        controllers: () =>
          running.map((c) => ({
            name: c.name,
            state: started.has(c.name)
              ? "running"
              : leadership && !leadership.elector.isLeader()
                ? "standby"
                : "starting",
          })),
        leader: () =>
          leadership ? { enabled: true, ...leadership.elector.status() } : { enabled: false, leader: true },
        ...(mcs ? { mcs: () => mcs.status() } : {}),
      },
      checks: {
        // A standby is ready: it is healthy, just not leading (otherwise an HA rollout never completes).
        "caches-synced": () =>
          (leadership && !leadership.elector.isLeader()) ||
          started.size === running.length || {
            ok: false,
            reason: `controllers still listing: ${running
              .filter((c) => !started.has(c.name))
              .map((c) => c.name)
              .join(", ")}`,
          },
        ...(dns ? { "clusterset-dns": dns.ready } : {}),
      },
    });
    if (leadership) leadership.elector.start();
    else await startAll();
    console.log(`admin API on ${admin.url}`);
    try {
      await (leadership ? Promise.race([untilSignal(), leadership.lost]) : untilSignal());
    } finally {
      // Releasing the Lease (stop) lets a standby take over at once instead of after its expiry.
      if (leadership) await leadership.elector.stop();
      await admin.stop();
      await stopAll();
      await dns?.stop();
    }
  },
});

/** --peer-quota and --peer-default-requests, checked before anything starts. */
export function peerQuotaFlags(args: Record<string, unknown>): {
  mode: QuotaMode;
  defaultRequests?: ReturnType<typeof parseDefaultRequests>;
} {
  const mode = args["peer-quota"] as QuotaMode;
  if (!QUOTA_MODES.includes(mode))
    throw new CliError(
      `--peer-quota "${args["peer-quota"]}" is not a quota mode; choose from ${QUOTA_MODES.join(", ")}`,
    );
  const text = String(args["peer-default-requests"] ?? "").trim();
  if (!text) return { mode };
  try {
    return { mode, defaultRequests: parseDefaultRequests(text) };
  } catch (err) {
    throw new CliError((err as Error).message);
  }
}
