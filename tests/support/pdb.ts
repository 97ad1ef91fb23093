// PodDisruptionBudgets in tests: the resource, and one that keeps `minAvailable` of the pods labelled `matchLabels`.
import type { KubeObject, ResourceRef } from "../../core/kube/resources.ts";

export const PDBS: ResourceRef = {
  group: "policy",
  version: "v1",
  kind: "PodDisruptionBudget",
  plural: "poddisruptionbudgets",
  namespaced: true,
};

export function pdb(
  name: string,
  namespace: string,
  minAvailable: number,
  matchLabels: Record<string, string>,
  extra: Record<string, unknown> = {},
): KubeObject {
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name, namespace },
    spec: { minAvailable, selector: { matchLabels }, ...extra },
  };
}
