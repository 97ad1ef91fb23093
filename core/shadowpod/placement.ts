// Where a pod that arrives through a peering may run: on this cluster's physical nodes only, never
// on one of its virtual nodes. Without this, clusters peered both ways (or a mesh) pass pods on:
// rome offloads to milan, milan's scheduler puts the copy on its virtual node for rome (or for a
// third cluster), and the pod chains or ping-pongs. The consumer's pods reflector already drops
// liqo's toleration; this rule holds whatever the ShadowPod says, so neither a user's own
// toleration nor a peer writing ShadowPods with its identity can chain a pod. Pure.
import { TYPE_LABEL, VIRTUAL_NODE_TAINT, VIRTUAL_NODE_TYPE } from "../apis/labels.ts";
import { requireNodeTerms, type SelectorTerm } from "../kube/node-affinity.ts";
import type { PodSpec } from "../kube/types.ts";

/** The term every offloaded pod's required node affinity is ANDed with. */
export const PHYSICAL_NODES_ONLY: SelectorTerm = {
  matchExpressions: [{ key: TYPE_LABEL, operator: "NotIn", values: [VIRTUAL_NODE_TYPE] }],
};

/**
 * The spec of the provider's pod for a ShadowPod's: no nodeName (a peer does not bind pods to this
 * cluster's nodes, virtual ones least of all: the scheduler places them), no toleration of the
 * virtual-node taint, and a required node affinity that excludes virtual nodes, ANDed with the
 * pod's own terms. A copy: the input is left as it is.
 */
export function providerPodSpec(spec: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: PodSpec = structuredClone(spec ?? {});
  delete out.nodeName;
  if (Array.isArray(out.tolerations)) {
    const kept = out.tolerations.filter((t) => t?.key !== VIRTUAL_NODE_TAINT.key);
    if (kept.length) out.tolerations = kept;
    else delete out.tolerations;
  }
  requireNodeTerms(out, [PHYSICAL_NODES_ONLY]);
  return out;
}
