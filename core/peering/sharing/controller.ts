// The provider's ResourceRequest controller. For each tenant namespace holding a consumer's
// (replicated) ResourceRequest it keeps one ResourceOffer — a share of this cluster's free
// physical resources, labelled to be replicated back to that consumer — current as nodes and
// pods change; it withdraws the offer when the request is withdrawn, and when the request is
// deleted it deletes the offer and revokes the consumer's identity and tenant namespace.
// Keyed by tenant namespace, so the request, its offer and the ForeignCluster are one unit.
import {
  ForeignClusterResource,
  OfferPhase,
  ResourceOfferResource,
  ResourceRequestResource,
  VirtualKubeletStatus,
  type ForeignCluster,
  type ResourceOffer,
  type ResourceRequest,
} from "../../apis/index.ts";
import {
  DISCOVERY_CLUSTER_ID_LABEL,
  REMOTE_CLUSTER_ID_LABEL,
  REPLICATION_DESTINATION_LABEL,
  REPLICATION_ORIGIN_LABEL,
  REPLICATION_REQUESTED_LABEL,
  REPLICATION_STATUS_LABEL,
  TENANT_NAMESPACE_LABEL,
} from "../../apis/labels.ts";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../../kube/errors.ts";
import { createInformer, type Informer } from "../../kube/informer.ts";
import { keyOf, objectKey, Resources, type KubeObject } from "../../kube/resources.ts";
import { createWorkQueue, type WorkQueue } from "../../kube/workqueue.ts";
import { silentLogger, type Logger } from "../../log.ts";
import type { Registry } from "../../metrics/index.ts";
import { createEventRecorder } from "../../kube/events.ts";
import { revokeIdentity } from "../auth/tenant.ts";
import { applyPluginGrants } from "../auth/plugin-grants.ts";
import { decidePluginGrants } from "../auth/plugin-rbac.ts";
import type { LocalClusterIdentity } from "../identity.ts";
import {
  ensureIncomingForeignCluster,
  ForeignClusterError,
  setIncomingPeering,
  type IncomingStatus,
} from "./foreigncluster.ts";
import { decideOffer, parseResourceAmounts, type ResourceGrant } from "./resources.ts";
import {
  freeFor,
  parseSharingPercentage,
  sameQuota,
  summarizeUsage,
  type Node,
  type Pod,
  type Usage,
} from "./offer.ts";
import { sameJson } from "../replicator/forge.ts";
import { incomingAllowed, incomingDisabledMessage } from "../incoming.ts";

/** How soon a reflector plugin grant that failed (RBAC the controller manager lacks) is tried again. */
export const PLUGIN_GRANT_RETRY_MS = 30_000;

/** Held on a ResourceRequest until its offer is gone and the consumer's identity revoked (Liqo's name). */
export const TENANT_FINALIZER = "liqo.io/tenant";
export const SHARING_FIELD_MANAGER = "liqo-resourcerequest";

export interface ResourceRequestControllerOptions {
  client: KubeClient;
  clusterIdentity: LocalClusterIdentity;
  /** 0–100, default 50. */
  sharingPercentage?: number;
  /** The labels the offer gives the consumer's virtual node (default: the identity's cluster labels). */
  clusterLabels?: Record<string, string>;
  logger?: Logger;
  registry?: Registry;
  /** Recompute every offer this often even without events (default 5 minutes; 0: never). */
  resyncMs?: number;
  /** Node and pod changes are gathered this long before offers are recomputed (default 1s). */
  debounceMs?: number;
  /** A withdrawn offer the consumer still uses is deleted after this long anyway (default 2 minutes). */
  withdrawalTimeoutMs?: number;
  /** Between deleting the offer and revoking the identity, so the consumer's replicator sees the deletion (default 2s). */
  revokeGraceMs?: number;
  /** The clock for withdrawal timestamps and the timeout (tests move it forward). */
  now?: () => number;
  /** The storage classes offered (the storage fabric; none: the offer states none). */
  storageClasses?: () => { storageClassName: string; default?: boolean }[];
}

export interface ResourceRequestController {
  start(): Promise<void>;
  stop(): Promise<void>;
  synced(): boolean;
  /** Reconciles one tenant namespace now (tests call it directly). */
  handle(namespace: string): Promise<void>;
  idle(): Promise<void>;
  /** Recomputes every offer now: an input the controller does not watch changed (the StorageClasses). */
  requeueAll(): void;
}

type Labelled = KubeObject;

export function createResourceRequestController(o: ResourceRequestControllerOptions): ResourceRequestController {
  const { client, clusterIdentity: me } = o;
  const percentage = parseSharingPercentage(o.sharingPercentage ?? 50);
  const clusterLabels = o.clusterLabels ?? me.clusterLabels;
  const withdrawalTimeoutMs = o.withdrawalTimeoutMs ?? 120_000;
  const revokeGraceMs = o.revokeGraceMs ?? 2_000;
  const clock = o.now ?? Date.now;
  const log = (o.logger ?? silentLogger).child({ controller: "resourcerequest" });
  const events = createEventRecorder(client, "liqo-resourcerequest", log);
  const offerWrites =
    o.registry && !o.registry.has("liqo_resourceoffer_writes_total")
      ? o.registry.counter({
          name: "liqo_resourceoffer_writes_total",
          help: "ResourceOffer creations, updates and deletions by the provider.",
        })
      : undefined;

  // Only copies made by a consumer's replicator are requests to serve; our own outgoing requests
  // (liqo.io/replication=true) are the consumer side's business.
  const requests: Informer<ResourceRequest> = createInformer({
    client,
    resource: ResourceRequestResource,
    labelSelector: `${REPLICATION_STATUS_LABEL}=true`,
    logger: log,
  });
  const offers: Informer<ResourceOffer> = createInformer({
    client,
    resource: ResourceOfferResource,
    labelSelector: `${REPLICATION_REQUESTED_LABEL}=true`,
    logger: log,
  });
  const tenants: Informer<Labelled> = createInformer({
    client,
    resource: Resources.namespaces,
    labelSelector: `${TENANT_NAMESPACE_LABEL}=true`,
    logger: log,
  });
  const twins: Informer<Labelled> = createInformer({
    client,
    resource: Resources.namespaces,
    labelSelector: REMOTE_CLUSTER_ID_LABEL,
    logger: log,
  });
  const nodes: Informer<Node> = createInformer({ client, resource: Resources.nodes, logger: log });
  const pods: Informer<Pod> = createInformer({ client, resource: Resources.pods, logger: log });
  const fcs: Informer<ForeignCluster> = createInformer({ client, resource: ForeignClusterResource, logger: log });
  const informers = [requests, offers, tenants, twins, nodes, pods, fcs] as Informer<KubeObject>[];
  let queue: WorkQueue | undefined;
  /** When each namespace's offer was deleted on the way to revocation (in memory: after a crash, revoking at once is fine). */
  const offerGoneAt = new Map<string, number>();
  /** The last summary of nodes and pods; dropped on any node, pod or twin-namespace event. */
  let usage: Usage | undefined;
  let debounce: ReturnType<typeof setTimeout> | undefined;
  let resync: ReturnType<typeof setInterval> | undefined;

  const offerName = () => me.clusterName; // Liqo names the offer after the cluster that makes it
  const foreignClusterOf = (id: string) => fcs.list().find((f) => f.spec?.clusterIdentity?.clusterID === id);

  async function incoming(
    consumerId: string,
    status: IncomingStatus,
    reason: string,
    message: string,
    tenantNamespace?: string,
  ) {
    const fc = foreignClusterOf(consumerId);
    if (fc) await setIncomingPeering(client, fc, status, reason, message, tenantNamespace);
  }

  async function patchRequestStatus(rr: ResourceRequest, status: Record<string, unknown>) {
    const current = rr.status ?? {};
    if (
      Object.entries(status).every(
        ([k, v]) => JSON.stringify((current as Record<string, unknown>)[k]) === JSON.stringify(v ?? undefined),
      )
    )
      return;
    await client.mergePatch(
      ResourceRequestResource,
      rr.metadata.name!,
      rr.metadata.namespace,
      { metadata: { resourceVersion: rr.metadata.resourceVersion }, status },
      "status",
    );
  }

  async function deleteOffer(offer: ResourceOffer | undefined) {
    if (!offer || offer.metadata.deletionTimestamp) return false;
    const deleted = await client.delete(ResourceOfferResource, offer.metadata.name!, offer.metadata.namespace, {
      uid: offer.metadata.uid,
    });
    if (deleted) offerWrites?.inc();
    return deleted;
  }

  /**
   * The offer's amounts: the fixed ones the provider set on the consumer's ForeignCluster
   * (spec.offeredResources), else the percentage; of those, min(asked, rule) for what the consumer
   * asked (spec.requestedResources). An unreadable fixed or asked amount keeps the current offer's
   * amounts (none yet: the percentage alone) and is reported: on the ForeignCluster (an Event) for
   * the provider's field, in the request's status for the consumer's.
   */
  function decide(rr: ResourceRequest, consumerId: string, current: ResourceOffer | undefined) {
    // One pass over nodes and pods per change, shared by every consumer's offer.
    usage ??= summarizeUsage({
      nodes: nodes.list(),
      pods: pods.list(),
      namespaceLabels: (ns) => twins.get(ns)?.metadata.labels,
    });
    const free = freeFor(usage, consumerId);
    const fc = foreignClusterOf(consumerId);
    const fixed = parseResourceAmounts(
      fc?.spec.offeredResources as Record<string, string | number> | undefined,
      `ForeignCluster ${fc?.metadata.name} spec.offeredResources`,
    );
    const asked = parseResourceAmounts(
      rr.spec.requestedResources as Record<string, string | number> | undefined,
      `ResourceRequest ${rr.metadata.namespace}/${rr.metadata.name} spec.requestedResources`,
    );
    if (fixed.errors.length && fc)
      events.warning(
        fc,
        "InvalidOfferedResources",
        `${fixed.errors.join("; ")}; the offer to ${rr.spec.clusterIdentity.clusterName} keeps its last amounts until this is fixed`,
      );
    const problems = [...fixed.errors, ...asked.errors];
    const decision = decideOffer(free, percentage, fixed.errors.length ? undefined : fixed.amounts, asked.amounts);
    const kept = current?.spec.resourceQuota?.hard;
    if (problems.length && kept)
      return {
        hard: kept as Record<string, string>,
        grants: rr.status?.resourceGrants ?? null,
        refusal: asked.errors.length ? `${asked.errors.join("; ")}; the last offer stands` : null,
      };
    return {
      hard: decision.hard,
      grants: decision.grants.length ? decision.grants : null,
      refusal: asked.errors.length ? `${asked.errors.join("; ")}; the last offer stands` : null,
    } as { hard: Record<string, string>; grants: ResourceGrant[] | null; refusal: string | null };
  }

  function desiredOffer(
    rr: ResourceRequest,
    consumerId: string,
    withdrawal?: string,
    hard = decide(rr, consumerId, offers.get(keyOf(rr.metadata.namespace!, offerName()))).hard,
  ): ResourceOffer {
    const storageClasses = o.storageClasses?.() ?? [];
    return {
      apiVersion: "sharing.liqo.io/v1alpha1",
      kind: "ResourceOffer",
      metadata: {
        name: offerName(),
        namespace: rr.metadata.namespace,
        labels: { [REPLICATION_REQUESTED_LABEL]: "true", [REPLICATION_DESTINATION_LABEL]: consumerId },
        ownerReferences: [
          {
            apiVersion: "discovery.liqo.io/v1alpha1",
            kind: "ResourceRequest",
            name: rr.metadata.name!,
            uid: rr.metadata.uid!,
            controller: true,
          },
        ],
      },
      spec: {
        clusterId: me.clusterId,
        resourceQuota: { hard },
        labels: { ...clusterLabels },
        ...(storageClasses.length ? { storageClasses } : {}),
        ...(withdrawal ? { withdrawalTimestamp: withdrawal } : {}),
      },
    } as ResourceOffer;
  }

  const offerUpToDate = (cur: ResourceOffer | undefined, want: ResourceOffer) =>
    !!cur &&
    cur.spec.clusterId === want.spec.clusterId &&
    sameQuota(
      cur.spec.resourceQuota?.hard as Record<string, string>,
      want.spec.resourceQuota!.hard as Record<string, string>,
    ) &&
    sameJson(cur.spec.labels ?? {}, want.spec.labels) &&
    sameJson(cur.spec.storageClasses ?? [], want.spec.storageClasses ?? []) &&
    cur.spec.withdrawalTimestamp === want.spec.withdrawalTimestamp &&
    cur.metadata.labels?.[REPLICATION_DESTINATION_LABEL] === want.metadata.labels![REPLICATION_DESTINATION_LABEL];

  async function applyOffer(cur: ResourceOffer | undefined, want: ResourceOffer) {
    if (offerUpToDate(cur, want)) return;
    await client.apply(ResourceOfferResource, want, { fieldManager: SHARING_FIELD_MANAGER, force: true });
    offerWrites?.inc();
    log.info("offer written", {
      key: objectKey(want),
      hard: want.spec.resourceQuota?.hard,
      withdrawn: !!want.spec.withdrawalTimestamp,
    });
  }

  async function handle(ns: string) {
    const tenant = tenants.get(ns);
    const all = requests
      .list()
      .filter((r) => r.metadata.namespace === ns)
      .sort(
        (a, b) =>
          (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") ||
          a.metadata.name!.localeCompare(b.metadata.name!),
      );
    const offer = offers.get(keyOf(ns, offerName()));
    const consumerId = tenant?.metadata.labels?.[DISCOVERY_CLUSTER_ID_LABEL];
    if (!tenant || !consumerId) {
      // A request outside any tenant namespace comes from nobody we issued an identity to.
      for (const rr of all) {
        if (rr.metadata.deletionTimestamp) await dropFinalizer(rr);
        else
          events.warning(
            rr,
            "NotInTenantNamespace",
            `namespace ${ns} is not a tenant namespace (label ${TENANT_NAMESPACE_LABEL}=true); ResourceRequests are served only in the tenant namespace of the cluster that sent them`,
          );
      }
      return;
    }
    const [rr, ...extra] = all;
    for (const x of extra)
      events.warning(
        x,
        "DuplicateResourceRequest",
        `tenant namespace ${ns} already has ResourceRequest ${rr!.metadata.name}; only the oldest is served, delete this one`,
      );
    if (!rr) {
      if (await deleteOffer(offer)) log.info("offer deleted: no request left", { namespace: ns });
      await incoming(consumerId, "None", "NoResourceRequest", "the remote cluster has no ResourceRequest here");
      return;
    }
    const claimed = rr.spec?.clusterIdentity?.clusterID;
    if (claimed !== consumerId || rr.metadata.labels?.[REPLICATION_ORIGIN_LABEL] !== consumerId) {
      if (rr.metadata.deletionTimestamp) return dropFinalizer(rr);
      events.warning(
        rr,
        "ClusterIdentityMismatch",
        `ResourceRequest ${ns}/${rr.metadata.name} claims cluster ${claimed} (origin ${rr.metadata.labels?.[REPLICATION_ORIGIN_LABEL]}) ` +
          `but ${ns} is the tenant namespace of cluster ${consumerId}; it is ignored: a cluster may only ask for itself`,
      );
      return;
    }
    if (rr.metadata.deletionTimestamp) return release(rr, offer, consumerId);
    if (!rr.metadata.finalizers?.includes(TENANT_FINALIZER)) {
      await client.mergePatch(ResourceRequestResource, rr.metadata.name!, ns, {
        metadata: {
          resourceVersion: rr.metadata.resourceVersion,
          finalizers: [...(rr.metadata.finalizers ?? []), TENANT_FINALIZER],
        },
      });
      return; // the update event brings the key back with the new version
    }
    await ensureForeignCluster(rr);
    if (rr.spec.withdrawalTimestamp) return withdraw(rr, offer, consumerId);
    const fc = foreignClusterOf(consumerId);
    if (!incomingAllowed(fc))
      return refuse(
        rr,
        offer,
        consumerId,
        incomingDisabledMessage(fc!.metadata.name!, rr.spec.clusterIdentity.clusterName, me.clusterName),
      );

    const decision = decide(rr, consumerId, offer);
    await applyOffer(offer, desiredOffer(rr, consumerId, undefined, decision.hard));
    const plugins = await pluginGrants(rr, consumerId);
    await patchRequestStatus(rr, {
      offerState: "Created",
      offerWithdrawalTimestamp: null,
      reflectorPlugins: plugins,
      refusal: null,
      resourceGrants: decision.grants,
      resourceRefusal: decision.refusal,
    });
    const accepted = offer?.status?.phase === OfferPhase.Accepted;
    await incoming(
      consumerId,
      accepted ? "Established" : "Pending",
      accepted ? "OfferAccepted" : "OfferPending",
      accepted
        ? `cluster ${rr.spec.clusterIdentity.clusterName} accepted ResourceOffer ${ns}/${offerName()}`
        : `ResourceOffer ${ns}/${offerName()} waits for cluster ${rr.spec.clusterIdentity.clusterName} to accept it`,
      ns,
    );
  }

  /** What the consumer's reflector plugins may do here (auth/plugin-rbac.ts), applied; the answer for its status. */
  async function pluginGrants(rr: ResourceRequest, consumerId: string) {
    const twinNamespaces = twins
      .list()
      .filter((n) => n.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL] === consumerId && !n.metadata.deletionTimestamp)
      .map((n) => n.metadata.name!);
    let decisions, applied;
    try {
      decisions = await decidePluginGrants(client, rr.spec.reflectorPlugins);
      applied = await applyPluginGrants(
        client,
        { clusterId: consumerId, tenantNamespace: rr.metadata.namespace!, twinNamespaces },
        decisions,
        log,
      );
    } catch (err) {
      // The offer does not depend on it. The consumer is told (a plugin without an answer would
      // show as waiting forever), and the grant is tried again soon, not at the next resync.
      const kinds = [
        ...new Set(
          (rr.spec.reflectorPlugins ?? []).flatMap((p) =>
            (p.resources ?? []).map((r) => (r.group ? `${r.kind}.${r.group}` : r.kind)),
          ),
        ),
      ];
      const why =
        `granting failed here: ${(err as Error).message}; the fix, on this provider: ` +
        `${kinds.map((k) => `liqoctl plugin allow ${k} --grant`).join(", ") || "liqoctl plugin allow <kind> --grant"} ` +
        `(chart values reflection.grantPeerPlugins and reflection.pluginRules); retried every ${PLUGIN_GRANT_RETRY_MS / 1000} s`;
      events.warning(
        rr,
        "ReflectorPluginGrantFailed",
        `reflector plugins of cluster ${rr.spec.clusterIdentity.clusterName}: ${why}`,
      );
      log.warn("reflector plugin grants failed", { key: rr.metadata.namespace, err });
      queue?.addAfter(rr.metadata.namespace!, PLUGIN_GRANT_RETRY_MS);
      const answered = new Map((rr.status?.reflectorPlugins ?? []).map((g) => [g.name, g]));
      // Answers given before stand (their rights were applied then); the others say why they wait.
      return (rr.spec.reflectorPlugins ?? []).map(
        (p) => answered.get(p.name) ?? { name: p.name, state: "Refused" as const, message: why },
      );
    }
    const before = new Map((rr.status?.reflectorPlugins ?? []).map((g) => [g.name, g.state]));
    for (const d of decisions) {
      if (before.get(d.grant.name) === d.grant.state) continue;
      if (d.grant.state === "Refused") events.warning(rr, "ReflectorPluginRefused", d.grant.message ?? "");
      else events.normal(rr, "ReflectorPluginGranted", `plugin ${d.grant.name}: ${d.grant.message}`);
    }
    if (applied.revoked.length)
      events.normal(
        rr,
        "ReflectorPluginRevoked",
        `no plugin of cluster ${rr.spec.clusterIdentity.clusterName} reflects ${applied.revoked.join(", ")} any more: its rights removed, its reflected copies deleted`,
      );
    for (const s of applied.stuck) {
      // Its rights are gone; its copies stay until this controller may delete them (retried every pass).
      events.warning(
        rr,
        "ReflectorPluginCopiesLeft",
        `no plugin of cluster ${rr.spec.clusterIdentity.clusterName} reflects ${s.kind} any more, its rights are removed, but its reflected copies ` +
          `could not be deleted: ${s.error} (the controller manager needs list and delete on that kind: liqoctl plugin allow ${s.kind} --grant, chart value reflection.pluginRules); retried`,
      );
    }
    return decisions.length ? decisions.map((d) => d.grant) : null;
  }

  async function ensureForeignCluster(rr: ResourceRequest) {
    try {
      await ensureIncomingForeignCluster(
        client,
        foreignClusterOf(rr.spec.clusterIdentity.clusterID),
        rr.spec.clusterIdentity,
        rr.spec.authUrl,
      );
    } catch (err) {
      // The offer does not depend on it: report, and go on.
      if (err instanceof KubeApiError && err.status === 403) {
        events.warning(
          rr,
          "ForeignClusterNotRecorded",
          `cannot create ForeignCluster ${rr.spec.clusterIdentity.clusterName}: ${err.message}; ` +
            "give the controller manager's ServiceAccount create on foreignclusters.discovery.liqo.io (the chart's RBAC does)",
        );
        return;
      }
      if (!(err instanceof ForeignClusterError)) throw err;
      events.warning(rr, "ForeignClusterNotRecorded", err.message);
    }
  }

  async function withdraw(rr: ResourceRequest, offer: ResourceOffer | undefined, consumerId: string) {
    const ns = rr.metadata.namespace!;
    if (!offer) {
      await patchRequestStatus(rr, { offerState: "None" });
      await incoming(
        consumerId,
        "None",
        "OfferWithdrawn",
        `the peering with ${rr.spec.clusterIdentity.clusterName} ended at its request`,
      );
      return;
    }
    const since = offer.spec.withdrawalTimestamp;
    if (!since) {
      const now = new Date(clock()).toISOString().replace(/\.\d+Z$/, "Z");
      await applyOffer(offer, desiredOffer(rr, consumerId, now));
      await patchRequestStatus(rr, { offerWithdrawalTimestamp: now });
      await incoming(
        consumerId,
        "Disconnecting",
        "OfferWithdrawn",
        `ResourceOffer ${ns}/${offerName()} withdrawn; waiting for ${rr.spec.clusterIdentity.clusterName} to stop its virtual kubelet`,
      );
      throw new RetryAfterError(Math.min(withdrawalTimeoutMs, 5_000), "waiting for the consumer to release the offer");
    }
    const unused = (offer.status?.virtualKubeletStatus ?? VirtualKubeletStatus.None) === VirtualKubeletStatus.None;
    const left = Date.parse(since) + withdrawalTimeoutMs - clock();
    if (!unused && left > 0) {
      await incoming(
        consumerId,
        "Disconnecting",
        "OfferWithdrawn",
        `ResourceOffer ${ns}/${offerName()} withdrawn; waiting for ${rr.spec.clusterIdentity.clusterName} to stop its virtual kubelet`,
      );
      throw new RetryAfterError(Math.min(left, 5_000), "waiting for the consumer to release the offer");
    }
    if (!unused)
      events.warning(
        rr,
        "OfferWithdrawalTimeout",
        `the virtual kubelet of ${rr.spec.clusterIdentity.clusterName} still reported ${offer.status?.virtualKubeletStatus} ${withdrawalTimeoutMs / 1000}s after the withdrawal; the offer is deleted anyway`,
      );
    await deleteOffer(offer);
    await patchRequestStatus(rr, { offerState: "None" });
    await incoming(
      consumerId,
      "None",
      "OfferWithdrawn",
      `the peering with ${rr.spec.clusterIdentity.clusterName} ended at its request`,
    );
  }

  /**
   * Incoming peering disabled for this consumer: no offer; one already made is withdrawn as in
   * an unpeering (the consumer stops its virtual kubelet), then deleted. The identity stays, so
   * the consumer can still unpeer cleanly, and setting Auto or Yes again brings a new offer.
   */
  async function refuse(rr: ResourceRequest, offer: ResourceOffer | undefined, consumerId: string, why: string) {
    const ns = rr.metadata.namespace!;
    const denied = () => incoming(consumerId, "Denied", "IncomingPeeringDisabled", why, ns);
    if (rr.status?.refusal !== why) events.warning(rr, "IncomingPeeringDisabled", why);
    if (offer && !offer.spec.withdrawalTimestamp) {
      const now = new Date(clock()).toISOString().replace(/\.\d+Z$/, "Z");
      await applyOffer(offer, desiredOffer(rr, consumerId, now));
      await patchRequestStatus(rr, { offerWithdrawalTimestamp: now, refusal: why });
      await denied();
      throw new RetryAfterError(
        Math.min(withdrawalTimeoutMs, 5_000),
        "waiting for the consumer to release the refused offer",
      );
    }
    if (offer) {
      const unused = (offer.status?.virtualKubeletStatus ?? VirtualKubeletStatus.None) === VirtualKubeletStatus.None;
      const left = Date.parse(offer.spec.withdrawalTimestamp!) + withdrawalTimeoutMs - clock();
      if (!unused && left > 0) {
        await denied();
        throw new RetryAfterError(Math.min(left, 5_000), "waiting for the consumer to release the refused offer");
      }
      await deleteOffer(offer);
    }
    await patchRequestStatus(rr, { offerState: "None", refusal: why });
    await denied();
  }

  async function release(rr: ResourceRequest, offer: ResourceOffer | undefined, consumerId: string) {
    if (!rr.metadata.finalizers?.includes(TENANT_FINALIZER)) return;
    const ns = rr.metadata.namespace!;
    if (offer && !offer.metadata.deletionTimestamp) {
      await deleteOffer(offer);
      offerGoneAt.set(ns, clock());
    }
    // Give the consumer's replicator a moment to see the offer go while it can still read here
    // (the offer's delete event re-queues the namespace at once, hence the remembered time).
    const wait = (offerGoneAt.get(ns) ?? 0) + revokeGraceMs - clock();
    if (wait > 0) throw new RetryAfterError(wait, "offer deleted; revoking the identity next");
    offerGoneAt.delete(ns);
    await incoming(
      consumerId,
      "None",
      "ResourceRequestDeleted",
      `cluster ${rr.spec.clusterIdentity.clusterName} deleted its ResourceRequest; its identity here is revoked`,
    );
    const revoked = await revokeIdentity(client, consumerId);
    if (revoked.length) log.info("identity revoked", { consumerId, deleted: revoked });
    await dropFinalizer(rr);
  }

  async function dropFinalizer(rr: ResourceRequest) {
    if (!rr.metadata.finalizers?.includes(TENANT_FINALIZER)) return;
    await client.mergePatch(ResourceRequestResource, rr.metadata.name!, rr.metadata.namespace, {
      metadata: {
        resourceVersion: rr.metadata.resourceVersion,
        finalizers: rr.metadata.finalizers.filter((f) => f !== TENANT_FINALIZER),
      },
    });
  }

  const servedNamespaces = () => new Set([...requests.list(), ...offers.list()].map((x) => x.metadata.namespace!));
  const enqueueAll = () => {
    for (const ns of servedNamespaces()) queue?.add(ns);
  };
  // Node and pod churn comes in bursts; one recomputation per burst is enough.
  const soon = () => {
    usage = undefined;
    if (debounce) return;
    debounce = setTimeout(() => {
      debounce = undefined;
      enqueueAll();
    }, o.debounceMs ?? 1_000);
  };

  return {
    handle,
    requeueAll: enqueueAll,
    synced: () => informers.every((i) => i.synced),
    async idle() {
      await queue?.idle();
    },
    async start() {
      queue = createWorkQueue({
        name: "resourcerequests",
        handler: handle,
        workers: 2,
        logger: log,
        maxDelayMs: 30_000,
      });
      const byNamespace = (x: KubeObject) => queue?.add(x.metadata.namespace!);
      for (const inf of [requests, offers] as Informer<KubeObject>[])
        inf.on({ add: byNamespace, update: (_a, b) => byNamespace(b), delete: byNamespace });
      tenants.on({ add: (n) => queue?.add(n.metadata.name!), update: (_a, n) => queue?.add(n.metadata.name!) });
      // incomingPeeringEnabled changed: offers are made or withdrawn.
      fcs.on({
        add: enqueueAll,
        delete: enqueueAll,
        update: (a, b) => {
          // incomingPeeringEnabled or the fixed amounts (spec.offeredResources) changed.
          if (
            a.spec?.incomingPeeringEnabled !== b.spec?.incomingPeeringEnabled ||
            !sameJson(a.spec?.offeredResources ?? {}, b.spec?.offeredResources ?? {})
          )
            enqueueAll();
        },
      });
      for (const inf of [nodes, pods, twins] as Informer<KubeObject>[])
        inf.on({ add: soon, update: soon, delete: soon });
      for (const inf of informers) inf.start();
      await Promise.all(informers.map((i) => i.waitForSync()));
      queue.start();
      enqueueAll();
      const every = o.resyncMs ?? 300_000;
      if (every > 0) resync = setInterval(enqueueAll, every);
    },
    async stop() {
      clearTimeout(debounce);
      clearInterval(resync);
      await queue?.shutdown();
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
