// What the ForeignCluster controller keeps in memory per peer: the client acting as our identity
// there, the CRD replicator and the in-process virtual kubelet. All of it can be rebuilt from the
// cluster (identity Secret, ResourceRequest, accepted offer) after a crash, which is how
// reconcile treats it: a cache of running things, never a source of truth.
import type { KubeClient } from "../../kube/client.ts";
import type { Logger } from "../../log.ts";
import type { CrdReplicatorOptions } from "../replicator/index.ts";
import type { VirtualKubelet } from "../../virtualkubelet/start.ts";
import type { IpTranslator } from "../../reflection/abi.ts";
import type { PeerRegistry } from "./peer-registry.ts";

/** The CRD replicator (core/peering/replicator): pushes our ResourceRequest, pulls the provider's ResourceOffer. */
export interface CrdReplicator {
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

export type { CrdReplicatorOptions };
export type ReplicatorFactory = (o: CrdReplicatorOptions) => CrdReplicator;

export interface PeerRuntime {
  clusterId: string;
  /** The identity's kubeconfig the clients were built from: a new identity means new clients. */
  kubeconfig: string;
  /** The foreignProxyUrl the client was built with (in-band peering): a new proxy means new clients. */
  proxyUrl?: string;
  remote: KubeClient;
  replicator?: CrdReplicator;
  vk?: VirtualKubelet;
  /**
   * When this process started the virtual kubelet for a peering that was already Established (a
   * restart: an upgrade, a rescheduled pod): until then plus RESTART_GRACE_MS, the condition stays
   * Established while the new kubelet probes the provider, instead of blinking Pending.
   */
  resumedAt?: number;
  /** The virtual kubelet's view of the shared metrics registry (peer-registry.ts), closed with it. */
  metrics?: PeerRegistry;
  /** The network fabric's translation watcher feeding the virtual kubelet (networking enabled). */
  translation?: {
    translateIp: IpTranslator;
    /** Why the peer's pod IPs cannot be translated now (translation-watch.ts), if so. */
    pending?(): string | undefined;
    /** Changes exactly when the peer's pod IPs translate differently (translation-watch.ts). */
    backwardKey?(): string;
    stop(): Promise<void>;
    onChange?(listener: () => void): () => void;
  };
  /** JSON of the capacity the virtual node was last given, to spot a changed offer. */
  resources?: string;
  /** The provider's whole offer (its VirtualNodes take their share of it, virtualnodes.ts), and its name. */
  offer?: Record<string, string>;
  offerFrom?: string;
}

/**
 * Waits for `work` at most `ms`: a part whose caches never synced (see docs/peering.md, "Known
 * limit") can take long to stop, and unpeering must not hang on it (the node is deleted by label).
 */
export async function bounded(work: Promise<unknown>, ms: number, what: string, log: Logger): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), ms);
  });
  const outcome = await Promise.race([
    work.then(
      () => "done" as const,
      (err) => {
        log.warn(`${what} failed`, { err });
        return "done" as const;
      },
    ),
    late,
  ]);
  clearTimeout(timer);
  if (outcome === "late") log.warn(`${what} did not finish within ${ms}ms; going on`);
}

export async function stopRuntime(rt: PeerRuntime, log: Logger, removeNode: boolean): Promise<void> {
  if (rt.vk) {
    const vk = rt.vk;
    rt.vk = undefined;
    rt.resources = undefined;
    rt.offer = undefined;
    await bounded(removeNode ? vk.remove() : vk.stop(), 15_000, "stopping the virtual kubelet", log);
  }
  rt.metrics?.close();
  rt.metrics = undefined;
  if (rt.translation) {
    const t = rt.translation;
    rt.translation = undefined;
    await bounded(t.stop(), 15_000, "stopping the translation watcher", log);
  }
  if (rt.replicator) {
    const r = rt.replicator;
    rt.replicator = undefined;
    await bounded(Promise.resolve(r.stop()), 15_000, "stopping the CRD replicator", log);
  }
}
