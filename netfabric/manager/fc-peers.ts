// The network manager's peers from the ForeignClusters, as Liqo's network manager follows the
// peering: every ForeignCluster with networking enabled and a local tenant namespace (written by
// authentication on the consumer, by the incoming peering on the provider) is a peer; one that
// disappears, or turns networking off, is released. Level-triggered: the whole list is recomputed
// on every event, so a missed event is repaired by the next one (and by the informer's resync).
import { ForeignClusterResource, type ForeignCluster } from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { createInformer } from "../../core/kube/informer.ts";
import type { KubeObject } from "../../core/kube/resources.ts";
import { silentLogger, type Logger } from "../../core/log.ts";
import type { Peer } from "./forge.ts";

type Fc = ForeignCluster & KubeObject;

/** Pure: the peers a set of ForeignClusters implies, sorted by cluster ID. */
export function peersOfForeignClusters(fcs: Fc[]): Peer[] {
  const peers = new Map<string, Peer>();
  for (const fc of fcs) {
    const id = fc.spec?.clusterIdentity?.clusterID;
    const tenant = fc.status?.tenantNamespace?.local;
    if (!id || !tenant || fc.spec.networkingEnabled === "No" || fc.metadata.deletionTimestamp) continue;
    peers.set(id, {
      remoteClusterId: id,
      remoteClusterName: fc.spec.clusterIdentity?.clusterName || fc.metadata.name!,
      tenantNamespace: tenant,
    });
  }
  return [...peers.values()].sort((a, b) => a.remoteClusterId.localeCompare(b.remoteClusterId));
}

export interface ForeignClusterPeersOptions {
  client: KubeClient;
  onPeers: (peers: Peer[]) => void;
  resyncMs?: number;
  logger?: Logger;
}

export function watchForeignClusterPeers(o: ForeignClusterPeersOptions): {
  start(): Promise<void>;
  stop(): Promise<void>;
} {
  const log = (o.logger ?? silentLogger).child({ component: "fc-peers" });
  const fcs = createInformer<Fc>({
    client: o.client,
    resource: ForeignClusterResource,
    resyncMs: o.resyncMs ?? 30_000,
    logger: log,
  });
  let last = "";
  const recompute = () => {
    const peers = peersOfForeignClusters(fcs.list());
    const json = JSON.stringify(peers);
    if (json === last) return;
    last = json;
    log.info("peers from ForeignClusters", { peers: peers.map((p) => p.remoteClusterName) });
    o.onPeers(peers);
  };
  fcs.on({ add: recompute, update: recompute, delete: recompute });
  return {
    async start() {
      fcs.start();
      await fcs.waitForSync(120_000);
      recompute();
    },
    stop: () => fcs.stop(),
  };
}
