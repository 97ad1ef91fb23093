// The provider's view of offloading on /metrics: the ShadowPods its consumers created here, per
// consumer and by the phase of the pod each one keeps (NoPod: none now, e.g. refused by the quota,
// the consumer cordoned, or between a deletion and its re-creation). Counted at scrape time from
// the ShadowPod controller's caches.
import type { LabeledValue, Registry } from "../metrics/index.ts";
import type { KubeObject } from "../kube/resources.ts";

/** The phase of a ShadowPod that has no pod of its own right now. */
export const NO_POD_PHASE = "NoPod";
/** A ShadowPod outside any peer's twin namespace (not created through a peering). */
export const UNKNOWN_CONSUMER = "unknown";

type Labels = "remote_cluster_id" | "phase";

export interface ShadowPodCountSource<S extends KubeObject> {
  shadows(): readonly S[];
  /** The pod the ShadowPod keeps (same key, owned by it), if there is one. */
  podOf(shadow: S): { status?: { phase?: string } } | undefined;
  /** The consumer whose twin namespace holds it; undefined outside peers' namespaces. */
  consumerOf(shadow: S): string | undefined;
}

export function shadowPodCounts<S extends KubeObject>(src: ShadowPodCountSource<S>): LabeledValue<Labels>[] {
  const counts = new Map<string, LabeledValue<Labels>>();
  for (const s of src.shadows()) {
    const pod = src.podOf(s);
    const labels = {
      remote_cluster_id: src.consumerOf(s) ?? UNKNOWN_CONSUMER,
      phase: pod ? (pod.status?.phase ?? "Pending") : NO_POD_PHASE,
    };
    const key = `${labels.remote_cluster_id}\n${labels.phase}`;
    const entry = counts.get(key);
    if (entry) entry.value++;
    else counts.set(key, { labels, value: 1 });
  }
  return [...counts.values()];
}

export function registerShadowPodMetrics<S extends KubeObject>(registry: Registry, src: ShadowPodCountSource<S>): void {
  registry.callbackGauge({
    name: "liqo_shadowpods",
    help: "ShadowPods consumers created in this cluster, by consumer (remote_cluster_id) and the phase of the pod each keeps (NoPod: none now).",
    labelNames: ["remote_cluster_id", "phase"] as const,
    collect: () => shadowPodCounts(src),
  });
}
