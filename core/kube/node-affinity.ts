// Required node affinity as Kubernetes reads it: a list of terms that are ORed, each a list of
// requirements that are ANDed. Pure helpers shared by whoever adds a constraint to a pod (the
// webhook in the consumer, the ShadowPod controller in the provider) without loosening the pod's own.

export interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}
export interface SelectorTerm {
  matchExpressions?: Requirement[];
  matchFields?: Requirement[];
}

/** A pod's affinity, with the required node terms named (the rest passes through). */
export interface Affinity {
  nodeAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms: SelectorTerm[] };
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

/** ANDs two ORed term lists: every pair merged (a pod's own constraints keep holding). */
export function andTerms(a: SelectorTerm[], b: SelectorTerm[]): SelectorTerm[] {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  return a.flatMap((x) =>
    b.map((y) => {
      const term: SelectorTerm = { matchExpressions: [...(x.matchExpressions ?? []), ...(y.matchExpressions ?? [])] };
      const fields = [...(x.matchFields ?? []), ...(y.matchFields ?? [])];
      if (fields.length) term.matchFields = fields;
      return term;
    }),
  );
}

/** Mutates `spec` (a copy the caller owns): its required node terms ANDed with `terms`. */
export function requireNodeTerms(spec: { affinity?: Affinity }, terms: SelectorTerm[]): void {
  if (!terms.length) return;
  const affinity = (spec.affinity ??= {});
  const nodeAffinity = (affinity.nodeAffinity ??= {});
  const existing = nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution = { nodeSelectorTerms: andTerms(existing, terms) };
}
