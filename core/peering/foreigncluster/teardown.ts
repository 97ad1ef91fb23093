// Unpeering (outgoing peering disabled, or the ForeignCluster deleted): OutgoingPeering
// Disconnecting, then the ResourceRequest withdrawn, the virtual kubelet stopped and its node
// deleted (pods bound to it are then deleted by the pod GC and rescheduled by their controllers),
// the twin namespaces removed from the provider, the offer released, the ResourceRequest deleted
// here and there (the provider then revokes our identity), and the identity Secret removed.
// Every step is idempotent and checks observed state, so a crash anywhere resumes cleanly. With
// the force annotation, steps that need the remote cluster are tried once and their failures ignored.
import {
  NamespaceMapResource,
  REMOTE_CLUSTER_ID_LABEL,
  ResourceOfferResource,
  ResourceRequestResource,
  type ClusterIdentity,
  type NamespaceMap,
  type ResourceOffer,
} from "../../apis/index.ts";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../../kube/errors.ts";
import { Resources, type KubeObject } from "../../kube/resources.ts";
import { tenantNamespaceName } from "../../offloading/names.ts";
import { conditionOf, forced, NO_INCOMING_PEERING, statusOf, type ForeignClusterObject } from "./conditions.ts";
import type { ReconcileContext, StatusWriter } from "./context.ts";
import { resourceRequestName } from "./outgoing.ts";
import { bounded, stopRuntime, type PeerRuntime } from "./runtime.ts";
import { peerClient, readIdentity, remoteIdentitySecretName } from "./secrets.ts";

type Offer = ResourceOffer & KubeObject;
type NsMap = NamespaceMap & KubeObject;

/** Whether anything of an outgoing peering exists; when not, there is nothing to tear down. */
async function leftovers(ctx: ReconcileContext, fc: ForeignClusterObject, localNs: string): Promise<boolean> {
  const id = fc.spec.clusterIdentity!.clusterID;
  if (ctx.peers.get(id)?.vk || ctx.peers.get(id)?.replicator) return true;
  if (await ctx.cfg.client.find(ResourceRequestResource, resourceRequestName(ctx.cfg.local.clusterId), localNs))
    return true;
  if (await ctx.cfg.client.find(Resources.secrets, remoteIdentitySecretName(id), localNs)) return true;
  return false;
}

/** The error of a call to the remote cluster that means "no use retrying": our identity is gone there. */
const revoked = (err: unknown) =>
  err instanceof KubeApiError && (err.status === 401 || err.status === 403 || err.notFound);

/** What the steps of one unpeering share. */
interface Unpeering {
  ctx: ReconcileContext;
  st: StatusWriter;
  remote: ClusterIdentity;
  localNs: string;
  /** Forced, or the remote cluster had its time: what fails there is logged and left behind. */
  giveUp: boolean;
  /** The peer's runtime, if one runs in this process. */
  rt?: PeerRuntime;
  /** The remote cluster as our identity there reaches it, while we know one. */
  peer?: KubeClient;
  /** Our tenant namespace in the remote cluster. */
  remoteNs?: string;
  rrName: string;
}

/** Returns true once everything is gone. Throws RetryAfterError while waiting for the remote cluster. */
export async function teardown(ctx: ReconcileContext, st: StatusWriter): Promise<boolean> {
  const fc = st.fc;
  const remote = fc.spec.clusterIdentity;
  if (!remote?.clusterID || remote.clusterID === ctx.cfg.local.clusterId) {
    setNoneLeft(st, fc);
    await st.flush();
    return true;
  }
  const localNs = fc.status?.tenantNamespace?.local || tenantNamespaceName(remote);
  if (!(await leftovers(ctx, fc, localNs))) {
    ctx.peers.delete(remote.clusterID);
    await reportUnpeered(st, fc);
    return true;
  }
  const force = forced(fc);
  const giveUp = force || disconnectTimedOut(ctx, fc);
  await reportDisconnecting(st, remote, force);
  const u = await unpeering(ctx, st, fc, localNs, giveUp);
  const rr = await withdrawResourceRequest(u);
  await removeVirtualKubelet(u);
  await removeTwinNamespaces(u);
  const offers = await releaseOffers(u);
  await deleteResourceRequests(u, rr);
  await forgetPeer(u, offers);
  await reportUnpeered(st, fc);
  ctx.log.info("unpeered", { remoteClusterId: remote.clusterID, forced: force });
  return true;
}

/** Sets the conditions of a ForeignCluster with no outgoing peering left. */
function setNoneLeft(st: StatusWriter, fc: ForeignClusterObject): void {
  const why = fc.metadata.deletionTimestamp ? "ForeignClusterDeleted" : "OutgoingPeeringDisabled";
  st.set({
    type: "OutgoingPeering",
    status: "None",
    reason: why,
    message: fc.metadata.deletionTimestamp
      ? "the ForeignCluster is being deleted"
      : "outgoing peering is disabled (spec.outgoingPeeringEnabled No); liqoctl peer enables it",
  });
  if (statusOf(fc, "AuthenticationStatus") === "Established" || conditionOf(fc, "AuthenticationStatus") === undefined) {
    st.set({
      type: "AuthenticationStatus",
      status: "None",
      reason: "NoIdentity",
      message: "no identity is held in the remote cluster",
    });
  }
  if (!conditionOf(fc, "NetworkStatus"))
    st.set({ type: "NetworkStatus", status: "None", reason: "NotPeered", message: "no network interconnection" });
  if (!conditionOf(fc, "IncomingPeering")) st.set(NO_INCOMING_PEERING);
}

/** Reports the outgoing peering gone, with no remote tenant namespace any more. */
async function reportUnpeered(st: StatusWriter, fc: ForeignClusterObject): Promise<void> {
  setNoneLeft(st, fc);
  st.tenantNamespace({ remote: "" });
  await st.flush();
}

/** Whether a graceful unpeering has waited for the remote cluster longer than it may. */
function disconnectTimedOut(ctx: ReconcileContext, fc: ForeignClusterObject): boolean {
  const { cfg } = ctx;
  const started =
    Date.parse(
      conditionOf(fc, "OutgoingPeering")?.status === "Disconnecting"
        ? (conditionOf(fc, "OutgoingPeering")!.lastTransitionTime ?? "")
        : "",
    ) || cfg.now().getTime();
  return cfg.now().getTime() - started > cfg.disconnectTimeoutMs;
}

/** Reports the outgoing peering Disconnecting. */
async function reportDisconnecting(st: StatusWriter, remote: ClusterIdentity, force: boolean): Promise<void> {
  st.set({
    type: "OutgoingPeering",
    status: "Disconnecting",
    reason: force ? "ForcedUnpeering" : "Unpeering",
    message: `releasing the resources of ${remote.clusterName}${force ? " without waiting for it (forced)" : ""}`,
  });
  await st.flush();
}

/** The unpeering's shared state, with the remote cluster reached through our identity if it is still known. */
async function unpeering(
  ctx: ReconcileContext,
  st: StatusWriter,
  fc: ForeignClusterObject,
  localNs: string,
  giveUp: boolean,
): Promise<Unpeering> {
  const { cfg } = ctx;
  const remote = fc.spec.clusterIdentity!;
  const identity = await readIdentity(cfg.client, localNs, remote.clusterID);
  const rt = ctx.peers.get(remote.clusterID);
  const peer: KubeClient | undefined =
    rt?.remote ?? (identity ? peerClient(identity.kubeconfig, fc.spec.foreignProxyUrl || undefined) : undefined);
  const remoteNs = identity?.remoteNamespace ?? fc.status?.tenantNamespace?.remote;
  const rrName = resourceRequestName(cfg.local.clusterId);
  return { ctx, st, remote, localNs, giveUp, rt, peer, remoteNs, rrName };
}

/** Ensures our ResourceRequest is withdrawn: the provider stops counting on us. Returns it if it exists. */
async function withdrawResourceRequest(u: Unpeering): Promise<KubeObject | undefined> {
  const { cfg } = u.ctx;
  const rr = await cfg.client.find<KubeObject & { spec?: { withdrawalTimestamp?: string } }>(
    ResourceRequestResource,
    u.rrName,
    u.localNs,
  );
  if (rr && !rr.spec?.withdrawalTimestamp) {
    await cfg.client.mergePatch(ResourceRequestResource, u.rrName, u.localNs, {
      spec: {
        withdrawalTimestamp: cfg
          .now()
          .toISOString()
          .replace(/\.\d+Z$/, "Z"),
      },
    });
  }
  return rr;
}

/** Ensures the virtual kubelet is stopped and the peer's nodes are deleted. */
async function removeVirtualKubelet(u: Unpeering): Promise<void> {
  const { cfg, log } = u.ctx;
  const { rt } = u;
  // The NamespaceMap (owned by the node) is finished by hand in removeTwinNamespaces.
  if (rt?.vk) {
    const vk = rt.vk;
    rt.vk = undefined;
    rt.resources = undefined;
    await bounded(vk.remove(), 15_000, "stopping the virtual kubelet", log);
  }
  rt?.metrics?.close();
  if (rt) rt.metrics = undefined;
  for (const node of (
    await cfg.client.list(Resources.nodes, { labelSelector: `${REMOTE_CLUSTER_ID_LABEL}=${u.remote.clusterID}` })
  ).items) {
    await cfg.client.delete(Resources.nodes, node.metadata.name!, undefined, { uid: node.metadata.uid });
  }
}

/** Ensures the twin namespaces named in the NamespaceMaps' status are gone from the provider, then the maps. */
async function removeTwinNamespaces(u: Unpeering): Promise<void> {
  const { cfg, log } = u.ctx;
  const { remote, peer } = u;
  const maps = (
    await cfg.client.list<NsMap>(NamespaceMapResource, {
      labelSelector: `${REMOTE_CLUSTER_ID_LABEL}=${remote.clusterID}`,
    })
  ).items.filter((m) => m.metadata.labels?.["liqo.io/replicated"] !== "true");
  for (const map of maps) {
    for (const entry of Object.values(map.status?.currentMapping ?? {})) {
      if (!entry.remoteNamespace || !peer) continue;
      try {
        await peer.delete(Resources.namespaces, entry.remoteNamespace);
      } catch (err) {
        if (revoked(err)) continue;
        if (!u.giveUp)
          return waitRemote(u.st, remote.clusterName, `deleting twin namespace ${entry.remoteNamespace}`, err);
        log.warn("twin namespace left on the unreachable remote cluster", {
          remoteClusterId: remote.clusterID,
          namespace: entry.remoteNamespace,
          err,
        });
      }
    }
    if (map.metadata.finalizers?.length)
      await cfg.client.mergePatch(NamespaceMapResource, map.metadata.name!, map.metadata.namespace, {
        metadata: { finalizers: null },
      });
    await cfg.client.delete(NamespaceMapResource, map.metadata.name!, map.metadata.namespace, {
      uid: map.metadata.uid,
    });
  }
}

/** Ensures no offer says a virtual kubelet stands for it (the replicator tells the provider). Returns the offers. */
async function releaseOffers(u: Unpeering): Promise<Offer[]> {
  const { cfg } = u.ctx;
  const offers = (await cfg.client.list<Offer>(ResourceOfferResource, { namespace: u.localNs })).items.filter(
    (x) => x.spec.clusterId === u.remote.clusterID,
  );
  for (const offer of offers) {
    if (offer.status?.virtualKubeletStatus === "None") continue;
    await cfg.client.mergePatch(
      ResourceOfferResource,
      offer.metadata.name!,
      u.localNs,
      { status: { virtualKubeletStatus: "None" } },
      "status",
    );
  }
  return offers;
}

/** Ensures the ResourceRequest is gone here and there; the provider revokes our identity when its copy goes. */
async function deleteResourceRequests(u: Unpeering, rr: KubeObject | undefined): Promise<void> {
  const { cfg, log } = u.ctx;
  const { remote, peer, remoteNs } = u;
  if (rr) await cfg.client.delete(ResourceRequestResource, u.rrName, u.localNs);
  if (peer && remoteNs) {
    try {
      await peer.delete(ResourceRequestResource, u.rrName, remoteNs);
    } catch (err) {
      if (!revoked(err) && !u.giveUp) return waitRemote(u.st, remote.clusterName, "deleting the ResourceRequest", err);
      if (!revoked(err))
        log.warn("ResourceRequest left on the unreachable remote cluster", { remoteClusterId: remote.clusterID, err });
    }
  }
}

/** Ensures nothing of the peer is left here: its runtime stops, the offer copies and our identity go. */
async function forgetPeer(u: Unpeering, offers: Offer[]): Promise<void> {
  const { ctx, rt, localNs } = u;
  const { cfg, log } = ctx;
  const id = u.remote.clusterID;
  // The replicator stops; the offer copies it pulled go; the identity is forgotten (a new
  // peering asks for a new one with the token).
  if (rt) await stopRuntime(rt, log, true);
  for (const offer of offers)
    await cfg.client.delete(ResourceOfferResource, offer.metadata.name!, localNs, { uid: offer.metadata.uid });
  await cfg.client.delete(Resources.secrets, remoteIdentitySecretName(id), localNs);
  ctx.peers.delete(id);
  ctx.virtualNodes?.kick(id); // its VirtualNodes now say there is no peering
}

/** Reports the remote cluster unreachable while unpeering, and re-queues. */
async function waitRemote(st: StatusWriter, remoteName: string, step: string, err: unknown): Promise<never> {
  st.set({
    type: "OutgoingPeering",
    status: "Disconnecting",
    reason: "RemoteUnreachable",
    message: `${step} in ${remoteName} failed: ${(err as Error).message}; retrying (liqoctl unpeer --force skips what needs ${remoteName})`,
  });
  await st.flush();
  throw new RetryAfterError(5000, `${step} in ${remoteName}`);
}
