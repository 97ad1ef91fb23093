// What every step of a ForeignCluster reconcile shares: the controller's configuration, the
// per-peer runtimes, and a status writer that records conditions as the reconcile goes, so that
// `liqoctl peer` can follow each phase while it happens.
import { ForeignClusterResource, type PeeringCondition } from "../../apis/index.ts";
import type { KubeClient } from "../../kube/client.ts";
import type { Logger } from "../../log.ts";
import type { Registry } from "../../metrics/index.ts";
import type { IpTranslator } from "../../reflection/abi.ts";
import type { ReflectionPolicySource } from "../../reflection/policy-watch.ts";
import type { PluginStore } from "../../reflection/store/watch.ts";
import { conditionsChanged, withCondition, type ConditionUpdate, type ForeignClusterObject } from "./conditions.ts";
import type { PeerRuntime, ReplicatorFactory } from "./runtime.ts";
import type { VirtualNodeController } from "./virtualnodes.ts";

export interface KubeletServing {
  /** The address the local API server reaches in-process virtual kubelets on; each gets a free port. */
  host: string;
  tls: { cert: string; key: string };
  /** The local cluster's CA: the API server's kubelet client certificate must be signed by it. */
  clientCA: string;
  /** The local API server as peers' pods reach it: offloaded pods talk to it (virtualkubelet/pods/forge.ts). */
  apiServerUrl?: string;
  /** With the storage fabric on: the virtual class, whose claims go to providers that offer storage. */
  virtualStorageClass?: string;
}

export interface ControllerConfig {
  client: KubeClient;
  local: { clusterId: string; clusterName: string; clusterLabels?: Record<string, string> };
  liqoNamespace: string;
  /** This cluster's authentication service URL, written into our ResourceRequests (spec.authUrl). */
  authUrl: string;
  kubelet?: KubeletServing;
  replicator?: ReplicatorFactory;
  registry?: Registry;
  logger: Logger;
  /** How long a graceful unpeer waits for the remote cluster before giving up on it (default 120s). */
  disconnectTimeoutMs: number;
  insecureAuth?: boolean;
  /**
   * The IP translation for a peer's virtual kubelet when networking is enabled. Default: a
   * translation watcher reading the peer's NetworkConfigs and NatMapping (netfabric/manager);
   * a process that runs the network manager itself passes the manager's translator, which also
   * allocates external-CIDR addresses for third-cluster endpoints.
   */
  ipTranslator?: (remoteClusterId: string) => IpTranslator;
  /** The drop-in reflector plugins installed in this cluster (core/reflection/store). */
  plugins?: PluginStore;
  /** What every virtual kubelet reflects, per kind (core/reflection/policy-watch.ts). */
  reflectionPolicy?: ReflectionPolicySource;
  /** Service continuity (core/continuity): the threshold, and when a peer's tunnel stopped answering. */
  continuity?: { thresholdMs: number; tunnelUnreachableSince?: (remoteClusterId: string) => number | undefined };
  now: () => Date;
}

export interface StatusWriter {
  set(update: ConditionUpdate): void;
  tenantNamespace(t: { local?: string; remote?: string }): void;
  /** Writes what changed since the last flush (optimistic concurrency: a conflict re-queues). */
  flush(): Promise<void>;
  readonly fc: ForeignClusterObject;
}

export function statusWriter(cfg: ControllerConfig, fc: ForeignClusterObject): StatusWriter {
  let current = fc;
  let conditions: PeeringCondition[] = [...(fc.status?.peeringConditions ?? [])];
  let tenant = { ...(fc.status?.tenantNamespace ?? {}) };
  return {
    get fc() {
      return current;
    },
    set(update) {
      conditions = withCondition(conditions, update, cfg.now());
    },
    tenantNamespace(t) {
      tenant = { ...tenant, ...t };
    },
    async flush() {
      const was = current.status?.tenantNamespace ?? {};
      const tenantChanged = (tenant.local ?? "") !== (was.local ?? "") || (tenant.remote ?? "") !== (was.remote ?? "");
      if (!tenantChanged && !conditionsChanged(current.status?.peeringConditions, conditions)) return;
      current = await cfg.client.mergePatch<ForeignClusterObject>(
        ForeignClusterResource,
        current.metadata.name!,
        undefined,
        {
          metadata: { resourceVersion: current.metadata.resourceVersion },
          status: {
            tenantNamespace: { local: tenant.local ?? "", remote: tenant.remote ?? "" },
            peeringConditions: conditions,
          },
        },
        "status",
      );
    },
  };
}

export interface ReconcileContext {
  cfg: ControllerConfig;
  peers: Map<string, PeerRuntime>;
  log: Logger;
  /** The peerings' extra virtual nodes (virtualnodes.ts): they take their share of each offer. */
  virtualNodes?: VirtualNodeController;
}
