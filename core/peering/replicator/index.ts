// The CRD replicator of one peering, run by the cluster that holds the peer identity (the
// consumer): it pushes its ResourceRequests and NetworkConfig into its tenant namespace on the
// provider and pulls the provider's ResourceOffer and NetworkConfig into its own tenant
// namespace, each status flowing back from the side that owns it. See docs/peering.md.
import type { KubeClient } from "../../kube/client.ts";
import { silentLogger, type Logger } from "../../log.ts";
import type { Counter, Registry } from "../../metrics/index.ts";
import { createEventRecorder } from "../../kube/events.ts";
import { createChannel, type Channel, type ChannelCounters, type Side } from "./channel.ts";
import { REPLICATED_KINDS } from "./forge.ts";

export {
  REPLICATED_KINDS,
  isReplicaOf,
  replicaOf,
  sourceSelector,
  targetSelector,
  type ReplicatedKind,
} from "./forge.ts";
export { REPLICATOR_FIELD_MANAGER } from "./channel.ts";

export interface CrdReplicatorOptions {
  local: KubeClient;
  /** The peer identity on the provider: may only touch its tenant namespace there. */
  remote: KubeClient;
  localClusterId: string;
  remoteClusterId: string;
  localTenantNamespace: string;
  remoteTenantNamespace: string;
  logger?: Logger;
  registry?: Registry;
  /** Workers per kind and direction (default 2). */
  workers?: number;
  /** How often a name held by an object the replicator did not make is checked again (default 30s). */
  conflictRecheckMs?: number;
}

export interface CrdReplicator {
  /** Resolves once every cache on both clusters has listed (it waits while the remote is unreachable). */
  start(): Promise<void>;
  stop(): Promise<void>;
  synced(): boolean;
  /** Resolves when no replication is queued, being handled or waiting for a retry. */
  idle(): Promise<void>;
  /** Objects held back because the name is taken by an object the replicator did not make ("push/resourcerequests/x"). */
  conflicts(): string[];
}

type WriteLabels = "remote_cluster_id" | "channel" | "what";
type ConflictLabels = "remote_cluster_id" | "channel";
// One registry may serve many peerings: the counters are declared once per registry and shared by label.
const declared = new WeakMap<Registry, { writes: Counter<WriteLabels>; conflicts: Counter<ConflictLabels> }>();

function counters(registry: Registry | undefined, remoteClusterId: string, channel: string): ChannelCounters {
  if (!registry) return { writes() {}, conflict() {} };
  let c = declared.get(registry);
  if (!c) {
    c = {
      writes: registry.counter<WriteLabels>({
        name: "liqo_crd_replicator_writes_total",
        help: "Writes made by the CRD replicator, by peer, channel and what was written.",
        labelNames: ["remote_cluster_id", "channel", "what"],
      }),
      conflicts: registry.counter<ConflictLabels>({
        name: "liqo_crd_replicator_conflicts_total",
        help: "Objects not replicated because the name is held by an object the replicator did not make.",
        labelNames: ["remote_cluster_id", "channel"],
      }),
    };
    declared.set(registry, c);
  }
  const { writes, conflicts } = c;
  return {
    writes: (what) => writes.inc({ remote_cluster_id: remoteClusterId, channel, what }),
    conflict: () => conflicts.inc({ remote_cluster_id: remoteClusterId, channel }),
  };
}

export function createCrdReplicator(o: CrdReplicatorOptions): CrdReplicator {
  const logger = (o.logger ?? silentLogger).child({ component: "crd-replicator", remoteClusterId: o.remoteClusterId });
  const events = createEventRecorder(o.local, "liqo-crd-replicator", logger);
  const local: Side = { client: o.local, namespace: o.localTenantNamespace, clusterId: o.localClusterId, events };
  const remote: Side = { client: o.remote, namespace: o.remoteTenantNamespace, clusterId: o.remoteClusterId };
  const channels: Channel[] = REPLICATED_KINDS.map((kind) => {
    const [source, target] = kind.direction === "push" ? [local, remote] : [remote, local];
    const name = `${kind.direction}-${kind.resource.plural}`;
    return createChannel({
      kind,
      source,
      target,
      logger,
      counters: counters(o.registry, o.remoteClusterId, name),
      workers: o.workers,
      conflictRecheckMs: o.conflictRecheckMs,
    });
  });
  let started = false;
  return {
    async start() {
      if (started) return;
      started = true;
      await Promise.all(channels.map((c) => c.start()));
      logger.info("CRD replicator synced", {
        localNamespace: o.localTenantNamespace,
        remoteNamespace: o.remoteTenantNamespace,
      });
    },
    async stop() {
      await Promise.all(channels.map((c) => c.stop()));
    },
    synced: () => channels.every((c) => c.synced),
    async idle() {
      await Promise.all(channels.map((c) => c.idle()));
    },
    conflicts: () => channels.flatMap((c) => c.conflicts().map((n) => `${c.name}/${n}`)),
  };
}
