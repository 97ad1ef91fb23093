// Tightening a namespace's podOffloadingStrategy (LocalAndRemote → Local or Remote) evicts the
// running pods that the new strategy forbids, so their controllers re-create them where they may
// run (Liqo v0.5 documents that it leaves them in place). The pod webhook gives the new pods the
// new affinity. The strategy last enforced is recorded in an annotation; evictions come before the
// annotation moves, so a crash mid-way repeats them on restart. The first offloading of a
// namespace evicts nothing: pods that predate it stay where they are, as in Liqo.
import { NamespaceOffloadingResource, PodOffloadingStrategy } from "../apis/index.ts";
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../kube/errors.ts";
import { keyOf, Resources, type KubeObject } from "../kube/resources.ts";
import type { Pod } from "../kube/types.ts";
import type { Logger } from "../log.ts";
import type { EventRecorder } from "../kube/events.ts";

export const ENFORCED_STRATEGY_ANNOTATION = "offloading.liqo.io/enforced-pod-offloading-strategy";

/** Why the strategy forbids a pod on this node, or undefined when it may stay. */
export function strategyViolation(
  strategy: string,
  nodeName: string | undefined,
  virtualNodes: ReadonlySet<string>,
): string | undefined {
  if (!nodeName) return undefined;
  const virtual = virtualNodes.has(nodeName);
  if (strategy === PodOffloadingStrategy.Local && virtual)
    return `it runs on virtual node ${nodeName}, and podOffloadingStrategy Local keeps pods in the local cluster`;
  if (strategy === PodOffloadingStrategy.Remote && !virtual)
    return `it runs on physical node ${nodeName}, and podOffloadingStrategy Remote runs pods only in remote clusters`;
  return undefined;
}

export interface EnforceOptions {
  client: KubeClient;
  offloading: KubeObject;
  strategy: string;
  virtualNodes: ReadonlySet<string>;
  events: EventRecorder;
  logger: Logger;
}

/** Returns the names of the pods evicted by this pass. */
export async function enforcePodOffloadingStrategy(o: EnforceOptions): Promise<string[]> {
  const { client, offloading, strategy } = o;
  const namespace = offloading.metadata.namespace!;
  const previous = offloading.metadata.annotations?.[ENFORCED_STRATEGY_ANNOTATION];
  if (previous === strategy) return [];
  const evicted: string[] = [];
  const blocked: string[] = [];
  if (previous !== undefined) {
    const pods = (await client.list<Pod>(Resources.pods, { namespace })).items;
    for (const pod of pods) {
      if (pod.metadata.deletionTimestamp || pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed")
        continue;
      const why = strategyViolation(strategy, pod.spec?.nodeName, o.virtualNodes);
      if (!why) continue;
      const name = pod.metadata.name!;
      try {
        await client.request("POST", `/api/v1/namespaces/${namespace}/pods/${name}/eviction`, {
          body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name, namespace } },
          key: keyOf(namespace, name),
        });
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 404) continue;
        // 429: a PodDisruptionBudget does not allow it now; the eviction is retried, as kubectl drain does.
        if (err instanceof KubeApiError && err.status === 429) {
          blocked.push(name);
          continue;
        }
        throw err;
      }
      evicted.push(name);
      const message = `evicted because ${why} (the strategy changed from ${previous} to ${strategy}); its controller re-creates it where the strategy allows`;
      o.events.normal(pod, "EvictedByOffloadingStrategy", message);
      o.logger.info("pod evicted by the offloading strategy", {
        key: keyOf(namespace, name),
        from: previous,
        to: strategy,
      });
    }
    if (evicted.length > 0) {
      o.events.normal(
        offloading,
        "PodsEvicted",
        `podOffloadingStrategy ${previous} → ${strategy}: evicted ${evicted.join(", ")}`,
      );
    }
    if (blocked.length > 0) {
      o.events.warning(
        offloading,
        "EvictionBlocked",
        `podOffloadingStrategy ${strategy}: a PodDisruptionBudget does not allow evicting ${blocked.join(", ")} yet; retrying`,
      );
      throw new RetryAfterError(5_000, `evictions blocked by a PodDisruptionBudget in ${namespace}`);
    }
  }
  await client.mergePatch(NamespaceOffloadingResource, offloading.metadata.name!, namespace, {
    metadata: { annotations: { [ENFORCED_STRATEGY_ANNOTATION]: strategy } },
  });
  return evicted;
}
