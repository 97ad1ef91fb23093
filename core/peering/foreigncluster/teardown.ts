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
  type NamespaceMap,
  type ResourceOffer,
} from "../../apis/index.ts";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../../kube/errors.ts";
import { Resources, type KubeObject } from "../../kube/resources.ts";
import { tenantNamespaceName } from "../../offloading/names.ts";
import { conditionOf, forced, statusOf, type ForeignClusterObject } from "./conditions.ts";
import type { ReconcileContext, StatusWriter } from "./context.ts";
import { resourceRequestName } from "./outgoing.ts";
import { bounded, stopRuntime } from "./runtime.ts";
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

/** Returns true once everything is gone. Throws RetryAfterError while waiting for the remote cluster. */
export async function teardown(ctx: ReconcileContext, st: StatusWriter): Promise<boolean> {
  const { cfg, log } = ctx;
  const fc = st.fc;
  const remote = fc.spec.clusterIdentity;
  const noneLeft = () => {
    const why = fc.metadata.deletionTimestamp ? "ForeignClusterDeleted" : "OutgoingPeeringDisabled";
    st.set({
      type: "OutgoingPeering",
      status: "None",
      reason: why,
      message: fc.metadata.deletionTimestamp
        ? "the ForeignCluster is being deleted"
        : "outgoing peering is disabled (spec.outgoingPeeringEnabled No); liqoctl peer enables it",
    });
    if (
      statusOf(fc, "AuthenticationStatus") === "Established" ||
      conditionOf(fc, "AuthenticationStatus") === undefined
    ) {
      st.set({
        type: "AuthenticationStatus",
        status: "None",
        reason: "NoIdentity",
        message: "no identity is held in the remote cluster",
      });
    }
    if (!conditionOf(fc, "NetworkStatus"))
      st.set({ type: "NetworkStatus", status: "None", reason: "NotPeered", message: "no network interconnection" });
    if (!conditionOf(fc, "IncomingPeering"))
      st.set({
        type: "IncomingPeering",
        status: "None",
        reason: "NoIncomingPeering",
        message: "the remote cluster does not use this one's resources",
      });
  };
  if (!remote?.clusterID || remote.clusterID === cfg.local.clusterId) {
    noneLeft();
    await st.flush();
    return true;
  }
  const id = remote.clusterID;
  const localNs = fc.status?.tenantNamespace?.local || tenantNamespaceName(remote);
  if (!(await leftovers(ctx, fc, localNs))) {
    ctx.peers.delete(id);
    noneLeft();
    st.tenantNamespace({ remote: "" });
    await st.flush();
    return true;
  }

  const force = forced(fc);
  const started =
    Date.parse(
      conditionOf(fc, "OutgoingPeering")?.status === "Disconnecting"
        ? (conditionOf(fc, "OutgoingPeering")!.lastTransitionTime ?? "")
        : "",
    ) || cfg.now().getTime();
  const giveUp = force || cfg.now().getTime() - started > cfg.disconnectTimeoutMs;
  st.set({
    type: "OutgoingPeering",
    status: "Disconnecting",
    reason: force ? "ForcedUnpeering" : "Unpeering",
    message: `releasing the resources of ${remote.clusterName}${force ? " without waiting for it (forced)" : ""}`,
  });
  await st.flush();

  const identity = await readIdentity(cfg.client, localNs, id);
  const rt = ctx.peers.get(id);
  const peer: KubeClient | undefined =
    rt?.remote ?? (identity ? peerClient(identity.kubeconfig, fc.spec.foreignProxyUrl || undefined) : undefined);
  const remoteNs = identity?.remoteNamespace ?? fc.status?.tenantNamespace?.remote;
  const rrName = resourceRequestName(cfg.local.clusterId);

  // 1. Withdraw the request: the provider stops counting on us.
  const rr = await cfg.client.find<KubeObject & { spec?: { withdrawalTimestamp?: string } }>(
    ResourceRequestResource,
    rrName,
    localNs,
  );
  if (rr && !rr.spec?.withdrawalTimestamp) {
    await cfg.client.mergePatch(ResourceRequestResource, rrName, localNs, {
      spec: {
        withdrawalTimestamp: cfg
          .now()
          .toISOString()
          .replace(/\.\d+Z$/, "Z"),
      },
    });
  }

  // 2. The virtual kubelet and its node go; the NamespaceMap (owned by the node) is finished by hand below.
  if (rt?.vk) {
    const vk = rt.vk;
    rt.vk = undefined;
    rt.resources = undefined;
    await bounded(vk.remove(), 15_000, "stopping the virtual kubelet", log);
  }
  rt?.metrics?.close();
  if (rt) rt.metrics = undefined;
  for (const node of (await cfg.client.list(Resources.nodes, { labelSelector: `${REMOTE_CLUSTER_ID_LABEL}=${id}` }))
    .items) {
    await cfg.client.delete(Resources.nodes, node.metadata.name!, undefined, { uid: node.metadata.uid });
  }

  // 3. Twin namespaces on the provider, named in the NamespaceMap's status; then the map itself.
  const maps = (
    await cfg.client.list<NsMap>(NamespaceMapResource, { labelSelector: `${REMOTE_CLUSTER_ID_LABEL}=${id}` })
  ).items.filter((m) => m.metadata.labels?.["liqo.io/replicated"] !== "true");
  for (const map of maps) {
    for (const entry of Object.values(map.status?.currentMapping ?? {})) {
      if (!entry.remoteNamespace || !peer) continue;
      try {
        await peer.delete(Resources.namespaces, entry.remoteNamespace);
      } catch (err) {
        if (revoked(err)) continue;
        if (!giveUp) return waitRemote(st, remote.clusterName, `deleting twin namespace ${entry.remoteNamespace}`, err);
        log.warn("twin namespace left on the unreachable remote cluster", {
          remoteClusterId: id,
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

  // 4. The offer is released: no virtual kubelet stands for it any more (the replicator tells the provider).
  const offers = (await cfg.client.list<Offer>(ResourceOfferResource, { namespace: localNs })).items.filter(
    (x) => x.spec.clusterId === id,
  );
  for (const offer of offers) {
    if (offer.status?.virtualKubeletStatus === "None") continue;
    await cfg.client.mergePatch(
      ResourceOfferResource,
      offer.metadata.name!,
      localNs,
      { status: { virtualKubeletStatus: "None" } },
      "status",
    );
  }

  // 5. The request goes here and there; the provider revokes our identity when its copy goes.
  if (rr) await cfg.client.delete(ResourceRequestResource, rrName, localNs);
  if (peer && remoteNs) {
    try {
      await peer.delete(ResourceRequestResource, rrName, remoteNs);
    } catch (err) {
      if (!revoked(err) && !giveUp) return waitRemote(st, remote.clusterName, "deleting the ResourceRequest", err);
      if (!revoked(err))
        log.warn("ResourceRequest left on the unreachable remote cluster", { remoteClusterId: id, err });
    }
  }

  // 6. The replicator stops; the offer copies it pulled go; the identity is forgotten (a new
  // peering asks for a new one with the token).
  if (rt) await stopRuntime(rt, log, true);
  for (const offer of offers)
    await cfg.client.delete(ResourceOfferResource, offer.metadata.name!, localNs, { uid: offer.metadata.uid });
  await cfg.client.delete(Resources.secrets, remoteIdentitySecretName(id), localNs);
  ctx.peers.delete(id);
  ctx.virtualNodes?.kick(id); // its VirtualNodes now say there is no peering
  noneLeft();
  st.tenantNamespace({ remote: "" });
  await st.flush();
  log.info("unpeered", { remoteClusterId: id, forced: force });
  return true;
}

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
