// The pure part of discovery: given the ForeignClusters that exist and the clusters heard in one
// round (mDNS answers, or a SearchDomain's records), what to create, update and delete. Liqo's
// merge logic: a cluster ID some ForeignCluster already holds is never added twice; only
// ForeignClusters this discovery made (its discovery-type label) are ever changed or removed; a
// cluster not heard for `maxMisses` rounds goes, unless a peering with it exists in either direction.
import {
  AUTOJOIN_LABEL,
  DISCOVERY_CLUSTER_ID_LABEL,
  DISCOVERY_TYPE_LABEL,
  type ForeignCluster,
} from "../apis/index.ts";
import type { DiscoveredCluster } from "./service.ts";

export { AUTOJOIN_LABEL };
export const PEERING_FINALIZER = "foreigncluster.liqo.io/peering";

export interface PlanInput {
  existing: readonly ForeignCluster[];
  heard: ReadonlyMap<string, DiscoveredCluster>;
  /** Cluster IDs answered for with different addresses in this round: left as they are. */
  conflicts?: ReadonlySet<string>;
  misses: ReadonlyMap<string, number>;
  localClusterId: string;
  discoveryType: "LAN" | "WAN";
  autojoin: boolean;
  /** Extra labels of the ForeignClusters made here (the SearchDomain's name). */
  labels?: Record<string, string>;
  /** Which existing ForeignClusters this discovery owns (default: its discovery type and labels). */
  owns?: (fc: ForeignCluster) => boolean;
  ttlSeconds?: number;
  maxMisses?: number;
}

export interface Plan {
  create: ForeignCluster[];
  update: {
    name: string;
    clusterId: string;
    resourceVersion?: string;
    patch: { metadata?: { labels: Record<string, string> }; spec?: Partial<ForeignCluster["spec"]> };
  }[];
  delete: { name: string; uid?: string; clusterId: string }[];
  /** Kept though not heard for maxMisses rounds: peered. */
  kept: string[];
  misses: Map<string, number>;
}

/** Whether a peering exists with the cluster in either direction (or is being set up or torn down). */
export function peered(fc: ForeignCluster): boolean {
  if (fc.metadata.finalizers?.includes(PEERING_FINALIZER)) return true;
  if (fc.spec.outgoingPeeringEnabled === "Yes") return true;
  return (fc.status?.peeringConditions ?? []).some(
    (c) => ["OutgoingPeering", "IncomingPeering", "AuthenticationStatus"].includes(c.type) && c.status !== "None",
  );
}

export function planRound(i: PlanInput): Plan {
  const maxMisses = i.maxMisses ?? 3;
  const labels = i.labels ?? {};
  const owns =
    i.owns ??
    ((fc: ForeignCluster) =>
      fc.metadata.labels?.[DISCOVERY_TYPE_LABEL] === i.discoveryType &&
      Object.entries(labels).every(([k, v]) => fc.metadata.labels?.[k] === v));
  const live = i.existing.filter((f) => !f.metadata.deletionTimestamp);
  const byId = new Map<string, ForeignCluster>();
  for (const f of live) {
    const id = f.spec.clusterIdentity?.clusterID;
    if (id && !byId.has(id)) byId.set(id, f);
  }
  const names = new Set(live.map((f) => f.metadata.name!));
  const plan: Plan = { create: [], update: [], delete: [], kept: [], misses: new Map() };
  const autojoin = String(i.autojoin);

  for (const [id, c] of i.heard) {
    if (id === i.localClusterId) continue;
    const fc = byId.get(id);
    if (!fc) {
      // Named after the cluster, unless another cluster holds that name already.
      let name = c.clusterName;
      if (names.has(name)) name = `${c.clusterName}-${id.slice(0, 8)}`;
      if (names.has(name)) continue;
      names.add(name);
      plan.create.push({
        apiVersion: "discovery.liqo.io/v1alpha1",
        kind: "ForeignCluster",
        metadata: {
          name,
          labels: {
            [DISCOVERY_TYPE_LABEL]: i.discoveryType,
            [DISCOVERY_CLUSTER_ID_LABEL]: id,
            [AUTOJOIN_LABEL]: autojoin,
            ...labels,
          },
        },
        spec: {
          clusterIdentity: { clusterID: id, clusterName: c.clusterName },
          foreignAuthUrl: c.authUrl,
          outgoingPeeringEnabled: "Auto",
          incomingPeeringEnabled: "Auto",
          networkingEnabled: "Yes",
          insecureSkipTLSVerify: true,
          ...(i.ttlSeconds ? { ttl: i.ttlSeconds } : {}),
        },
      } as ForeignCluster);
      continue;
    }
    if (!owns(fc) || i.conflicts?.has(id)) continue;
    const patch: Plan["update"][number]["patch"] = {};
    if (fc.spec.foreignAuthUrl !== c.authUrl) patch.spec = { foreignAuthUrl: c.authUrl };
    if (fc.metadata.labels?.[AUTOJOIN_LABEL] !== autojoin) patch.metadata = { labels: { [AUTOJOIN_LABEL]: autojoin } };
    if (patch.spec || patch.metadata)
      plan.update.push({ name: fc.metadata.name!, clusterId: id, resourceVersion: fc.metadata.resourceVersion, patch });
  }

  for (const fc of live) {
    const id = fc.spec.clusterIdentity?.clusterID;
    if (!id || !owns(fc) || i.heard.has(id)) continue;
    const missed = (i.misses.get(id) ?? 0) + 1;
    if (missed < maxMisses) {
      plan.misses.set(id, missed);
    } else if (peered(fc)) {
      plan.kept.push(fc.metadata.name!);
      plan.misses.set(id, missed);
    } else {
      plan.delete.push({ name: fc.metadata.name!, uid: fc.metadata.uid, clusterId: id });
    }
  }
  return plan;
}
