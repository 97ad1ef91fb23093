// The provider side of pod offloading: every ShadowPod is kept backed by a real Pod of the same
// name, owned by it (so deleting the ShadowPod deletes the pod), and re-created whenever it
// disappears — also while the consumer cannot be reached, which is the point of ShadowPods.
// Each re-creation is counted on the ShadowPod, so the consumer can add it to restart counts.
import { ShadowPodResource } from "../apis/index.ts";
import {
  LOCAL_POD_LABEL,
  MANAGED_BY_LABEL,
  MANAGED_BY_SHADOWPOD,
  RECREATIONS_ANNOTATION,
  SHADOWPOD_EVENT_COMPONENT,
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
import { providerPodSpec } from "./placement.ts";

const CREATED_ANNOTATION = "liqo.io/shadowpod-created";
/** The UID of the pod last created for the ShadowPod: which incarnation the count refers to. */
export const POD_UID_ANNOTATION = "liqo.io/shadowpod-pod-uid";

type ShadowPod = KubeObject & { spec?: { pod?: Record<string, unknown> } };

/**
 * The Pod a ShadowPod asks for: its spec (kept off this cluster's virtual nodes: placement.ts),
 * its labels and annotations, owned by the ShadowPod.
 */
export function podFor(shadow: ShadowPod): Pod {
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
    spec: providerPodSpec(shadow.spec?.pod),
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
    transform: metadataOnly,
  });
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
    let created: Pod;
    try {
      await securePodsOf(shadow.metadata.namespace!);
      created = await client.create<Pod>(Resources.pods, podFor(shadow));
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 409) return; // created meanwhile; the informer catches up
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

  return {
    handle,
    get synced() {
      return shadows.synced && pods.synced;
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
      pods.on({ add: sawPod, update: (_o, n) => sawPod(n), delete: enqueue });
      shadows.on({
        add: enqueue,
        update: (_o, n) => enqueue(n),
        delete: (s) => {
          hadPod.delete(s.metadata.uid!);
          enqueue(s);
        },
      });
      shadows.start();
      pods.start();
      await Promise.all([shadows.waitForSync(), pods.waitForSync()]);
      queue.start();
    },
    async stop() {
      await queue?.shutdown();
      await Promise.all([shadows.stop(), pods.stop()]);
    },
  };
}
