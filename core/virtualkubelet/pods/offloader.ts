// The consumer side of pod offloading, run by the virtual kubelet of one peering: every pod bound
// to the virtual node becomes a ShadowPod in the remote twin namespace; the remote pod's status
// comes back (IPs translated, restarts counted); deleting the local pod deletes the remote one,
// honouring its grace period. A pod whose namespace is not offloaded stays Pending with reason
// OffloadingBackOff. Transforms are the pods WASM reflector's; this file only does the I/O.
import { ShadowPodQuotaPhase, ShadowPodResource } from "../../apis/index.ts";
import { ORIGIN_CLAIM_UID_ANNOTATION, RECREATIONS_ANNOTATION } from "../../apis/labels.ts";
import { hostNamespacesAsked } from "../../kube/host-namespaces.ts";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../../kube/errors.ts";
import { createInformer, type Informer } from "../../kube/informer.ts";
import { createNamespacedInformers, type NamespacedInformers } from "../../kube/namespaced-informers.ts";
import { keyOf, objectKey, Resources, splitKey, type KubeObject } from "../../kube/resources.ts";
import type { Pod, PodSpec, PodStatus } from "../../kube/types.ts";
import { createWorkQueue, type WorkQueue } from "../../kube/workqueue.ts";
import { silentLogger, type Logger } from "../../log.ts";
import type { IpTranslator, ReflectionContext } from "../../reflection/abi.ts";
import { createEventRecorder } from "../../kube/events.ts";
import { isOwnedBy } from "../../reflection/finish.ts";
import { loadPlugin, type ReflectorPlugin } from "../../reflection/host.ts";
import { apiServerAddress, remotePodSpec, remoteTokenSecret, tokenRequests, withoutTokenVolume } from "./forge.ts";
import { issueTokens, type IssuedToken, type TokenWanted } from "./tokens.ts";
import { createInterner, podSlimmer, slimMetadata } from "../../kube/slim.ts";
import { holdNotReady, markedUnreachable, unreachablePodStatus } from "../../continuity/pods.ts";
import { DEFAULT_CONTINUITY_THRESHOLD_MS, pastThreshold } from "../../continuity/threshold.ts";

export const LOCAL_NAMESPACE_ANNOTATION = "liqo.io/local-namespace";
/** On a ShadowPod: the virtual node its local pod is bound to (none: the peering's own node). */
export const VIRTUAL_NODE_ANNOTATION = "liqo.io/virtual-node";
export const OFFLOADING_BACKOFF = "OffloadingBackOff";
export const HOST_NAMESPACES_DROPPED = "HostNamespacesDropped";
export const UNOFFLOADED = "Unoffloaded";
export const API_SERVER_TOKEN_FAILED = "ApiServerTokenFailed";
/** Before asking again for a token that could not be issued. */
const TOKEN_RETRY_MS = 30_000;
const FIELD_MANAGER = "liqo-virtual-kubelet";
const DEFAULT_WORKERS = 24;
/** How soon a pod whose IP could not be translated is looked at again (a changed translation re-queues it sooner). */
const TRANSLATION_RETRY_MS = 2000;
/**
 * A remote pod that is still Pending while the local one is Pending too usually has little to
 * tell (just created, scheduled, containers being created): such a status is written only once it
 * has stayed so this long, so the usual created → scheduled → Running sequence costs the local API
 * server one status write instead of three (measured: ~5 ms of API server CPU each, plus every
 * watcher's share). Running and terminal states, and Pending ones that report a problem
 * (pendingNeedsAttention), are written at once.
 */
export const PENDING_STATUS_DELAY_MS = 10_000;

/** Waiting reasons and False-condition reasons every starting pod goes through: not worth a write of their own. */
const ROUTINE_WAITING = new Set(["ContainerCreating", "PodInitializing"]);
const ROUTINE_CONDITIONS = new Set(["ContainersNotReady", "ContainersNotInitialized"]);

/** A Pending status that says something is wrong (unschedulable, an image that cannot be pulled, ...). */
export function pendingNeedsAttention(status: PodStatus): boolean {
  const conditions = status.conditions ?? [];
  if (conditions.some((c) => c.status === "False" && c.reason && !ROUTINE_CONDITIONS.has(c.reason))) return true;
  const waiting = [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? [])]
    .map((c) => c.state?.waiting?.reason)
    .filter((r): r is string => Boolean(r));
  return waiting.some((r) => !ROUTINE_WAITING.has(r));
}

export interface PodOffloaderOptions {
  local: KubeClient;
  remote: KubeClient;
  localClusterId: string;
  remoteClusterId: string;
  /** The peering's own virtual node; addNode brings more (VirtualNodes), all served by this one offloader. */
  nodeName: string;
  virtualKubeletIp: string;
  /** The twin namespace of a local namespace in this remote cluster; undefined when it is not offloaded there. */
  remoteNamespaceOf(localNamespace: string): string | undefined;
  /** The pods reflector's wasm (reflectors/index.ts builtinWasm("pods")). */
  podsWasm: Uint8Array;
  translateIp?: IpTranslator;
  /**
   * Why translateIp cannot translate the provider's pod IPs now, if so (the fabric's NetworkConfigs
   * not processed yet, e.g. while the network manager restarts). translateIp then passes an address
   * through unchanged; with overlapping pod CIDRs that is one of this cluster's own, so a pod's status
   * waits for the translation instead of showing it.
   */
  translationPending?: () => string | undefined;
  logger?: Logger;
  workers?: number;
  /** See PENDING_STATUS_DELAY_MS. */
  pendingStatusDelayMs?: number;
  /**
   * The local API server's https URL as the provider's pods reach it: offloaded pods that mount
   * their ServiceAccount token get one of the origin cluster and this address (forge.ts). Without
   * it they mount no token at all.
   */
  apiServerUrl?: string;
  /**
   * Service continuity (core/continuity): when the provider stopped answering (ms; undefined while
   * it answers). Past continuityThresholdMs, the offloaded pods are not Ready here, so that their
   * endpoints leave this cluster's Services until it answers again.
   */
  remoteUnreachableSince?: () => number | undefined;
  continuityThresholdMs?: number;
}

export interface PodOffloader {
  start(): Promise<void>;
  stop(): Promise<void>;
  handle(key: string): Promise<void>;
  /** Re-examines every pod of a namespace, e.g. when its offloading starts or stops. */
  resyncNamespace(namespace: string): void;
  /** Re-examines every pod, e.g. when the fabric's translation of the provider's pod IPs changed. */
  resyncAll(): void;
  /**
   * Offloads the pods bound to one more virtual node of this peering too; `patch` is what changes
   * in their remote copies (VirtualNode offloadingPatch). Calling it again updates the patch, for
   * pods offloaded from then on. Resolves once that node's pods are listed.
   */
  addNode(nodeName: string, patch?: PodPatch): Promise<void>;
  /** Stops following a node's pods; the remote copies of pods still bound to it are deleted. */
  removeNode(nodeName: string): Promise<void>;
  /** The pods bound to a node of this offloader, as last seen (a drain waits for none). */
  podsOn(nodeName: string): number;
  /** The local pods bound to this offloader's nodes, as last seen. */
  pods(): readonly Pod[];
  readonly synced: boolean;
}

/** What a virtual node changes in the remote copies of its pods. */
export interface PodPatch {
  /** Merged into the remote pod's nodeSelector (on a clash, the node's value wins). */
  nodeSelector?: Record<string, string>;
}

/** The remote pod spec with a virtual node's patch: its nodeSelector keys added. */
export function patched(spec: PodSpec, patch: PodPatch | undefined): PodSpec {
  if (!patch?.nodeSelector || Object.keys(patch.nodeSelector).length === 0) return spec;
  return { ...spec, nodeSelector: { ...spec.nodeSelector, ...patch.nodeSelector } };
}

type ShadowPodWithQuota = KubeObject & { status?: { quota?: { phase?: string; message?: string } } };

/** A pod's key as the caches show it: the local pod and, in its twin namespace, its ShadowPod and remote pod. */
interface Observed {
  key: string;
  ns: string;
  name: string;
  local: Pod | undefined;
  /** Undefined while the pod's namespace is not offloaded to this cluster. */
  remoteNs: string | undefined;
  shadow: KubeObject | undefined;
  remote: Pod | undefined;
  /** The ShadowPod was created by this cluster. */
  ours: boolean;
}

/** A pod to offload or keep offloaded: bound to one of our nodes, not being deleted, its namespace offloaded. */
interface Offloadable extends Observed {
  local: Pod;
  remoteNs: string;
  /** The virtual node the pod is bound to. */
  nodeName: string;
  /** What the pods reflector is told about the pod's namespaces and node. */
  ctx: ReflectionContext;
}

/** The sooner of two times, either of which may be missing. */
function sooner(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

export async function createPodOffloader(o: PodOffloaderOptions): Promise<PodOffloader> {
  const log = (o.logger ?? silentLogger).child({ component: "pod-offloader", node: o.nodeName });
  const events = createEventRecorder(o.local, "liqo-virtual-kubelet", log);
  const address = apiServerAddress(o.apiServerUrl);
  if (o.apiServerUrl && !address)
    log.warn("not an https URL: offloaded pods get no API server token", { apiServerUrl: o.apiServerUrl });
  if (!o.apiServerUrl) log.info("no origin API server URL: offloaded pods get no API server token");
  /** When each offloaded pod's origin token is due for renewal (ms since the epoch). */
  const tokenRefresh = new Map<string, number>();
  const plugin: ReflectorPlugin = await loadPlugin(o.podsWasm, {
    trust: "builtin",
    translateIp: o.translateIp,
    logger: log,
    // It looks up a ServiceAccount's legacy token Secret only for a token volume, which it never
    // sees here: remotePodSpec wires the token (withoutTokenVolume).
    lookup: () => null,
  });
  // The caches keep only what handle reads: managedFields (large on pods, several managers) never,
  // of a ShadowPod only its metadata (the pod spec in it is ours, already in the local pod), of a
  // remote pod its metadata and status (the pods reflector's backward transform reads /status).
  // The parts pods share (labels, tolerations, affinity...) are kept once, for all three caches.
  const intern = createInterner();
  const slimLocal = podSlimmer(intern);
  const slimRemote = slimMetadata(intern);
  // One informer per virtual node (a field selector names one node); a pod is found in whichever has it.
  const nodes = new Map<string, { pods: Informer<Pod>; patch?: PodPatch }>();
  /** Nodes removed from this offloader: what still runs remotely for their pods is deleted. */
  const released = new Set<string>();
  const localPods = {
    get: (key: string) => {
      for (const n of nodes.values()) {
        const p = n.pods.get(key);
        if (p) return p;
      }
      return undefined;
    },
    list: () => [...nodes.values()].flatMap((n) => n.pods.list()),
    get synced() {
      return [...nodes.values()].every((n) => n.pods.synced);
    },
  };
  const origin = `liqo.io/origin-cluster-id=${o.localClusterId}`;
  // The remote side is watched per twin namespace: a peer's identity may not list cluster-wide.
  const shadows: NamespacedInformers<KubeObject> = createNamespacedInformers({
    client: o.remote,
    resource: ShadowPodResource,
    labelSelector: origin,
    logger: log,
    // The status is the provider's quota decision (a few fields), shown on a pod it holds back.
    transform: (s) => ({ ...slimRemote(s), status: (s as ShadowPodWithQuota).status }) as KubeObject,
  });
  const remotePods: NamespacedInformers<Pod> = createNamespacedInformers({
    client: o.remote,
    resource: Resources.pods,
    labelSelector: `liqo.io/managed-by=shadowpod,${origin}`,
    logger: log,
    transform: (p) => ({ ...slimRemote(p), status: p.status }),
  });
  const pendingDelay = o.pendingStatusDelayMs ?? PENDING_STATUS_DELAY_MS;
  const continuityThreshold = o.continuityThresholdMs ?? DEFAULT_CONTINUITY_THRESHOLD_MS;
  let continuityTimer: ReturnType<typeof setInterval> | undefined;
  /** When each pod was first found Pending on both sides with a status still to write (see PENDING_STATUS_DELAY_MS). */
  const pendingSince = new Map<string, number>();
  /** local namespace → the twin namespace its remote informers follow. */
  const followed = new Map<string, string>();
  const follow = (localNs: string) => {
    const remoteNs = o.remoteNamespaceOf(localNs);
    const previous = followed.get(localNs);
    if (previous === remoteNs) return;
    if (previous && ![...followed].some(([l, r]) => l !== localNs && r === previous)) {
      for (const inf of [shadows, remotePods])
        inf
          .removeNamespace(previous)
          .catch((err) => log.warn("stopping a twin namespace's informer failed", { err, namespace: previous }));
    }
    if (remoteNs) {
      followed.set(localNs, remoteNs);
      shadows.addNamespace(remoteNs);
      remotePods.addNamespace(remoteNs);
    } else {
      followed.delete(localNs);
    }
  };
  const contexts = new Map<string, ReflectionContext>();
  let queue: WorkQueue | undefined;

  const ctxFor = (localNs: string, remoteNs: string, nodeName: string): ReflectionContext => {
    const k = `${localNs}/${nodeName}`;
    let ctx = contexts.get(k);
    if (!ctx || ctx.remoteNamespace !== remoteNs) {
      ctx = {
        localClusterId: o.localClusterId,
        remoteClusterId: o.remoteClusterId,
        localNamespace: localNs,
        remoteNamespace: remoteNs,
        virtualKubeletIp: o.virtualKubeletIp,
        virtualNodeName: nodeName,
      };
      contexts.set(k, ctx);
    }
    return ctx;
  };

  async function backOff(pod: Pod, message: string) {
    if (pod.status?.reason === OFFLOADING_BACKOFF && pod.status?.message === message) return;
    await o.local.apply(
      Resources.pods,
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace },
        status: { phase: "Pending", reason: OFFLOADING_BACKOFF, message },
      },
      { fieldManager: FIELD_MANAGER, force: true, subresource: "status" },
    );
    events.warning(pod, OFFLOADING_BACKOFF, message);
  }

  // Namespaces seen offloaded by this process: only their pods are deleted when the twin goes, so
  // a restart (pairs not yet known) never mistakes running pods for unoffloaded ones.
  const offloadedNamespaces = new Set<string>();
  /** A pod we reported status for (ours are the only ones with the virtual kubelet's IP as host). */
  const wasOffloaded = (pod: Pod) =>
    pod.status?.hostIP === o.virtualKubeletIp || (pod.status?.phase !== undefined && pod.status.phase !== "Pending");

  /**
   * Brings one pod's remote side in line with its local one, in the steps below; a step that has
   * to look at the pod again later says when, and requeueAt asks the work queue for the key then.
   */
  async function handle(key: string) {
    const pod = readCaches(key);
    const { local, remoteNs, shadow } = pod;
    if (!local && !nodeFollowedOrReleased(shadow)) return;
    if (!local || local.metadata.deletionTimestamp) return finishDeletion(pod);
    if (!remoteNs && offloadedNamespaces.has(pod.ns) && wasOffloaded(local)) return rescheduleLocally(pod, local);
    if (!remoteNs) return backOffUnoffloadedNamespace(pod, local);
    offloadedNamespaces.add(pod.ns);
    if (shadow && !pod.ours) return backOffForeignShadowPod(pod, local, remoteNs);
    const nodeName = local.spec?.nodeName ?? o.nodeName;
    const offloadable: Offloadable = { ...pod, local, remoteNs, nodeName, ctx: ctxFor(pod.ns, remoteNs, nodeName) };
    requeueAt(key, shadow ? await keepInSync(offloadable, shadow) : await createShadowPod(offloadable));
  }

  /** Reads a pod's key from the caches; a RetryAfterError while its twin namespace's informers are still listing. */
  function readCaches(key: string): Observed {
    const { namespace: ns = "", name } = splitKey(key);
    const local = localPods.get(key);
    const remoteNs = o.remoteNamespaceOf(ns);
    if (remoteNs) {
      follow(ns);
      // Acting on an empty cache could re-create or orphan a ShadowPod: wait for the twin's first list.
      if (!shadows.namespaceSynced(remoteNs) || !remotePods.namespaceSynced(remoteNs)) {
        throw new RetryAfterError(250, `the informers of twin namespace ${remoteNs} are still listing`);
      }
    }
    const shadow = remoteNs ? shadows.get(keyOf(remoteNs, name)) : undefined;
    const remote = remoteNs ? remotePods.get(keyOf(remoteNs, name)) : undefined;
    return {
      key,
      ns,
      name,
      local,
      remoteNs,
      shadow,
      remote,
      ours: Boolean(shadow && isOwnedBy(shadow, o.localClusterId)),
    };
  }

  /** Whether the node of a ShadowPod's pod is followed or released here, so that a missing pod means a deleted one. */
  function nodeFollowedOrReleased(shadow: KubeObject | undefined): boolean {
    // A pod of a node this offloader does not follow yet (a VirtualNode not started again after a
    // restart) is not missing: its ShadowPod is left alone until the node is followed or released.
    const shadowNode = shadow?.metadata.annotations?.[VIRTUAL_NODE_ANNOTATION] ?? o.nodeName;
    return nodes.has(shadowNode) || released.has(shadowNode);
  }

  /** Deletes what runs remotely for a deleted (or gone) pod or, once nothing does, finishes the local deletion. */
  async function finishDeletion({ key, ns, name, local, remoteNs, shadow, remote, ours }: Observed) {
    pendingSince.delete(key);
    tokenRefresh.delete(key);
    waitingForTranslation.delete(key);
    if (shadow && ours && !shadow.metadata.deletionTimestamp) {
      const grace = local?.metadata.deletionGracePeriodSeconds as number | undefined;
      // The remote pod first, with the user's grace period; then the ShadowPod, so it is not re-created.
      if (remote)
        await o.remote.delete(Resources.pods, name, remoteNs, {
          uid: remote.metadata.uid,
          gracePeriodSeconds: grace,
        });
      await o.remote.delete(ShadowPodResource, name, remoteNs, { uid: shadow.metadata.uid });
      return;
    }
    // Once nothing runs remotely, finish the local deletion as a kubelet does.
    if (local && !remote && (!shadow || !ours))
      await o.local.delete(Resources.pods, name, ns, { uid: local.metadata.uid, gracePeriodSeconds: 0 });
  }

  /** Deletes an offloaded pod whose namespace is no longer offloaded here, so that it is rescheduled locally. */
  async function rescheduleLocally({ ns, name }: Observed, local: Pod) {
    // Its namespace stopped being offloaded here (unoffload, or this cluster deselected): the
    // twin namespace and the remote pod go with it, so the pod is deleted and its controller
    // reschedules it locally, as Liqo documents for `liqoctl unoffload namespace`.
    events.normal(
      local,
      UNOFFLOADED,
      `namespace ${ns} is no longer offloaded to cluster ${o.remoteClusterId}: pod deleted so that it is rescheduled`,
    );
    await o.local.delete(Resources.pods, name, ns, { uid: local.metadata.uid, gracePeriodSeconds: 0 }).catch((err) => {
      if (!(err instanceof KubeApiError && (err.notFound || err.status === 409))) throw err;
    });
  }

  /** Holds a pod Pending (OffloadingBackOff) because its namespace is not offloaded to this cluster. */
  function backOffUnoffloadedNamespace({ ns }: Observed, local: Pod) {
    return backOff(
      local,
      `namespace ${ns} is not offloaded to cluster ${o.remoteClusterId}: create a NamespaceOffloading in ${ns} (liqoctl offload namespace ${ns}) or schedule the pod elsewhere`,
    );
  }

  /** Holds a pod Pending (OffloadingBackOff) because another cluster's ShadowPod has its name. */
  function backOffForeignShadowPod({ name }: Observed, local: Pod, remoteNs: string) {
    return backOff(
      local,
      `a ShadowPod ${remoteNs}/${name} not created by this cluster already exists in cluster ${o.remoteClusterId}; rename the pod or remove that ShadowPod`,
    );
  }

  /**
   * Why the pod must not reach the provider yet: a claim it mounts has a copy there that is being
   * deleted, or that was made for an earlier claim of that name (deleted and made again, as
   * liqoctl move volume does). Mounted, that volume would go with the old copy, and the data
   * written to it too; the storage reflector replaces the copy, and the pod waits for the new one.
   */
  async function staleClaimCopy({ ns, local, remoteNs }: Offloadable): Promise<string | undefined> {
    for (const v of local.spec?.volumes ?? []) {
      const name = v.persistentVolumeClaim?.claimName;
      if (!name) continue;
      const copy = await o.remote.find(Resources.persistentVolumeClaims, name, remoteNs);
      const madeFor = copy?.metadata.annotations?.[ORIGIN_CLAIM_UID_ANNOTATION];
      if (!copy || (!madeFor && !copy.metadata.deletionTimestamp)) continue;
      const claim = await o.local.find(Resources.persistentVolumeClaims, name, ns);
      if (copy.metadata.deletionTimestamp || (claim && madeFor !== claim.metadata.uid))
        return `the copy of claim ${keyOf(ns, name)} in cluster ${o.remoteClusterId} (${keyOf(remoteNs, name)}) belongs to an earlier claim of that name or is being deleted; the pod waits until the new copy replaces it`;
    }
    return undefined;
  }

  /** Creates the pod's ShadowPod, then its token Secret; answers when the token is due again. */
  async function createShadowPod(pod: Offloadable): Promise<number | undefined> {
    const { key, local, ctx } = pod;
    const stale = await staleClaimCopy(pod);
    if (stale) {
      await backOff(local, stale);
      return Date.now() + 1000;
    }
    // The origin token is asked for while the plugin answers, and its Secret written right after
    // the ShadowPod (whose UID owns it), so that it is there before the provider's kubelet mounts
    // it: a kubelet that finds it missing retries with a doubling back-off (in a burst of 20, at
    // least 4 pods found it missing when the token was asked for after the ShadowPod; 1 of 21 since).
    const tokens = tokenRequests(local, address);
    const issuing = tokens ? issueTokens(o.local, local, tokens.serviceAccount, tokens.tokens) : undefined;
    issuing?.catch(() => {}); // reported by renewToken, or dropped with a pod not offloaded
    const decision = await plugin.forward(withoutTokenVolume(local), null, ctx);
    if (decision.decision !== "apply") {
      log.info("pod not offloaded", { key, reason: decision.reason });
      return undefined;
    }
    const out = decision.object as Pod;
    warnHostNamespacesDropped(pod);
    const created = await writeShadowPod(pod, out);
    return created && tokens ? renewToken(pod, tokens, created.metadata.uid!, issuing) : undefined;
  }

  /** Warns (an Event on the pod) that the host namespaces it asked for are not offloaded with it. */
  function warnHostNamespacesDropped({ key, local }: Offloadable) {
    // The pods reflector forces host namespaces off remotely (the provider's node is not ours to
    // share); a user who asked for them must hear about it rather than find out at run time.
    const dropped = hostNamespacesAsked(local.spec ?? {});
    if (dropped.length > 0) {
      events.warning(
        local,
        HOST_NAMESPACES_DROPPED,
        `pod ${key} asked for ${dropped.join(", ")}, which offloaded pods cannot have: ` +
          `it runs in cluster ${o.remoteClusterId} without them; keep it on a physical node (node affinity) if it needs them`,
      );
    }
  }

  /** Creates the ShadowPod of the pods reflector's remote pod; undefined when one was created meanwhile. */
  async function writeShadowPod({ ns, name, local, remoteNs, nodeName }: Offloadable, out: Pod) {
    // A plain create, not a server-side apply: the ShadowPod is only written when missing, and
    // an apply of this large CRD costs the provider's API server noticeably more (bench).
    return o.remote
      .create(
        ShadowPodResource,
        {
          apiVersion: "virtualkubelet.liqo.io/v1alpha1",
          kind: "ShadowPod",
          metadata: {
            name,
            namespace: remoteNs,
            labels: out.metadata.labels,
            // The count starts at 0 here, so the provider writes the ShadowPod only on re-creations.
            annotations: {
              ...out.metadata.annotations,
              [LOCAL_NAMESPACE_ANNOTATION]: ns,
              ...(nodeName !== o.nodeName && { [VIRTUAL_NODE_ANNOTATION]: nodeName }),
              [RECREATIONS_ANNOTATION]: "0",
            },
          },
          spec: { pod: patched(remotePodSpec(local, out.spec ?? {}, address), nodes.get(nodeName)?.patch) },
        },
        remoteNs,
        { fieldManager: FIELD_MANAGER },
      )
      .catch((err) => {
        // Created meanwhile (our informer lags): its add event brings the key back.
        if (!(err instanceof KubeApiError && err.status === 409)) throw err;
        return undefined;
      });
  }

  /** Renews an offloaded pod's token when due, then reflects its status; answers when to look at it again. */
  async function keepInSync(pod: Offloadable, shadow: KubeObject): Promise<number | undefined> {
    // The provider out of reach past the threshold: its pods are not Ready here. What its API server
    // still says (only the tunnel may be down) keeps flowing; nothing is written there meanwhile.
    if (providerDark()) return reflectStatus(pod, shadow, true);
    const tokenDue = await renewTokenIfDue(pod, shadow);
    const statusDue = await reflectStatus(pod, shadow, false);
    return sooner(tokenDue, statusDue);
  }

  /**
   * Renews the pod's token once it is due; answers when it is due (again). Every handling answers
   * it, not only the one that renewed: the work queue keeps one timer per key, the earliest, so a
   * sooner requeue (a held-back status) would otherwise drop the renewal's.
   */
  async function renewTokenIfDue(pod: Offloadable, shadow: KubeObject): Promise<number | undefined> {
    const tokens = tokenRequests(pod.local, address);
    if (!tokens) return undefined;
    const due = tokenRefresh.get(pod.key);
    if (due !== undefined && due > Date.now()) return due;
    return renewToken(pod, tokens, shadow.metadata.uid!);
  }

  /** Writes the remote pod's status on the local pod; answers when a held-back Pending status is due. */
  async function reflectStatus(pod: Offloadable, shadow: KubeObject, dark: boolean): Promise<number | undefined> {
    const { key, ns, name, local, remote, ctx } = pod;
    if (dark && !remote) return void (await reflectUnreachable(pod));
    if (!remote) {
      // The provider is (re)creating it, or its quota holds it back: then the user sees why.
      const quota = (shadow as ShadowPodWithQuota).status?.quota;
      if (quota?.phase === ShadowPodQuotaPhase.Refused && quota.message)
        await backOff(local, `cluster ${o.remoteClusterId}: ${quota.message}`);
      return undefined;
    }
    if (remote.status?.podIP && untranslatable(key, local)) {
      // Held back, but past the continuity threshold the pod still leaves this cluster's Services.
      if (dark) await reflectUnreachable(pod);
      return Date.now() + TRANSLATION_RETRY_MS;
    }
    const withRestarts = { ...ctx, remoteRestarts: Number(shadow.metadata.annotations?.[RECREATIONS_ANNOTATION] ?? 0) };
    const back = await plugin.backward(remote, local, withRestarts);
    if (back.decision !== "apply") return undefined;
    let status = (back.object as Pod).status ?? {};
    if (dark) {
      const marking = !markedUnreachable(local.status);
      status = holdNotReady(status, local.status, unreachableMessage(), new Date());
      if (marking && !Bun.deepEquals(status, local.status))
        events.warning(local, "RemoteClusterUnreachable", unreachableMessage());
    }
    if (Bun.deepEquals(status, local.status)) return void pendingSince.delete(key);
    const heldUntil = dark ? undefined : pendingHeldUntil(key, status, local);
    if (heldUntil !== undefined) return heldUntil;
    pendingSince.delete(key);
    await o.local
      .apply(
        Resources.pods,
        { apiVersion: "v1", kind: "Pod", metadata: { name, namespace: ns }, status },
        { fieldManager: FIELD_MANAGER, force: true, subresource: "status" },
      )
      .catch((err) => {
        if (err instanceof KubeApiError && err.notFound) return; // deleted meanwhile
        throw err;
      });
  }

  /** Pods whose status waits for the translation of their IP, each logged once. */
  const waitingForTranslation = new Set<string>();
  /** Whether the provider's pod IPs cannot be translated now: then the pod's status waits. */
  function untranslatable(key: string, local: Pod): boolean {
    const why = o.translationPending?.();
    if (!why) {
      waitingForTranslation.delete(key);
      return false;
    }
    if (!waitingForTranslation.has(key)) {
      waitingForTranslation.add(key);
      log.warn("pod status held back: its IP cannot be translated yet", { pod: key, reason: why });
      // A pod that never had an IP here would sit Pending without a word: its Events say why.
      if (!local.status?.podIP)
        events.warning(local, "PodIPNotTranslated", `status held back until its IP can be translated: ${why}`);
    }
    return true;
  }

  /** Whether the provider has been unreachable past the continuity threshold. */
  function providerDark(): boolean {
    return pastThreshold(o.remoteUnreachableSince?.(), Date.now(), continuityThreshold);
  }

  function unreachableMessage(): string {
    const since = o.remoteUnreachableSince?.() ?? Date.now();
    return `cluster ${o.remoteClusterId} has not answered for ${Math.round((Date.now() - since) / 1000)} s (threshold ${continuityThreshold / 1000} s): the pod's state there is unknown, so it is not Ready here until the cluster answers again`;
  }

  /** Turns the pod's Ready and ContainersReady False while the provider is unreachable (once), from
   * the local status alone: no remote pod to read. */
  async function reflectUnreachable({ ns, name, local }: Offloadable): Promise<void> {
    if (markedUnreachable(local.status)) return;
    const message = unreachableMessage();
    pendingSince.delete(objectKey(local));
    events.warning(local, "RemoteClusterUnreachable", message);
    await o.local
      .apply(
        Resources.pods,
        {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name, namespace: ns },
          status: unreachablePodStatus(local.status ?? {}, message, new Date()),
        },
        { fieldManager: FIELD_MANAGER, force: true, subresource: "status" },
      )
      .catch((err) => {
        if (err instanceof KubeApiError && err.notFound) return; // deleted meanwhile
        throw err;
      });
  }

  /** Until when a routine Pending status is held back (PENDING_STATUS_DELAY_MS); undefined: write it now. */
  function pendingHeldUntil(key: string, status: PodStatus, local: Pod): number | undefined {
    const routine =
      status.phase === "Pending" && (local.status?.phase ?? "Pending") === "Pending" && !pendingNeedsAttention(status);
    if (!routine) return undefined;
    const now = Date.now();
    const since = pendingSince.get(key) ?? now;
    pendingSince.set(key, since);
    // Not yet: most pods are Running before this, and that write then carries everything.
    return now - since < pendingDelay ? since + pendingDelay : undefined;
  }

  /**
   * A fresh origin token in the pod's Secret; answers when it is due again (undefined: the pod went
   * meanwhile). A failure is the pod's Event and a retry of its own, so that it never holds the
   * pod's status back.
   */
  async function renewToken(
    { key, name, local, remoteNs }: Offloadable,
    wanted: { serviceAccount: string; tokens: TokenWanted[] },
    shadowUid: string,
    issuing?: Promise<IssuedToken>,
  ): Promise<number | undefined> {
    const { serviceAccount } = wanted;
    let due: number;
    try {
      const t = await (issuing ?? issueTokens(o.local, local, serviceAccount, wanted.tokens));
      await o.remote.apply(
        Resources.secrets,
        remoteTokenSecret(local, remoteNs, o.localClusterId, { name, uid: shadowUid }, t),
        { fieldManager: FIELD_MANAGER, force: true },
      );
      due = t.refreshAt;
    } catch (err) {
      if (err instanceof KubeApiError && err.notFound && !localPods.get(key)) return undefined; // the pod went meanwhile
      log.warn("issuing the origin API server token failed", { key, err });
      events.warning(
        local,
        API_SERVER_TOKEN_FAILED,
        `the token of service account ${serviceAccount} for the pod in cluster ${o.remoteClusterId} could not be issued: ${err instanceof Error ? err.message : err}`,
      );
      due = Date.now() + TOKEN_RETRY_MS;
    }
    tokenRefresh.set(key, due);
    return due;
  }

  /** Asks the work queue for the key again at `at` (ms since the epoch), if given, with a RetryAfterError. */
  function requeueAt(key: string, at: number | undefined) {
    if (at === undefined) return;
    // This handling went well: the key's failure count starts over, as when a handling returns.
    queue?.forget(key);
    throw new RetryAfterError(Math.max(0, at - Date.now()));
  }

  const remoteKey = (obj: KubeObject) => {
    const ns = obj.metadata.annotations?.[LOCAL_NAMESPACE_ANNOTATION];
    return ns ? keyOf(ns, obj.metadata.name!) : undefined;
  };
  let watchNode: ((nodeName: string, patch?: PodPatch) => Promise<void>) | undefined;

  /**
   * Every pod is looked at again when the provider crosses the continuity threshold (its pods turn
   * not Ready) and when it answers again (their remote status comes back): no remote event says so.
   */
  function watchContinuity() {
    if (!o.remoteUnreachableSince) return;
    let dark = false;
    const check = () => {
      const since = o.remoteUnreachableSince!();
      const now = Date.now();
      const past = pastThreshold(since, now, continuityThreshold);
      if (past === dark) return;
      dark = past;
      if (past)
        log.warn("provider unreachable past the threshold: offloaded pods not Ready", {
          since,
          thresholdMs: continuityThreshold,
        });
      else log.info("provider answers again: offloaded pods' status from it");
      for (const p of localPods.list()) queue?.addFirst(objectKey(p));
    };
    // Every second: fine-grained enough next to health probes 5 s apart.
    continuityTimer = setInterval(check, 1000);
  }
  return {
    handle,
    async addNode(nodeName, patch) {
      if (!watchNode) throw new Error("the pod offloader is not started");
      await watchNode(nodeName, patch);
    },
    async removeNode(nodeName) {
      if (nodeName === o.nodeName) return;
      released.add(nodeName);
      const n = nodes.get(nodeName);
      if (!n) {
        // Never followed here (left over from before a restart): its ShadowPods are looked at again.
        for (const s of shadows.list())
          if (s.metadata.annotations?.[VIRTUAL_NODE_ANNOTATION] === nodeName) {
            const k = remoteKey(s);
            if (k) queue?.add(k);
          }
        return;
      }
      nodes.delete(nodeName);
      const left = n.pods.list();
      await n.pods.stop();
      // No informer has them now: handling their keys deletes whatever still runs remotely.
      for (const p of left) queue?.add(objectKey(p));
    },
    podsOn: (nodeName) => nodes.get(nodeName)?.pods.list().length ?? 0,
    pods: () => localPods.list(),
    get synced() {
      return localPods.synced && shadows.synced && remotePods.synced;
    },
    resyncAll() {
      for (const p of localPods.list()) queue?.add(objectKey(p));
    },
    resyncNamespace(namespace) {
      follow(namespace);
      if (o.remoteNamespaceOf(namespace)) offloadedNamespaces.add(namespace);
      for (const p of localPods.list()) if (p.metadata.namespace === namespace) queue?.add(objectKey(p));
    },
    async start() {
      // Handling is nearly all waiting on two API servers (one apply per pod and status change), so
      // many workers: with 4, a 1,000-pod Deployment queued status for tens of seconds (bench).
      queue = createWorkQueue({
        name: "pod-offloader",
        handler: handle,
        workers: o.workers ?? DEFAULT_WORKERS,
        logger: log,
      });
      // What users wait for goes ahead of bulk updates (our own status writes echoing back, a
      // ShadowPod's annotations): a pod newly bound here, a pod leaving, a remote pod changing phase.
      const onLocal = (p: KubeObject) => queue!.add(objectKey(p));
      const onLocalFirst = (p: KubeObject) => queue!.addFirst(objectKey(p));
      const onRemote = (r: KubeObject, first = false) => {
        const k = remoteKey(r);
        if (k) first ? queue!.addFirst(k) : queue!.add(k);
      };
      watchNode = async (nodeName, patch) => {
        released.delete(nodeName);
        const known = nodes.get(nodeName);
        if (known) {
          known.patch = patch;
          return known.pods.waitForSync();
        }
        const pods: Informer<Pod> = createInformer({
          client: o.local,
          resource: Resources.pods,
          fieldSelector: `spec.nodeName=${nodeName}`,
          logger: log,
          transform: slimLocal,
        });
        pods.on({
          add: onLocalFirst,
          update: (a, b) =>
            b.metadata.deletionTimestamp && !a.metadata.deletionTimestamp ? onLocalFirst(b) : onLocal(b),
          delete: onLocalFirst,
        });
        // Followed only once listed: before, its pods would look missing and their ShadowPods be
        // deleted (a remote event handled meanwhile). Keys handled before are skipped, so all go again.
        pods.start();
        await pods.waitForSync();
        nodes.set(nodeName, { pods, patch });
        for (const p of pods.list()) queue!.add(objectKey(p));
      };
      shadows.on({ add: (r) => onRemote(r), update: (_a, b) => onRemote(b), delete: (r) => onRemote(r) });
      remotePods.on({
        add: (r) => onRemote(r),
        update: (a, b) => onRemote(b, a.status?.phase !== b.status?.phase),
        delete: (r) => onRemote(r, true),
      });
      await watchNode(o.nodeName);
      queue.start();
      watchContinuity();
    },
    async stop() {
      clearInterval(continuityTimer);
      await queue?.shutdown();
      await Promise.all([...[...nodes.values()].map((n) => n.pods.stop()), shadows.stop(), remotePods.stop()]);
      await plugin.close();
    },
  };
}
