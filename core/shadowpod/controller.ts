// The provider side of pod offloading: every ShadowPod is kept backed by a real Pod of the same
// name, owned by it (so deleting the ShadowPod deletes the pod), and re-created whenever it
// disappears — also while the consumer cannot be reached, which is the point of ShadowPods.
// Each re-creation is counted on the ShadowPod, so the consumer can add it to restart counts.
import { ResourceOfferResource, ShadowPodQuotaPhase, ShadowPodResource, type ResourceOffer } from "../apis/index.ts";
import {
  LOCAL_POD_LABEL,
  MANAGED_BY_LABEL,
  MANAGED_BY_SHADOWPOD,
  RECREATIONS_ANNOTATION,
  REMOTE_CLUSTER_ID_LABEL,
  REPLICATION_DESTINATION_LABEL,
  REPLICATION_ORIGIN_LABEL,
  SHADOWPOD_EVENT_COMPONENT,
  DISCOVERY_CLUSTER_ID_LABEL,
  TENANT_CORDONED_ANNOTATION,
  TENANT_NAMESPACE_LABEL,
} from "../apis/labels.ts";
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../kube/errors.ts";
import { createInformer, type Informer } from "../kube/informer.ts";
import { objectKey, Resources, type KubeObject } from "../kube/resources.ts";
import type { Pod } from "../kube/types.ts";
import { createWorkQueue, type WorkQueue } from "../kube/workqueue.ts";
import { silentLogger, type Logger } from "../log.ts";
import { createEventRecorder, type EventRecorder } from "../kube/events.ts";
import { metadataOnly, withoutManagedFields } from "../kube/slim.ts";
import type { Registry } from "../metrics/index.ts";
import { registerShadowPodMetrics } from "./metrics.ts";
import { providerPodSpec } from "./placement.ts";
import { podRequests } from "../peering/sharing/offer.ts";
import {
  exceeded,
  formatAmounts,
  QuotaLedger,
  withDefaultRequests,
  type DefaultRequests,
  type QuotaMode,
} from "./quota.ts";

const CREATED_ANNOTATION = "liqo.io/shadowpod-created";
/** The UID of the pod last created for the ShadowPod: which incarnation the count refers to. */
export const POD_UID_ANNOTATION = "liqo.io/shadowpod-pod-uid";

type QuotaStatus = {
  phase: ShadowPodQuotaPhase;
  counted?: Record<string, string>;
  overQuota?: boolean;
  message?: string;
};
type ShadowPod = KubeObject & { spec?: { pod?: Record<string, unknown> }; status?: { quota?: QuotaStatus } };

/**
 * The Pod a ShadowPod asks for: its spec (kept off this cluster's virtual nodes: placement.ts),
 * its labels and annotations, owned by the ShadowPod.
 */
export function podFor(shadow: ShadowPod, defaults?: DefaultRequests): Pod {
  const m = shadow.metadata;
  const annotations = { ...m.annotations };
  delete annotations[RECREATIONS_ANNOTATION];
  delete annotations[CREATED_ANNOTATION];
  delete annotations[POD_UID_ANNOTATION];
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: m.name,
      namespace: m.namespace,
      labels: { ...m.labels, [MANAGED_BY_LABEL]: MANAGED_BY_SHADOWPOD, [LOCAL_POD_LABEL]: "true" },
      annotations,
      ownerReferences: [
        {
          apiVersion: shadow.apiVersion ?? "virtualkubelet.liqo.io/v1alpha1",
          kind: "ShadowPod",
          name: m.name!,
          uid: m.uid!,
          controller: true,
        },
      ],
    },
    spec: defaults
      ? withDefaultRequests(providerPodSpec(shadow.spec?.pod), defaults)
      : providerPodSpec(shadow.spec?.pod),
  };
}

export function isOwnedBy(pod: Pod, shadow: ShadowPod): boolean {
  return !!pod.metadata.ownerReferences?.some((o) => o.kind === "ShadowPod" && o.uid === shadow.metadata.uid);
}

export interface ShadowPodController {
  handle(key: string): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly synced: boolean;
}

/** Pod Security Standards levels, least to most restrictive. */
export const POD_SECURITY_LEVELS = ["privileged", "baseline", "restricted"] as const;
export type PodSecurityLevel = (typeof POD_SECURITY_LEVELS)[number];
export const POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce";

/** The namespace label to write so pods there meet `level`, or undefined when it already does. */
export function podSecurityLabelFor(current: string | undefined, level: PodSecurityLevel): string | undefined {
  if (level === "privileged") return undefined;
  const now = POD_SECURITY_LEVELS.indexOf(current as PodSecurityLevel); // -1: missing or garbage
  return now >= POD_SECURITY_LEVELS.indexOf(level) ? undefined : level;
}

export function createShadowPodController(options: {
  client: KubeClient;
  logger?: Logger;
  workers?: number;
  namespace?: string;
  /**
   * The Pod Security Standard the pods peers ask for must meet (default baseline: no privileged
   * containers, host namespaces, hostPath volumes or host ports). Enforced by the API server's
   * PodSecurity admission: the namespace of each ShadowPod gets the enforce label before its pod
   * is created (a stricter label already there is kept). "privileged" leaves namespaces alone.
   */
  podSecurity?: PodSecurityLevel;
  /**
   * Quota enforcement (quota.ts): each ShadowPod of a peer's twin namespace is admitted against
   * that peer's ResourceOffer before its pod is created. Default hard.
   */
  quota?: { mode: QuotaMode; defaultRequests?: DefaultRequests };
  /** Where liqo_shadowpods is declared (counted at scrape time from the caches). */
  registry?: Registry;
}): ShadowPodController {
  const podSecurity = options.podSecurity ?? "baseline";
  const { client } = options;
  const log = (options.logger ?? silentLogger).child({ controller: "shadowpod" });
  const events: EventRecorder = createEventRecorder(client, SHADOWPOD_EVENT_COMPONENT, log);
  // Cached as handle reads them: ShadowPods whole but for managedFields (the pod spec is needed to
  // create the pod), pods as metadata only (existence, owner, UID, deletion): the pods' specs and
  // statuses were most of this controller's memory with thousands of pods.
  const shadows: Informer<ShadowPod> = createInformer({
    client,
    resource: ShadowPodResource,
    namespace: options.namespace,
    logger: log,
    transform: withoutManagedFields,
  });
  const pods: Informer<Pod> = createInformer({
    client,
    resource: Resources.pods,
    namespace: options.namespace,
    labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY_SHADOWPOD}`,
    logger: log,
    // The phase too, a few bytes, for liqo_shadowpods (metrics.ts).
    transform: (p) => ({ ...metadataOnly(p), ...(p.status?.phase && { status: { phase: p.status.phase } }) }),
  });
  const quotaMode = options.quota?.mode ?? "hard";
  const defaultRequests = options.quota?.defaultRequests;
  // Whose twin namespace a ShadowPod is in (the label only that peer's namespaces carry: the
  // admission policy of core/peering/auth/rbac.ts), whether that peer is cordoned (its tenant
  // namespace's annotation, which the peer cannot write), and what it was offered.
  const namespaces: Informer<KubeObject> = createInformer({
    client,
    resource: Resources.namespaces,
    logger: log,
    transform: metadataOnly,
  });
  /** Consumers cordoned here (liqoctl cordon tenant): their ShadowPods without a pod wait. */
  const cordoned = new Set<string>();
  const offers: Informer<ResourceOffer> | undefined =
    quotaMode === "none"
      ? undefined
      : createInformer({
          client,
          resource: ResourceOfferResource,
          labelSelector: REPLICATION_DESTINATION_LABEL,
          logger: log,
          transform: withoutManagedFields,
        });
  const ledger = new QuotaLedger();
  /** ShadowPods refused for room, by consumer: handled again when the consumer's usage or offer changes. */
  const waiting = new Map<string, Set<string>>();
  let queue: WorkQueue | undefined;
  /**
   * ShadowPods (by UID) whose pod exists or existed: created by this process or seen by its pod
   * informer, whose first list precedes any handling, so a restart still knows every pod that is
   * there. A pod missing for one of these is a re-creation; for the others, a first creation,
   * which then needs no write to the ShadowPod (one write fewer per offloaded pod; the consumer
   * creates ShadowPods with the count at 0). Older ShadowPods carry the created annotation. The one
   * case missed: a pod created, then deleted while this controller was down before it was ever
   * re-created, is taken for a first creation and not counted.
   */
  const hadPod = new Set<string>();
  const ownerOf = (pod: Pod) => pod.metadata.ownerReferences?.find((o) => o.kind === "ShadowPod")?.uid;

  /**
   * A pod evicted from a node that died stays Terminating for ever: no kubelet confirms the
   * deletion, and the pod's fixed name keeps its replacement out (a StatefulSet waits the same way).
   * The ShadowPod promises the pod survives, so once the grace period is over and the node is not
   * Ready, the pod is deleted for good (grace 0, UID precondition) and re-created on a live node.
   * Should the node come back, its kubelet stops the old container, whose pod is gone.
   */
  async function releaseIfStranded(key: string, shadow: ShadowPod, pod: Pod) {
    const overdueMs = Date.now() - Date.parse(pod.metadata.deletionTimestamp!);
    if (overdueMs < 0)
      throw new RetryAfterError(
        Math.min(-overdueMs + 1_000, 60_000),
        `pod ${key} is terminating; its grace period is not over`,
      );
    const full = await client.find<Pod & { spec?: { nodeName?: string } }>(
      Resources.pods,
      pod.metadata.name!,
      pod.metadata.namespace,
    );
    const nodeName = full?.spec?.nodeName;
    if (!full?.metadata.deletionTimestamp || !nodeName) return;
    const node = await client.find<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
      Resources.nodes,
      nodeName,
    );
    const ready = node?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    if (ready) throw new RetryAfterError(10_000, `pod ${key} is terminating on node ${nodeName}, which is Ready`);
    await client.delete(Resources.pods, full.metadata.name!, full.metadata.namespace, {
      uid: full.metadata.uid,
      gracePeriodSeconds: 0,
    });
    events.warning(
      shadow,
      "PodReleased",
      `pod ${key} was stuck terminating on node ${nodeName}, which is not Ready; deleted it so it can be re-created elsewhere`,
    );
    log.warn("stranded pod released", { key, node: nodeName });
  }

  /** Namespaces whose enforce label was checked, and when: checked again after a minute. */
  const secured = new Map<string, number>();
  async function securePodsOf(namespace: string) {
    if (podSecurity === "privileged" || Date.now() - (secured.get(namespace) ?? 0) < 60_000) return;
    const ns = await client.get(Resources.namespaces, namespace);
    const current = ns.metadata.labels?.[POD_SECURITY_ENFORCE_LABEL];
    const label = podSecurityLabelFor(current, podSecurity);
    if (label) {
      await client.mergePatch(Resources.namespaces, namespace, undefined, {
        metadata: { labels: { [POD_SECURITY_ENFORCE_LABEL]: label } },
      });
      log.info("pods peers ask for here must meet the pod security level", {
        namespace,
        securityLevel: label,
        was: current,
      });
    }
    secured.set(namespace, Date.now());
  }

  /** The peer whose twin namespace holds the ShadowPod; undefined outside peers' namespaces (not counted). */
  function consumerOf(shadow: ShadowPod): string | undefined {
    return namespaces.get(shadow.metadata.namespace!)?.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL];
  }

  /** Follows a tenant namespace's cordon annotation; a consumer uncordoned gets its waiting ShadowPods looked at again. */
  function sawNamespace(ns: KubeObject, gone = false) {
    const consumer = ns.metadata.labels?.[DISCOVERY_CLUSTER_ID_LABEL];
    if (!consumer || ns.metadata.labels?.[TENANT_NAMESPACE_LABEL] !== "true") return;
    const now = !gone && ns.metadata.annotations?.[TENANT_CORDONED_ANNOTATION] === "true";
    if (now === cordoned.has(consumer)) return;
    if (now) cordoned.add(consumer);
    else cordoned.delete(consumer);
    log.info(now ? "tenant cordoned: its ShadowPods get no new pods" : "tenant uncordoned", { consumer });
    recheck(consumer);
  }

  /** This cluster's own offer to the consumer (never one replicated here from the peer). */
  function offeredTo(consumer: string): Record<string, string | number> | undefined {
    const own = offers
      ?.list()
      .find(
        (o) =>
          o.metadata.labels?.[REPLICATION_DESTINATION_LABEL] === consumer &&
          !o.metadata.labels?.[REPLICATION_ORIGIN_LABEL],
      );
    return own && !own.spec.withdrawalTimestamp ? (own.spec.resourceQuota?.hard ?? {}) : undefined;
  }

  /** The pod to create, with default requests when they are configured, counted, and the pod is a peer's. */
  const podOf = (shadow: ShadowPod, consumer: string | undefined) =>
    podFor(shadow, consumer && quotaMode !== "none" ? defaultRequests : undefined);

  /** Marks the ShadowPod waiting (Refused, with an Event), once per message; it is looked at again when its consumer changes. */
  async function refuse(key: string, shadow: ShadowPod, consumer: string, message: string) {
    ledger.delete(shadow.metadata.uid!);
    let w = waiting.get(consumer);
    if (!w) waiting.set(consumer, (w = new Set()));
    w.add(key);
    const recorded = shadow.status?.quota;
    if (recorded?.phase !== ShadowPodQuotaPhase.Refused || recorded.message !== message) {
      await writeQuotaStatus(shadow, { phase: ShadowPodQuotaPhase.Refused, message });
      events.warning(shadow, "QuotaExceeded", message);
      log.info("ShadowPod waits", { key, consumer, message });
    }
    return false;
  }

  async function writeQuotaStatus(shadow: ShadowPod, quota: QuotaStatus) {
    await client.mergePatch(
      ShadowPodResource,
      shadow.metadata.name!,
      shadow.metadata.namespace,
      { status: { quota: { counted: null, overQuota: null, message: null, ...quota } } },
      "status",
    );
  }

  /**
   * Counts the ShadowPod against its consumer's offer before its pod is created: true to create it.
   * The check and the reservation in the ledger are one synchronous step, so ShadowPods handled
   * side by side never take more than the offer together. An admission writes nothing (a ShadowPod
   * counts from its pod, which a restart sees: recount); a refusal, a soft flag, and the admission
   * that ends a refusal are written to the ShadowPod's status, with an Event.
   */
  async function admit(key: string, shadow: ShadowPod, consumer: string, pod: Pod): Promise<boolean> {
    const uid = shadow.metadata.uid!;
    const recorded = shadow.status?.quota;
    if (cordoned.has(consumer))
      return refuse(
        key,
        shadow,
        consumer,
        `cluster ${consumer} is cordoned here (liqoctl cordon tenant): its pods get no new pods until liqoctl uncordon tenant`,
      );
    if (quotaMode === "none") {
      // A refusal of a cordon lifted: the status says so no more.
      if (recorded && recorded.phase !== ShadowPodQuotaPhase.Admitted)
        await writeQuotaStatus(shadow, { phase: ShadowPodQuotaPhase.Admitted });
      return true;
    }
    const asked = podRequests(pod);
    const hard = offeredTo(consumer);
    const over = hard ? exceeded(ledger.used(consumer, uid), asked, hard) : [`no offer to cluster ${consumer} here`];
    if (over.length && quotaMode === "hard")
      return refuse(
        key,
        shadow,
        consumer,
        `the offer to cluster ${consumer} is used up (hard quota): ${over.join("; ")}; the pod waits until enough is released`,
      );
    ledger.set(consumer, uid, asked);
    waiting.get(consumer)?.delete(key);
    const message = over.length
      ? `admitted past the offer to cluster ${consumer} (soft quota): ${over.join("; ")}`
      : undefined;
    if (message || recorded) {
      const status: QuotaStatus = { phase: ShadowPodQuotaPhase.Admitted, counted: formatAmounts(asked) };
      if (message) Object.assign(status, { overQuota: true, message });
      try {
        if (!Bun.deepEquals(recorded, status)) await writeQuotaStatus(shadow, status);
      } catch (err) {
        ledger.delete(uid);
        throw err;
      }
      if (message && recorded?.message !== message) events.warning(shadow, "QuotaExceeded", message);
    }
    return true;
  }

  /** A consumer's usage or offer changed: its waiting ShadowPods are looked at again. */
  function recheck(consumer: string | undefined) {
    if (!consumer) return;
    for (const key of waiting.get(consumer) ?? []) queue?.add(key);
  }

  /** What the ShadowPods whose pods exist (or are being re-created) take: counted before any handling. */
  function recount() {
    for (const shadow of shadows.list()) {
      if (shadow.metadata.deletionTimestamp || !hadPod.has(shadow.metadata.uid!)) continue;
      const consumer = consumerOf(shadow);
      if (consumer) ledger.set(consumer, shadow.metadata.uid!, podRequests(podOf(shadow, consumer)));
    }
  }

  async function handle(key: string) {
    const shadow = shadows.get(key);
    let pod = pods.get(key);
    if (!shadow || shadow.metadata.deletionTimestamp) return; // the garbage collector removes owned pods
    const existed = hadPod.has(shadow.metadata.uid!) || !!shadow.metadata.annotations?.[CREATED_ANNOTATION];
    // The informer can lag behind our own create (its add event not seen yet) or replay an old
    // delete: asking the API server before re-creating means a re-creation is only attempted for a
    // pod that is really gone, never because of a stale cache.
    // First creations skip the check (nothing to count; a duplicate create just gets 409).
    if (!pod && existed) pod = await client.find<Pod>(Resources.pods, shadow.metadata.name!, shadow.metadata.namespace);
    if (pod?.metadata.deletionTimestamp && isOwnedBy(pod, shadow)) await releaseIfStranded(key, shadow, pod);
    if (pod) {
      // A pod of that name from an older ShadowPod (same name, new UID) is replaced once it is gone.
      if (!isOwnedBy(pod, shadow) && !pod.metadata.deletionTimestamp) {
        await client.delete(Resources.pods, pod.metadata.name!, pod.metadata.namespace, { uid: pod.metadata.uid });
      }
      return; // present, or going away: its delete event brings the key back
    }
    const consumer = consumerOf(shadow);
    const wanted = podOf(shadow, consumer);
    if (consumer && !(await admit(key, shadow, consumer, wanted))) return;
    let created: Pod;
    try {
      await securePodsOf(shadow.metadata.namespace!);
      created = await client.create<Pod>(Resources.pods, wanted);
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 409) return; // created meanwhile; the informer catches up
      ledger.delete(shadow.metadata.uid!); // no pod: it takes nothing
      if (err instanceof KubeApiError && (err.status === 422 || err.status === 400 || err.status === 403)) {
        // The pod itself is invalid or forbidden here: retrying will not help until the ShadowPod changes.
        events.warning(shadow, "PodCreationFailed", `cannot create pod ${key}: ${err.message}`);
        log.warn("pod creation refused", { key, err });
        return;
      }
      throw err;
    }
    hadPod.add(shadow.metadata.uid!);
    if (!existed) return; // a first creation: nothing to count
    // A re-creation reads the count fresh, not from the cache, so a lagging informer cannot lose an increment.
    const fresh =
      (await client.find<ShadowPod>(ShadowPodResource, shadow.metadata.name!, shadow.metadata.namespace)) ?? shadow;
    const recreations = Number(fresh.metadata.annotations?.[RECREATIONS_ANNOTATION] ?? 0) + 1;
    await client.mergePatch(ShadowPodResource, shadow.metadata.name!, shadow.metadata.namespace, {
      metadata: {
        annotations: {
          [CREATED_ANNOTATION]: "true",
          [RECREATIONS_ANNOTATION]: String(recreations),
          [POD_UID_ANNOTATION]: created.metadata.uid!,
        },
      },
    });
    const previous = fresh.metadata.annotations?.[POD_UID_ANNOTATION];
    events.normal(shadow, "PodRecreated", `pod ${key} was missing and has been re-created (${recreations} time(s))`);
    log.info("pod re-created", { key, previousUid: previous, uid: created.metadata.uid, recreations });
  }

  if (options.registry)
    registerShadowPodMetrics(options.registry, {
      shadows: () => shadows.list(),
      podOf: (s) => {
        const pod = pods.get(objectKey(s));
        return pod && ownerOf(pod) === s.metadata.uid ? pod : undefined;
      },
      consumerOf,
    });

  return {
    handle,
    get synced() {
      return shadows.synced && pods.synced && namespaces.synced && (offers?.synced ?? true);
    },
    async start() {
      // I/O-bound (create, patch): many workers keep a burst of ShadowPods from queueing (bench).
      queue = createWorkQueue({ name: "shadowpods", handler: handle, workers: options.workers ?? 24, logger: log });
      const enqueue = (o: KubeObject) => queue!.add(objectKey(o));
      const sawPod = (p: Pod) => {
        const owner = ownerOf(p);
        if (owner) hadPod.add(owner);
        enqueue(p);
      };
      // A deleted ShadowPod's pod runs until the garbage collector (and its grace period) ends it:
      // its share is released when both are gone.
      const release = (uid: string) => recheck(ledger.delete(uid));
      pods.on({
        add: sawPod,
        update: (_o, n) => sawPod(n),
        delete: (p) => {
          const owner = ownerOf(p);
          if (owner && shadows.get(objectKey(p))?.metadata.uid !== owner) release(owner);
          enqueue(p);
        },
      });
      shadows.on({
        add: enqueue,
        update: (_o, n) => enqueue(n),
        delete: (s) => {
          hadPod.delete(s.metadata.uid!);
          const pod = pods.get(objectKey(s));
          if (!pod || ownerOf(pod) !== s.metadata.uid) release(s.metadata.uid!);
          for (const w of waiting.values()) w.delete(objectKey(s));
          enqueue(s);
        },
      });
      const offerChanged = (o: ResourceOffer) => recheck(o.metadata.labels?.[REPLICATION_DESTINATION_LABEL]);
      offers?.on({ add: offerChanged, update: (_o, n) => offerChanged(n), delete: offerChanged });
      namespaces.on({
        add: (n) => sawNamespace(n),
        update: (_o, n) => sawNamespace(n),
        delete: (n) => sawNamespace(n, true),
      });
      shadows.start();
      pods.start();
      namespaces.start();
      offers?.start();
      await Promise.all([shadows.waitForSync(), pods.waitForSync(), namespaces.waitForSync(), offers?.waitForSync()]);
      if (quotaMode !== "none") recount();
      queue.start();
    },
    async stop() {
      await queue?.shutdown();
      await Promise.all([shadows.stop(), pods.stop(), namespaces.stop(), offers?.stop()]);
    },
  };
}
