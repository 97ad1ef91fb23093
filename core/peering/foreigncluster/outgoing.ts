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
import { startVirtualKubelet } from "../../virtualkubelet/start.ts";
import type { IpTranslator } from "../../reflection/abi.ts";
import { createTranslationWatcher } from "../../../netfabric/manager/translation-watch.ts";
import type { Authenticated } from "./authenticate.ts";
import { offeredResources } from "./conditions.ts";
import type { ReconcileContext, StatusWriter } from "./context.ts";
import { bounded, stopRuntime, type PeerRuntime } from "./runtime.ts";
import { peerClient } from "./secrets.ts";
import { peerRegistry } from "./peer-registry.ts";
import { storageFor } from "../../storage/offer.ts";

export const FIELD_MANAGER = "liqo-foreigncluster";
type Offer = ResourceOffer & KubeObject;

/** Liqo names the ResourceRequest after the requesting (local) cluster's ID. */
export const resourceRequestName = (localClusterId: string) => localClusterId;

export function resourceRequest(ctx: ReconcileContext, auth: Authenticated, authUrl = ctx.cfg.authUrl): KubeObject {
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

export async function outgoing(ctx: ReconcileContext, st: StatusWriter, auth: Authenticated): Promise<void> {
  const { cfg, log } = ctx;
  const remoteName = auth.remote.clusterName;
  const rt = await peerRuntime(ctx, auth, st.fc.spec.foreignProxyUrl || undefined);
  const pending = async (reason: string, message: string, retryMs: number) => {
    st.set({ type: "OutgoingPeering", status: "Pending", reason, message });
    await st.flush();
    throw new RetryAfterError(retryMs, reason);
  };

  // Without --auth-url (the chart on a cluster with neither load balancer nor auth.url), the
  // provider learns where our auth service is as liqoctl generate peer-command would print it.
  // A plugin removed from the store stops before the request stops listing it: the provider then
  // revokes its rights and deletes its copies, with no reflector of ours left to write them back.
  if (rt.vk && cfg.plugins) await syncDropins(rt.vk.engine, cfg.plugins.ready(), cfg.liqoNamespace, log, "removals");
  const rr = resourceRequest(ctx, auth, cfg.authUrl || (await readAuthUrl(cfg.client, cfg.liqoNamespace)) || "");
  const sent = await cfg.client.apply<ResourceRequest & KubeObject>(ResourceRequestResource, rr, {
    fieldManager: FIELD_MANAGER,
    force: true,
  });
  if (!rt.replicator) {
    if (!cfg.replicator) {
      await pending(
        "NoReplicator",
        `ResourceRequest ${auth.localNamespace}/${rr.metadata.name} is written but this controller-manager has no CRD replicator to send it to ${remoteName}`,
        30_000,
      );
    }
    const replicator = cfg.replicator!({
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

  const theirs = (await cfg.client.list<Offer>(ResourceOfferResource, { namespace: auth.localNamespace })).items.filter(
    (o) => o.spec.clusterId === auth.remote.clusterID && !o.metadata.deletionTimestamp,
  );
  const offer = theirs.find((o) => !o.spec.withdrawalTimestamp);
  if (!offer) {
    // The provider withdrew its offer, or refuses us, while we peer: the virtual node goes, and
    // the offer is released so the provider need not wait for its timeout. An offer merely not
    // seen yet (the replicator relisting) stops nothing.
    const refusal = sent.status?.refusal;
    if (rt.vk && (theirs.length > 0 || refusal)) {
      const vk = rt.vk;
      rt.vk = undefined;
      rt.resources = undefined;
      await bounded(vk.remove(), 15_000, "stopping the virtual kubelet", log);
      rt.metrics?.close();
      rt.metrics = undefined;
      log.info("virtual kubelet stopped: the provider withdrew its offer", { remoteClusterId: auth.remote.clusterID });
    }
    for (const o of theirs) {
      if ((o.status?.virtualKubeletStatus ?? "None") !== "None")
        await cfg.client.mergePatch(
          ResourceOfferResource,
          o.metadata.name!,
          o.metadata.namespace,
          { status: { virtualKubeletStatus: "None" } },
          "status",
        );
    }
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
    await pending(
      "WaitingForResourceOffer",
      `ResourceRequest ${auth.localNamespace}/${rr.metadata.name} sent to ${remoteName}; waiting for its ResourceOffer (is the resourcerequest controller running in ${remoteName}'s liqo controller-manager?)`,
      10_000,
    );
    return;
  }
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
  const resources = offeredResources(offer.spec.resourceQuota?.hard);
  if (Object.keys(resources).length === 0) {
    await pending(
      "EmptyResourceOffer",
      `the ResourceOffer of ${remoteName} offers no resources (spec.resourceQuota.hard is empty); waiting for a new offer`,
      15_000,
    );
  }
  if (!cfg.kubelet) {
    st.set({
      type: "OutgoingPeering",
      status: "Error",
      reason: "NoKubeletServingCertificate",
      message: `cannot start the virtual kubelet for ${remoteName}: start the controller-manager with --kubelet-cert-file, --kubelet-key-file and --kubelet-client-ca-file`,
    });
    await st.flush();
    throw new RetryAfterError(60_000, "no kubelet serving certificate");
  }

  rt.offer = resources;
  rt.offerFrom = remoteName;
  // The peering's own node keeps what its VirtualNodes leave of the offer.
  const own = ctx.virtualNodes?.share(auth.remote.clusterID, resources) ?? resources;
  const wanted = JSON.stringify(Object.entries(own).sort());
  if (!rt.vk) {
    st.set({
      type: "OutgoingPeering",
      status: "Pending",
      reason: "StartingVirtualKubelet",
      message: `offer of ${remoteName} accepted; starting the virtual kubelet (node liqo-${remoteName})`,
    });
    await st.flush();
    const ipTranslator = await peerTranslator(ctx, st, rt, auth.remote.clusterID);
    // One registry serves every peering's virtual kubelet: each gets a view labelled with its peer.
    rt.metrics ??= cfg.registry ? peerRegistry(cfg.registry, auth.remote.clusterID) : undefined;
    rt.vk = await startVirtualKubelet({
      local: cfg.client,
      remote: rt.remote,
      localClusterId: cfg.local.clusterId,
      remoteClusterId: auth.remote.clusterID,
      remoteClusterName: remoteName,
      remoteClusterLabels: { ...(offer.spec.labels ?? {}) },
      resources: own,
      kubeletHost: cfg.kubelet.host,
      kubeletPort: 0,
      tls: cfg.kubelet.tls,
      clientCA: cfg.kubelet.clientCA,
      registry: rt.metrics,
      logger: log,
      ipTranslator,
      apiServerUrl: cfg.kubelet.apiServerUrl,
      storage: storageFor(cfg.kubelet.virtualStorageClass, offer.spec.storageClasses),
      reflectionPolicy: cfg.reflectionPolicy,
    });
    rt.resources = wanted;
    // An address the fabric could not translate yet (a third cluster's endpoint waiting for its
    // external-CIDR address) was reflected as is; when the mappings change, reflect again.
    // A burst of mapping changes (one per allocated address) re-queues everything once, not per change.
    const vk = rt.vk;
    let requeueSoon: ReturnType<typeof setTimeout> | undefined;
    rt.translation?.onChange?.(() => {
      requeueSoon ??= setTimeout(() => {
        requeueSoon = undefined;
        vk.engine.requeueAll();
      }, 200);
    });
    log.info("virtual kubelet started", {
      remoteClusterId: auth.remote.clusterID,
      node: rt.vk.nodeName,
      kubelet: rt.vk.api.url,
    });
    ctx.virtualNodes?.kick(auth.remote.clusterID);
  } else if (rt.resources !== wanted) {
    await rt.vk.updateResources(own);
    rt.resources = wanted;
    log.info("virtual node capacity updated from the offer", {
      remoteClusterId: auth.remote.clusterID,
      resources: own,
    });
    ctx.virtualNodes?.kick(auth.remote.clusterID);
  }
  // The provider's class changed (or it stopped or started offering one): new claims follow.
  await rt.vk.updateStorage(storageFor(cfg.kubelet.virtualStorageClass, offer.spec.storageClasses));
  if (cfg.plugins) {
    const sync = await syncDropins(rt.vk.engine, await grantedPlugins(ctx, auth), cfg.liqoNamespace, log);
    if (sync.failed.length)
      log.warn("drop-in plugins not loaded", { remoteClusterId: auth.remote.clusterID, failed: sync.failed });
  }
  if (offer.status?.virtualKubeletStatus !== "Created") {
    await cfg.client.mergePatch(
      ResourceOfferResource,
      offer.metadata.name!,
      offer.metadata.namespace,
      { status: { phase: "Accepted", virtualKubeletStatus: "Created" } },
      "status",
    );
  }
  const node = rt.vk.node.status();
  if (!node.ready) {
    await pending(
      "WaitingForVirtualNode",
      `virtual node ${rt.vk.nodeName} is not Ready yet: ${node.error ?? node.lastProbeError ?? "waiting for the first health probe of the remote API server"}`,
      2000,
    );
  }
  const capacity = Object.entries(resources)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  st.set({
    type: "OutgoingPeering",
    status: "Established",
    reason: "VirtualNodeReady",
    message: `virtual node ${rt.vk.nodeName} is Ready with ${capacity} offered by ${remoteName}`,
  });
  await st.flush();
}
