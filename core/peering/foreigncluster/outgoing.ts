// Phase 2 of an outgoing peering (OutgoingPeering): our ResourceRequest in the local tenant
// namespace (replicated to the provider), the provider's ResourceOffer (replicated back) accepted,
// then one in-process virtual kubelet with the offered capacity; Established once its node is Ready.
import {
  REMOTE_CLUSTER_ID_LABEL,
  REPLICATION_DESTINATION_LABEL,
  REPLICATION_REQUESTED_LABEL,
  ResourceOfferResource,
  ResourceRequestResource,
  type ResourceOffer,
  type ResourceRequest,
} from "../../apis/index.ts";
import { syncDropins } from "../../reflection/store/sync.ts";
import type { ReadyPlugin } from "../../reflection/store/watch.ts";
import { verbsFor } from "../auth/plugin-rbac.ts";
import { RetryAfterError } from "../../kube/errors.ts";
import { readAuthUrl } from "../auth-url.ts";
import { objectKey, type KubeObject } from "../../kube/resources.ts";
import { startVirtualKubelet, type VirtualKubelet } from "../../virtualkubelet/start.ts";
import type { IpTranslator } from "../../reflection/abi.ts";
import { createTranslationWatcher } from "../../../netfabric/manager/translation-watch.ts";
import type { Authenticated } from "./authenticate.ts";
import { offeredResources } from "./conditions.ts";
import type { KubeletServing, ReconcileContext, StatusWriter } from "./context.ts";
import { bounded, stopRuntime, type PeerRuntime } from "./runtime.ts";
import { peerClient } from "./secrets.ts";
import { peerRegistry } from "./peer-registry.ts";
import { storageFor } from "../../storage/offer.ts";

export const FIELD_MANAGER = "liqo-foreigncluster";
type Offer = ResourceOffer & KubeObject;

/** Liqo names the ResourceRequest after the requesting (local) cluster's ID. */
export const resourceRequestName = (localClusterId: string) => localClusterId;

export function resourceRequest(
  ctx: ReconcileContext,
  auth: Authenticated,
  authUrl = ctx.cfg.authUrl,
  asked?: Record<string, string | number>,
): KubeObject {
  const { cfg } = ctx;
  const plugins = cfg.plugins?.requests() ?? [];
  return {
    apiVersion: "discovery.liqo.io/v1alpha1",
    kind: "ResourceRequest",
    metadata: {
      name: resourceRequestName(cfg.local.clusterId),
      namespace: auth.localNamespace,
      labels: {
        [REPLICATION_REQUESTED_LABEL]: "true",
        [REMOTE_CLUSTER_ID_LABEL]: auth.remote.clusterID,
        [REPLICATION_DESTINATION_LABEL]: auth.remote.clusterID,
      },
    },
    spec: {
      clusterIdentity: { clusterID: cfg.local.clusterId, clusterName: cfg.local.clusterName },
      authUrl,
      // Omitted when empty: the apply then drops what an earlier one listed (the provider revokes it).
      ...(plugins.length ? { reflectorPlugins: plugins } : {}),
      // The amounts liqoctl peer --cpu/--memory/--pods/--resource asked for (none: the provider's rule).
      ...(asked && Object.keys(asked).length ? { requestedResources: { ...asked } } : {}),
    },
  };
}

/**
 * The installed plugins the provider granted for this peering, as its answer in our request's
 * status says (replicated back): all of a plugin's kinds, with the verbs its directions need.
 */
async function grantedPlugins(ctx: ReconcileContext, auth: Authenticated): Promise<ReadyPlugin[]> {
  const { cfg } = ctx;
  const store = cfg.plugins;
  if (!store) return [];
  const rr = await cfg.client.find<ResourceRequest & KubeObject>(
    ResourceRequestResource,
    resourceRequestName(cfg.local.clusterId),
    auth.localNamespace,
  );
  const grants = new Map((rr?.status?.reflectorPlugins ?? []).map((g) => [g.name, g]));
  const out: ReadyPlugin[] = [];
  for (const p of store.ready()) {
    const g = grants.get(p.name);
    if (g?.state !== "Granted") continue;
    let covered = true;
    for (const r of p.manifest.resources) {
      const ref = await cfg.client
        .resourceFor(r.group ? `${r.group}/${r.version}` : r.version, r.kind)
        .catch(() => undefined);
      const need = verbsFor(r.direction);
      // A module upgraded with a kind the provider has not answered for yet waits for that answer.
      if (
        !ref ||
        !(g.rules ?? []).some(
          (rule) =>
            rule.apiGroups.includes(r.group) &&
            rule.resources.includes(ref.plural) &&
            need.every((v) => rule.verbs.includes(v)),
        )
      )
        covered = false;
    }
    if (covered) out.push(p);
  }
  return out;
}

/** The peer's runtime, rebuilt (the old one stopped) when the identity changed: a new identity was issued. */
export async function peerRuntime(ctx: ReconcileContext, auth: Authenticated, proxyUrl?: string): Promise<PeerRuntime> {
  const id = auth.remote.clusterID;
  const rt = ctx.peers.get(id);
  if (rt && rt.kubeconfig === auth.kubeconfig && rt.proxyUrl === proxyUrl) return rt;
  if (rt) await stopRuntime(rt, ctx.log, false);
  const fresh: PeerRuntime = {
    clusterId: id,
    kubeconfig: auth.kubeconfig,
    proxyUrl,
    remote: peerClient(auth.kubeconfig, proxyUrl),
  };
  ctx.peers.set(id, fresh);
  return fresh;
}

/**
 * With networking enabled, pod IPs reported back and endpoints reflected out are translated by
 * the network fabric (overlapping pod CIDRs are remapped); with networkingEnabled No, not at all.
 */
async function peerTranslator(
  ctx: ReconcileContext,
  st: StatusWriter,
  rt: PeerRuntime,
  remoteClusterId: string,
): Promise<IpTranslator | undefined> {
  if (st.fc.spec.networkingEnabled === "No") return undefined;
  if (ctx.cfg.ipTranslator) return ctx.cfg.ipTranslator(remoteClusterId);
  if (!rt.translation) {
    // A crash-safe cache like the rest of the runtime: rebuilt from the API after a restart.
    const log = ctx.log.child({ remoteClusterId });
    const watcher = createTranslationWatcher({
      client: ctx.cfg.client,
      remoteClusterId,
      logger: log,
      onError: (err, ip, direction) => log.warn("address not translated", { ip, direction, err: err.message }),
    });
    await watcher.start();
    rt.translation = watcher;
  }
  return rt.translation.translateIp;
}

/** What the steps of one outgoing reconcile share. */
interface OutgoingPeering {
  ctx: ReconcileContext;
  st: StatusWriter;
  auth: Authenticated;
  /** The peer's runtime: the replicator and the virtual kubelet running for it. */
  rt: PeerRuntime;
}

/**
 * Brings the outgoing peering up, one step after the other: each step either ensures its part and
 * goes on, or writes why the peering waits and throws RetryAfterError.
 */
export async function outgoing(ctx: ReconcileContext, st: StatusWriter, auth: Authenticated): Promise<void> {
  const rt = await peerRuntime(ctx, auth, st.fc.spec.foreignProxyUrl || undefined);
  const p: OutgoingPeering = { ctx, st, auth, rt };
  await unloadRemovedPlugins(p);
  const sent = await sendResourceRequest(p);
  await ensureReplicator(p);
  const offer = await acceptOffer(p, sent);
  const resources = await offeredCapacity(p, offer);
  const kubelet = await kubeletServing(p);
  const vk = await ensureVirtualKubelet(p, kubelet, offer, resources);
  await followStorageClass(vk, kubelet, offer);
  await loadGrantedPlugins(p, vk);
  await markOfferCreated(p, offer);
  await waitForVirtualNode(p, vk);
  await reportEstablished(p, vk, resources);
}

/** How long a restarted controller keeps an Established peering so while its virtual kubelet's first probes run. */
export const RESTART_GRACE_MS = 30_000;

const outgoingStatus = (st: StatusWriter) =>
  st.fc.status?.peeringConditions?.find((c) => c.type === "OutgoingPeering")?.status;

/** Within the grace after a restart of an Established peering (see PeerRuntime.resumedAt). */
const resuming = (rt: PeerRuntime) => rt.resumedAt !== undefined && Date.now() - rt.resumedAt < RESTART_GRACE_MS;

/** Writes that the peering waits (OutgoingPeering Pending) and re-queues after retryMs. */
async function pending(p: OutgoingPeering, reason: string, message: string, retryMs: number): Promise<never> {
  p.st.set({ type: "OutgoingPeering", status: "Pending", reason, message });
  await p.st.flush();
  throw new RetryAfterError(retryMs, reason);
}

/** Our ResourceRequest as namespace/name, for messages. */
const requestKey = (p: OutgoingPeering) => `${p.auth.localNamespace}/${resourceRequestName(p.ctx.cfg.local.clusterId)}`;

/** The capacity a virtual node was given, in the form PeerRuntime.resources keeps to spot a change. */
const capacityKey = (resources: Record<string, string>) => JSON.stringify(Object.entries(resources).sort());

/** Ensures a plugin removed from the store is unloaded before the request stops listing it. */
async function unloadRemovedPlugins(p: OutgoingPeering): Promise<void> {
  const { cfg, log } = p.ctx;
  // The provider then revokes its rights and deletes its copies, with no reflector of ours left to
  // write them back.
  if (p.rt.vk && cfg.plugins)
    await syncDropins(p.rt.vk.engine, cfg.plugins.ready(), cfg.liqoNamespace, log, "removals");
}

/** Ensures our ResourceRequest is applied in the local tenant namespace, and returns it as applied. */
async function sendResourceRequest(p: OutgoingPeering): Promise<ResourceRequest & KubeObject> {
  const { cfg } = p.ctx;
  // Without --auth-url (the chart on a cluster with neither load balancer nor auth.url), the
  // provider learns where our auth service is as liqoctl generate peer-command would print it.
  const rr = resourceRequest(
    p.ctx,
    p.auth,
    cfg.authUrl || (await readAuthUrl(cfg.client, cfg.liqoNamespace)) || "",
    p.st.fc.spec.requestedResources as Record<string, string | number> | undefined,
  );
  return cfg.client.apply<ResourceRequest & KubeObject>(ResourceRequestResource, rr, {
    fieldManager: FIELD_MANAGER,
    force: true,
  });
}

/** Ensures the CRD replicator runs: it sends our request to the provider and brings its offer back. */
async function ensureReplicator(p: OutgoingPeering): Promise<void> {
  const { cfg, log } = p.ctx;
  const { auth, rt } = p;
  if (rt.replicator) return;
  const factory = cfg.replicator;
  if (!factory)
    return pending(
      p,
      "NoReplicator",
      `ResourceRequest ${requestKey(p)} is written but this controller-manager has no CRD replicator to send it to ${auth.remote.clusterName}`,
      30_000,
    );
  const replicator = factory({
    local: cfg.client,
    remote: rt.remote,
    localClusterId: cfg.local.clusterId,
    remoteClusterId: auth.remote.clusterID,
    localTenantNamespace: auth.localNamespace,
    remoteTenantNamespace: auth.remoteNamespace,
    logger: log,
    registry: cfg.registry,
  });
  await replicator.start();
  rt.replicator = replicator;
}

/** Ensures the provider's current ResourceOffer is accepted, and returns it. */
async function acceptOffer(p: OutgoingPeering, sent: ResourceRequest & KubeObject): Promise<Offer> {
  const { cfg, log } = p.ctx;
  const { auth } = p;
  const theirs = (await cfg.client.list<Offer>(ResourceOfferResource, { namespace: auth.localNamespace })).items.filter(
    (o) => o.spec.clusterId === auth.remote.clusterID && !o.metadata.deletionTimestamp,
  );
  const offer = theirs.find((o) => !o.spec.withdrawalTimestamp);
  if (!offer) return withoutOffer(p, theirs, sent.status?.refusal);
  if (offer.status?.phase !== "Accepted") {
    await cfg.client.mergePatch(
      ResourceOfferResource,
      offer.metadata.name!,
      offer.metadata.namespace,
      { status: { phase: "Accepted" } },
      "status",
    );
    log.info("resource offer accepted", {
      remoteClusterId: auth.remote.clusterID,
      offer: objectKey(offer),
    });
  }
  return offer;
}

/** Ensures nothing stands for an offer that is gone, then waits for one or reports the provider's refusal. */
async function withoutOffer(p: OutgoingPeering, theirs: Offer[], refusal: string | undefined): Promise<never> {
  const { st, auth } = p;
  const remoteName = auth.remote.clusterName;
  // The provider withdrew its offer, or refuses us, while we peer: the virtual node goes, and
  // the offer is released so the provider need not wait for its timeout. An offer merely not
  // seen yet (the replicator relisting) stops nothing.
  if (p.rt.vk && (theirs.length > 0 || refusal)) await stopVirtualKubelet(p, p.rt.vk);
  await releaseOffers(p, theirs);
  if (refusal) {
    st.set({
      type: "OutgoingPeering",
      status: "Denied",
      reason: "IncomingPeeringDisabled",
      message: `${remoteName} makes no ResourceOffer: ${refusal}`,
    });
    await st.flush();
    throw new RetryAfterError(30_000, "refused by the provider");
  }
  return pending(
    p,
    "WaitingForResourceOffer",
    `ResourceRequest ${requestKey(p)} sent to ${remoteName}; waiting for its ResourceOffer (is the resourcerequest controller running in ${remoteName}'s liqo controller-manager?)`,
    10_000,
  );
}

/** Ensures the virtual kubelet of a withdrawn offer is stopped and its node deleted. */
async function stopVirtualKubelet(p: OutgoingPeering, vk: VirtualKubelet): Promise<void> {
  const { log } = p.ctx;
  const { rt } = p;
  rt.vk = undefined;
  rt.resources = undefined;
  await bounded(vk.remove(), 15_000, "stopping the virtual kubelet", log);
  rt.metrics?.close();
  rt.metrics = undefined;
  log.info("virtual kubelet stopped: the provider withdrew its offer", { remoteClusterId: p.auth.remote.clusterID });
}

/** Ensures no offer of the provider says a virtual kubelet stands for it. */
async function releaseOffers(p: OutgoingPeering, offers: Offer[]): Promise<void> {
  for (const o of offers) {
    if ((o.status?.virtualKubeletStatus ?? "None") !== "None")
      await p.ctx.cfg.client.mergePatch(
        ResourceOfferResource,
        o.metadata.name!,
        o.metadata.namespace,
        { status: { virtualKubeletStatus: "None" } },
        "status",
      );
  }
}

/** The resources the offer grants; while it grants none, waits for a new offer. */
async function offeredCapacity(p: OutgoingPeering, offer: Offer): Promise<Record<string, string>> {
  const resources = offeredResources(offer.spec.resourceQuota?.hard);
  if (Object.keys(resources).length === 0)
    return pending(
      p,
      "EmptyResourceOffer",
      `the ResourceOffer of ${p.auth.remote.clusterName} offers no resources (spec.resourceQuota.hard is empty); waiting for a new offer`,
      15_000,
    );
  return resources;
}

/** The serving certificate an in-process virtual kubelet needs; without it the peering is in Error. */
async function kubeletServing(p: OutgoingPeering): Promise<KubeletServing> {
  const { kubelet } = p.ctx.cfg;
  if (kubelet) return kubelet;
  p.st.set({
    type: "OutgoingPeering",
    status: "Error",
    reason: "NoKubeletServingCertificate",
    message: `cannot start the virtual kubelet for ${p.auth.remote.clusterName}: start the controller-manager with --kubelet-cert-file, --kubelet-key-file and --kubelet-client-ca-file`,
  });
  await p.st.flush();
  throw new RetryAfterError(60_000, "no kubelet serving certificate");
}

/** Ensures the virtual kubelet runs with the peering's share of the offer, and returns it. */
async function ensureVirtualKubelet(
  p: OutgoingPeering,
  kubelet: KubeletServing,
  offer: Offer,
  resources: Record<string, string>,
): Promise<VirtualKubelet> {
  const { ctx, auth, rt } = p;
  rt.offer = resources;
  rt.offerFrom = auth.remote.clusterName;
  // The peering's own node keeps what its VirtualNodes leave of the offer.
  const own = ctx.virtualNodes?.share(auth.remote.clusterID, resources) ?? resources;
  if (!rt.vk) return startPeerKubelet(p, kubelet, offer, own);
  if (rt.resources !== capacityKey(own)) await resizeVirtualNode(p, rt.vk, own);
  return rt.vk;
}

/** Ensures a virtual kubelet (node liqo-<peer>) runs for the peer, started with the offer. */
async function startPeerKubelet(
  p: OutgoingPeering,
  kubelet: KubeletServing,
  offer: Offer,
  own: Record<string, string>,
): Promise<VirtualKubelet> {
  const { ctx, st, auth, rt } = p;
  const { cfg, log } = ctx;
  const remoteName = auth.remote.clusterName;
  // Established before this process started (a restart): the virtual node is still there and Ready,
  // so the condition stays as it is while the kubelet starts again.
  if (outgoingStatus(st) === "Established") rt.resumedAt = Date.now();
  else {
    st.set({
      type: "OutgoingPeering",
      status: "Pending",
      reason: "StartingVirtualKubelet",
      message: `offer of ${remoteName} accepted; starting the virtual kubelet (node liqo-${remoteName})`,
    });
    await st.flush();
  }
  const ipTranslator = await peerTranslator(ctx, st, rt, auth.remote.clusterID);
  // One registry serves every peering's virtual kubelet: each gets a view labelled with its peer.
  rt.metrics ??= cfg.registry ? peerRegistry(cfg.registry, auth.remote.clusterID) : undefined;
  const vk = await startVirtualKubelet({
    local: cfg.client,
    remote: rt.remote,
    localClusterId: cfg.local.clusterId,
    remoteClusterId: auth.remote.clusterID,
    remoteClusterName: remoteName,
    remoteClusterLabels: { ...(offer.spec.labels ?? {}) },
    resources: own,
    kubeletHost: kubelet.host,
    kubeletPort: 0,
    tls: kubelet.tls,
    clientCA: kubelet.clientCA,
    registry: rt.metrics,
    logger: log,
    ipTranslator,
    translationPending: rt.translation?.pending,
    apiServerUrl: kubelet.apiServerUrl,
    storage: storageFor(kubelet.virtualStorageClass, offer.spec.storageClasses),
    reflectionPolicy: cfg.reflectionPolicy,
    continuityThresholdMs: cfg.continuity?.thresholdMs,
    tunnelUnreachableSince: cfg.continuity?.tunnelUnreachableSince
      ? () => cfg.continuity!.tunnelUnreachableSince!(auth.remote.clusterID)
      : undefined,
  });
  rt.vk = vk;
  rt.resources = capacityKey(own);
  reflectAgainOnNewMappings(rt, vk);
  log.info("virtual kubelet started", {
    remoteClusterId: auth.remote.clusterID,
    node: vk.nodeName,
    kubelet: vk.api.url,
  });
  ctx.virtualNodes?.kick(auth.remote.clusterID);
  return vk;
}

/** Ensures what was reflected untranslated is reflected again once the fabric's mappings change. */
function reflectAgainOnNewMappings(rt: PeerRuntime, vk: VirtualKubelet): void {
  // An address the fabric could not translate yet (a third cluster's endpoint waiting for its
  // external-CIDR address) was reflected as is; when the mappings change, reflect again. The
  // offloaded pods only when their IPs translate differently (the peer's NetworkConfig), not on
  // every NatMapping entry: that would re-examine every pod for each third-cluster endpoint.
  // A burst of mapping changes (one per allocated address) re-queues everything once, not per change.
  let requeueSoon: ReturnType<typeof setTimeout> | undefined;
  let backward = rt.translation?.backwardKey?.();
  rt.translation?.onChange?.(() => {
    requeueSoon ??= setTimeout(() => {
      requeueSoon = undefined;
      vk.engine.requeueAll();
      const now = rt.translation?.backwardKey?.();
      if (now === backward) return;
      backward = now;
      vk.offloader.resyncAll();
    }, 200);
  });
}

/** Ensures the virtual node's capacity follows a changed offer. */
async function resizeVirtualNode(p: OutgoingPeering, vk: VirtualKubelet, own: Record<string, string>): Promise<void> {
  const { ctx, auth } = p;
  await vk.updateResources(own);
  p.rt.resources = capacityKey(own);
  ctx.log.info("virtual node capacity updated from the offer", {
    remoteClusterId: auth.remote.clusterID,
    resources: own,
  });
  ctx.virtualNodes?.kick(auth.remote.clusterID);
}

/** Ensures new claims get the storage class the provider offers now. */
async function followStorageClass(vk: VirtualKubelet, kubelet: KubeletServing, offer: Offer): Promise<void> {
  // The provider's class changed (or it stopped or started offering one): new claims follow.
  await vk.updateStorage(storageFor(kubelet.virtualStorageClass, offer.spec.storageClasses));
}

/** Ensures the virtual kubelet runs the drop-in plugins the provider granted. */
async function loadGrantedPlugins(p: OutgoingPeering, vk: VirtualKubelet): Promise<void> {
  const { cfg, log } = p.ctx;
  if (!cfg.plugins) return;
  const sync = await syncDropins(vk.engine, await grantedPlugins(p.ctx, p.auth), cfg.liqoNamespace, log);
  if (sync.failed.length)
    log.warn("drop-in plugins not loaded", { remoteClusterId: p.auth.remote.clusterID, failed: sync.failed });
}

/** Ensures the offer says a virtual kubelet stands for it. */
async function markOfferCreated(p: OutgoingPeering, offer: Offer): Promise<void> {
  if (offer.status?.virtualKubeletStatus === "Created") return;
  await p.ctx.cfg.client.mergePatch(
    ResourceOfferResource,
    offer.metadata.name!,
    offer.metadata.namespace,
    { status: { phase: "Accepted", virtualKubeletStatus: "Created" } },
    "status",
  );
}

/** Ensures the virtual node is Ready; waits for it otherwise. */
async function waitForVirtualNode(p: OutgoingPeering, vk: VirtualKubelet): Promise<void> {
  const node = vk.node.status();
  if (!node.ready && resuming(p.rt)) throw new RetryAfterError(1000, "WaitingForVirtualNode");
  if (!node.ready)
    await pending(
      p,
      "WaitingForVirtualNode",
      `virtual node ${vk.nodeName} is not Ready yet: ${node.error ?? node.lastProbeError ?? "waiting for the first health probe of the remote API server"}`,
      2000,
    );
}

/** Reports the outgoing peering Established, with the capacity the provider offers. */
async function reportEstablished(
  p: OutgoingPeering,
  vk: VirtualKubelet,
  resources: Record<string, string>,
): Promise<void> {
  const capacity = Object.entries(resources)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  p.st.set({
    type: "OutgoingPeering",
    status: "Established",
    reason: "VirtualNodeReady",
    message: `virtual node ${vk.nodeName} is Ready with ${capacity} offered by ${p.auth.remote.clusterName}`,
  });
  await p.st.flush();
}
