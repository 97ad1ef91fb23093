// The consumer's half of service continuity: an offloaded pod whose provider has been out of reach
// longer than the threshold is not Ready here. Its endpoints come from kube-controller-manager's
// EndpointSlice controller, which reads the pod's Ready condition, so the virtual kubelet turns that
// condition (and ContainersReady) False, as the node lifecycle controller does for pods of a node
// that stopped reporting; the next remote status, once the provider answers, brings them back.
import type { Condition, PodStatus } from "../kube/types.ts";

/** The reason on the conditions, like the virtual node's Ready condition while the provider is dark. */
export const UNREACHABLE_REASON = "RemoteClusterUnreachable";
const TYPES = ["Ready", "ContainersReady"];

/** The pod's status with Ready and ContainersReady False (added when missing); everything else kept. */
export function unreachablePodStatus(status: PodStatus, message: string, now: Date): PodStatus {
  const conditions: Condition[] = (status.conditions ?? []).map((c) =>
    TYPES.includes(c.type) ? notReady(c, message, now) : c,
  );
  for (const type of TYPES)
    if (!conditions.some((c) => c.type === type)) conditions.push(notReady({ type, status: "Unknown" }, message, now));
  return { ...status, conditions };
}

function notReady(c: Condition, message: string, now: Date): Condition {
  return {
    ...c,
    status: "False",
    reason: UNREACHABLE_REASON,
    message,
    // A condition that was already False keeps its transition time: nothing changed for it.
    lastTransitionTime: c.status === "False" && c.lastTransitionTime ? c.lastTransitionTime : now.toISOString(),
  };
}

/**
 * The provider's status for the local pod while the provider is dark past the threshold: everything
 * as the provider last said (its API server may still answer when only the tunnel is down, and a
 * pod that ends there must end here too), with Ready and ContainersReady held False. The ones the
 * local pod already holds False are kept as they are (message and time), so an unchanged remote
 * status writes nothing.
 */
export function holdNotReady(remote: PodStatus, local: PodStatus | undefined, message: string, now: Date): PodStatus {
  const held = markedUnreachable(local) ? local?.conditions : undefined;
  const fresh = unreachablePodStatus(remote, message, now);
  if (!held) return fresh;
  return {
    ...fresh,
    conditions: fresh.conditions?.map((c) => (TYPES.includes(c.type) ? (held.find((h) => h.type === c.type) ?? c) : c)),
  };
}

/** Whether the status already says the provider is unreachable (nothing to write). */
export function markedUnreachable(status: PodStatus | undefined): boolean {
  return TYPES.every((t) =>
    status?.conditions?.some((c) => c.type === t && c.status === "False" && c.reason === UNREACHABLE_REASON),
  );
}
