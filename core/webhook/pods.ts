// Pod scheduling constraints from a namespace's NamespaceOffloading: the pod offloading strategy
// (LocalAndRemote, Local, Remote) and the cluster selector become a toleration for the virtual-node
// taint and required node affinity. Pure: a mutated copy, never the input.
import { TYPE_LABEL, VIRTUAL_NODE_TAINT, VIRTUAL_NODE_TYPE } from "../apis/labels.ts";
import { requireNodeTerms, type Requirement, type SelectorTerm } from "../kube/node-affinity.ts";
import type { PodSpec, Toleration } from "../kube/types.ts";
import { hostNamespacesAsked } from "../kube/host-namespaces.ts";

export type PodOffloadingStrategy = "LocalAndRemote" | "Local" | "Remote";

const notVirtual: Requirement = { key: TYPE_LABEL, operator: "NotIn", values: [VIRTUAL_NODE_TYPE] };
const isVirtual: Requirement = { key: TYPE_LABEL, operator: "In", values: [VIRTUAL_NODE_TYPE] };
const toleration: Toleration = { key: VIRTUAL_NODE_TAINT.key, operator: "Exists", effect: VIRTUAL_NODE_TAINT.effect };

/** The node terms (ORed) a strategy allows; the cluster selector narrows the virtual nodes. */
export function allowedTerms(strategy: PodOffloadingStrategy, clusterSelector: SelectorTerm[]): SelectorTerm[] {
  const virtual: SelectorTerm[] = clusterSelector.length
    ? clusterSelector.map((t) => ({ ...t, matchExpressions: [...(t.matchExpressions ?? []), isVirtual] }))
    : [{ matchExpressions: [isVirtual] }];
  if (strategy === "Local") return [{ matchExpressions: [notVirtual] }];
  if (strategy === "Remote") return virtual;
  return clusterSelector.length ? [{ matchExpressions: [notVirtual] }, ...virtual] : [];
}

export function mutatePodSpec(
  spec: PodSpec,
  strategy: PodOffloadingStrategy,
  clusterSelector: SelectorTerm[],
): PodSpec {
  const out: PodSpec = structuredClone(spec);
  if (
    strategy !== "Local" &&
    !(out.tolerations ?? []).some((t) => t.key === toleration.key && t.operator === "Exists")
  ) {
    out.tolerations = [...(out.tolerations ?? []), toleration];
  }
  requireNodeTerms(out, allowedTerms(strategy, clusterSelector));
  return out;
}

export type JsonPatchOp = { op: "add" | "replace" | "remove"; path: string; value?: unknown };

/** The JSON patch from one spec to another, field by top-level field: computed once, by diffing. */
export function specPatch(before: Record<string, unknown>, after: Record<string, unknown>): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const path = `/spec/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    if (!(key in after)) ops.push({ op: "remove", path });
    else if (!(key in before)) ops.push({ op: "add", path, value: after[key] });
    else if (!Bun.deepEquals(before[key], after[key])) ops.push({ op: "replace", path, value: after[key] });
  }
  return ops;
}

/** Why a pod must be refused, if it asks for host namespaces it could never get: with the Remote
 * strategy it can only run on a virtual node, and an offloaded pod never shares a host with
 * anything (the provider's node is not ours to give away), so admitting it would only produce a
 * pod silently running without what it asked for. With LocalAndRemote it may still run locally. */
export function hostNamespacesProblem(
  spec: Record<string, unknown>,
  strategy: PodOffloadingStrategy,
  namespace: string,
): string | undefined {
  const asked = hostNamespacesAsked(spec);
  if (strategy !== "Remote" || asked.length === 0) return undefined;
  return (
    `pod asks for ${asked.join(", ")}, but namespace ${namespace} offloads pods with podOffloadingStrategy Remote, so it could only run ` +
    `on a virtual node, where host namespaces are not available; remove ${asked.join("/")} from the pod or use podOffloadingStrategy LocalAndRemote or Local`
  );
}
