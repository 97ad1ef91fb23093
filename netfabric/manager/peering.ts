// One peering's network objects, reconciled from what the API server holds now (level-triggered,
// idempotent): our NetworkConfig for the peer, the status of the peer's NetworkConfig (how we
// remapped its networks, written after the IPAM change is stored), the IPAM record of how the
// peer remapped ours, and the TunnelEndpoint once both sides have processed. A peer that is no
// longer wanted, or whose NetworkConfig disappeared, loses its networks and its TunnelEndpoint.
import { InvalidObjectError } from "../../core/apis/validation.ts";
import { NetworkConfigResource, parseNetworkConfig, type NetworkConfig } from "../../core/apis/net/networkconfig.ts";
import { TunnelEndpointResource, type TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import { OWNERSHIP_LABEL, REPLICATION_DESTINATION_LABEL, REPLICATION_ORIGIN_LABEL } from "../../core/apis/labels.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { objectKey, type KubeObject } from "../../core/kube/resources.ts";
import type { EventRecorder } from "../../core/kube/events.ts";
import type { Logger } from "../../core/log.ts";
import { IpamError } from "../ipam/index.ts";
import {
  NETCFG_OWNER,
  bothProcessed,
  localNetworkConfig,
  networkConfigRole,
  remoteNetworkConfigStatus,
  tunnelEndpointLabels,
  tunnelEndpointSpec,
  uniqueName,
  type LocalNetworkParameters,
  type Peer,
} from "./forge.ts";
import { CLUSTER_ID_LABEL } from "../shared/labels.ts";
import type { IpamStore } from "./ipam-store.ts";
import { canonicalJson } from "./ipam-storage.ts";

export type PeerPhase =
  | "WaitingForKeys"
  | "WaitingForPeerNetworkConfig"
  | "InvalidPeerNetworkConfig"
  | "RemappingFailed"
  | "WaitingForPeerProcessing"
  | "Ready"
  | "Removed";

export interface PeerState {
  clusterId: string;
  phase: PeerPhase;
  message: string;
  localNetworkConfig?: string;
  remoteNetworkConfig?: string;
  tunnelEndpoint?: string;
}

export interface PeeringContext {
  client: KubeClient;
  store: IpamStore;
  events: EventRecorder;
  logger: Logger;
  /** Our parameters, or a message saying what is missing (e.g. the gateway's key Secret). */
  localParameters(): LocalNetworkParameters | string;
}

const NC_META = { apiVersion: "net.liqo.io/v1alpha1", kind: "NetworkConfig" };
const TEP_META = { apiVersion: "net.liqo.io/v1alpha1", kind: "TunnelEndpoint" };
const withKind = <T extends KubeObject>(obj: T, meta: typeof NC_META): T => ({ ...obj, ...meta });

export async function reconcilePeer(
  ctx: PeeringContext,
  clusterId: string,
  peer: Peer | undefined,
): Promise<PeerState> {
  if (!peer) return teardown(ctx, clusterId, "peer removed");
  const { client, store, events } = ctx;
  const state: PeerState = { clusterId, phase: "WaitingForKeys", message: "" };
  const all = (await client.list<NetworkConfig>(NetworkConfigResource, { namespace: peer.tenantNamespace })).items.map(
    (o) => withKind(o, NC_META),
  );
  const ours = all.filter((o) => {
    const r = networkConfigRole(o.metadata.labels);
    return r?.local && r.clusterId === clusterId && o.metadata.labels?.[OWNERSHIP_LABEL] === NETCFG_OWNER;
  });
  const theirs = all.filter((o) => {
    const r = networkConfigRole(o.metadata.labels);
    return r && !r.local && r.clusterId === clusterId;
  });

  // 1. Our NetworkConfig for the peer.
  const params = ctx.localParameters();
  if (typeof params === "string") return { ...state, message: params };
  const local = await ensureLocalNetworkConfig(ctx, peer, params, ours);
  state.localNetworkConfig = objectKey(local);

  // 2. The peer's NetworkConfig, as the CRD replicator puts it here.
  if (theirs.length === 0) {
    await releaseRemote(ctx, clusterId, peer.tenantNamespace);
    return {
      ...state,
      phase: "WaitingForPeerNetworkConfig",
      message: `no NetworkConfig from ${clusterId} in ${peer.tenantNamespace} yet (label ${REPLICATION_ORIGIN_LABEL}=${clusterId})`,
    };
  }
  if (theirs.length > 1) {
    const message = `${theirs.length} NetworkConfigs from ${clusterId} in ${peer.tenantNamespace} (${theirs.map((o) => o.metadata.name).join(", ")}); a peer sends one, delete the stale ones`;
    for (const o of theirs) events.warning(o, "DuplicateNetworkConfig", message);
    return { ...state, phase: "InvalidPeerNetworkConfig", message };
  }
  const received = theirs[0]!;
  state.remoteNetworkConfig = objectKey(received);
  let remote: NetworkConfig;
  try {
    remote = withKind(parseNetworkConfig(received) as NetworkConfig, NC_META);
  } catch (err) {
    if (!(err instanceof InvalidObjectError)) throw err;
    const message = `NetworkConfig ${objectKey(received)} from ${clusterId}: ${err.message}; the peer must send valid networks (its network manager's --pod-cidr/--external-cidr)`;
    events.warning(received, "InvalidNetworkConfig", message);
    return { ...state, phase: "InvalidPeerNetworkConfig", message };
  }

  // 3. Remap the peer's networks; the IpamStorage is written before the status tells the peer.
  let mapped;
  try {
    mapped = await store.update(`map networks of ${clusterId}`, (ipam) =>
      ipam.mapRemoteNetworks(clusterId, { podCidr: remote.spec.podCIDR, externalCidr: remote.spec.externalCIDR }),
    );
  } catch (err) {
    if (!(err instanceof IpamError)) throw err;
    const message = `cannot map the networks of NetworkConfig ${objectKey(received)} from ${clusterId}: ${err.message}`;
    events.warning(received, err.code === "PoolExhausted" ? "RemappingFailed" : "InvalidNetworkConfig", message);
    return { ...state, phase: err.code === "PoolExhausted" ? "RemappingFailed" : "InvalidPeerNetworkConfig", message };
  }
  const status = remoteNetworkConfigStatus(mapped);
  if (
    canonicalJson(status) !==
    canonicalJson({
      processed: remote.status?.processed ?? false,
      podCIDRNAT: remote.status?.podCIDRNAT,
      externalCIDRNAT: remote.status?.externalCIDRNAT,
    })
  ) {
    const updated = await client.mergePatch<NetworkConfig>(
      NetworkConfigResource,
      received.metadata.name!,
      received.metadata.namespace,
      { status },
      "status",
    );
    remote = withKind({ ...remote, status: updated.status ?? status }, NC_META);
    events.normal(
      received,
      "Processed",
      `networks of ${clusterId} mapped: podCIDR ${remote.spec.podCIDR} → ${status.podCIDRNAT}, externalCIDR ${remote.spec.externalCIDR} → ${status.externalCIDRNAT}`,
    );
  }

  // 4. How the peer remapped ours (it wrote our NetworkConfig's status; the replicator brought it back).
  if (!local.status?.processed) {
    return {
      ...state,
      phase: "WaitingForPeerProcessing",
      message: `${clusterId} has not processed NetworkConfig ${objectKey(local)} yet`,
    };
  }
  try {
    await store.update(`record how ${clusterId} sees our networks`, (ipam) =>
      ipam.setLocalNetworksSeenBy(clusterId, {
        podCidr: local.status!.podCIDRNAT || "None",
        externalCidr: local.status!.externalCIDRNAT || "None",
      }),
    );
  } catch (err) {
    if (!(err instanceof IpamError)) throw err;
    const message = `status of NetworkConfig ${objectKey(local)} written by ${clusterId} is unusable: ${err.message}`;
    events.warning(local, "InvalidNetworkConfigStatus", message);
    return { ...state, phase: "InvalidPeerNetworkConfig", message };
  }

  // 5. Both sides agree: the TunnelEndpoint the gateway configures itself from.
  if (!bothProcessed(local, remote))
    return { ...state, phase: "WaitingForPeerProcessing", message: "waiting for both NetworkConfigs to be processed" };
  const tep = await ensureTunnelEndpoint(ctx, peer, local, remote);
  return {
    ...state,
    tunnelEndpoint: objectKey(tep),
    phase: "Ready",
    message: `tunnel to ${remote.spec.endpointIP}:${remote.spec.backend_config.port ?? "?"}`,
  };
}

async function ensureLocalNetworkConfig(
  ctx: PeeringContext,
  peer: Peer,
  params: LocalNetworkParameters,
  ours: NetworkConfig[],
): Promise<NetworkConfig> {
  const desired = localNetworkConfig(peer, params);
  // Keep the oldest if a race ever made two (Liqo's filterDuplicateNetworkConfig).
  const sorted = [...ours].sort(
    (a, b) =>
      (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") ||
      (a.metadata.uid ?? "").localeCompare(b.metadata.uid ?? ""),
  );
  for (const extra of sorted.slice(1))
    await ctx.client.delete(NetworkConfigResource, extra.metadata.name!, extra.metadata.namespace, {
      uid: extra.metadata.uid,
    });
  const existing = sorted[0];
  if (!existing) {
    try {
      const created = await ctx.client.create<NetworkConfig>(NetworkConfigResource, desired);
      ctx.logger.info("NetworkConfig created", { key: objectKey(created), peer: peer.remoteClusterId });
      return withKind(created, NC_META);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.reason === "AlreadyExists")) throw err;
      const found = await ctx.client.get<NetworkConfig>(
        NetworkConfigResource,
        desired.metadata.name!,
        peer.tenantNamespace,
      );
      return ensureLocalNetworkConfig(ctx, peer, params, [found]);
    }
  }
  const labels = { ...existing.metadata.labels, ...desired.metadata.labels };
  if (
    canonicalJson(existing.spec) === canonicalJson(desired.spec) &&
    canonicalJson(labels) === canonicalJson(existing.metadata.labels)
  )
    return withKind(existing, NC_META);
  const updated = await ctx.client.replace<NetworkConfig>(NetworkConfigResource, {
    ...existing,
    ...NC_META,
    metadata: { ...existing.metadata, labels },
    spec: desired.spec,
  });
  ctx.logger.info("NetworkConfig updated", { key: objectKey(updated), peer: peer.remoteClusterId });
  return withKind(updated, NC_META);
}

async function ensureTunnelEndpoint(
  ctx: PeeringContext,
  peer: Peer,
  local: NetworkConfig,
  remote: NetworkConfig,
): Promise<TunnelEndpoint> {
  const { client } = ctx;
  const spec = tunnelEndpointSpec(local, remote);
  const found = (
    await client.list<TunnelEndpoint>(TunnelEndpointResource, {
      namespace: peer.tenantNamespace,
      labelSelector: `${CLUSTER_ID_LABEL}=${peer.remoteClusterId}`,
    })
  ).items;
  for (const extra of found.slice(1))
    await client.delete(TunnelEndpointResource, extra.metadata.name!, extra.metadata.namespace, {
      uid: extra.metadata.uid,
    });
  const ownerReferences = [
    { apiVersion: NC_META.apiVersion, kind: NC_META.kind, name: local.metadata.name!, uid: local.metadata.uid! },
  ];
  const existing = found[0];
  if (!existing) {
    const created = await client.create<TunnelEndpoint>(TunnelEndpointResource, {
      ...TEP_META,
      metadata: {
        name: uniqueName(peer.remoteClusterName, peer.remoteClusterId),
        namespace: peer.tenantNamespace,
        labels: tunnelEndpointLabels(peer.remoteClusterId),
        ownerReferences,
      },
      spec,
    });
    ctx.events.normal(
      withKind(local, NC_META),
      "TunnelEndpointCreated",
      `TunnelEndpoint ${objectKey(created)} created for ${peer.remoteClusterId}`,
    );
    ctx.logger.info("TunnelEndpoint created", { key: objectKey(created), peer: peer.remoteClusterId });
    return created;
  }
  const sameOwner = existing.metadata.ownerReferences?.some((o) => o.uid === local.metadata.uid);
  if (canonicalJson(existing.spec) === canonicalJson(spec) && sameOwner) return existing;
  const updated = await client.replace<TunnelEndpoint>(TunnelEndpointResource, {
    ...existing,
    ...TEP_META,
    metadata: { ...existing.metadata, ownerReferences },
    spec,
  });
  ctx.logger.info("TunnelEndpoint updated", { key: objectKey(updated), peer: peer.remoteClusterId });
  return updated;
}

/** The peer's NetworkConfig is gone: its networks and its tunnel go with it. */
async function releaseRemote(ctx: PeeringContext, clusterId: string, namespace?: string): Promise<void> {
  const teps = (
    await ctx.client.list<TunnelEndpoint>(TunnelEndpointResource, {
      namespace,
      labelSelector: `${CLUSTER_ID_LABEL}=${clusterId}`,
    })
  ).items;
  for (const t of teps) {
    await ctx.client.delete(TunnelEndpointResource, t.metadata.name!, t.metadata.namespace, { uid: t.metadata.uid });
    ctx.logger.info("TunnelEndpoint deleted", { key: objectKey(t), peer: clusterId });
  }
  if (ctx.store.ipam.mappedNetworks(clusterId)) {
    await ctx.store.update(`release networks of ${clusterId}`, (ipam) => ipam.releaseCluster(clusterId));
    ctx.logger.info("networks released", { peer: clusterId });
  }
}

async function teardown(ctx: PeeringContext, clusterId: string, why: string): Promise<PeerState> {
  await releaseRemote(ctx, clusterId);
  const selector = `${REPLICATION_DESTINATION_LABEL}=${clusterId},${OWNERSHIP_LABEL}=${NETCFG_OWNER}`;
  for (const nc of (await ctx.client.list<NetworkConfig>(NetworkConfigResource, { labelSelector: selector })).items) {
    await ctx.client.delete(NetworkConfigResource, nc.metadata.name!, nc.metadata.namespace, { uid: nc.metadata.uid });
    ctx.logger.info("NetworkConfig deleted", { key: objectKey(nc), peer: clusterId });
  }
  return { clusterId, phase: "Removed", message: why };
}
