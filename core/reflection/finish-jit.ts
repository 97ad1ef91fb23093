// An answer the live memo keeps handing out (the same recorded call, for one namespace pair,
// resource, direction and target state) is finished by generated code: the base copy and the
// edits in one straight-line function, where finishPlan (finish.ts) re-checks the plan on every
// call, copies through the shared baseCopy (whose spreads see every kind) and looks up the
// edits' code. The code is the
// same base copy as objects.ts baseCopy (or statusBase for a status-only write) followed by the
// edits as edits-jit.ts staticEditLines writes them; it must answer exactly what finishPlan
// answers. Only JSON.stringify'd labels and integers are written as code; the namespace, the
// origin, the reason and the edits' values are read from arguments.
import { LABEL_MANAGED_BY, LABEL_ORIGIN, MANAGED_BY_REFLECTION, type Decision, type KubeObject } from "./abi.ts";
import { BASE_COPY_OWN, staticEditLines } from "./edits-jit.ts";
import type { Plan } from "./finish.ts";
import { compile, editHelpers } from "./objects.ts";

export type Finisher = (source: KubeObject) => Decision;

/** What finishing an answer depends on besides the answer: the call's resource, direction and pair. */
export interface FinishShape {
  /** Backward Pod-like writes: only the status subresource. */
  statusOnly: boolean;
  /** Backward answers keep the source's status. */
  keepStatus: boolean;
  /** The target namespace; undefined for cluster-scoped kinds. */
  namespace: string | undefined;
  origin: string;
}

/**
 * The finisher of `plan`, or null when the plan is not a plain one (an error, a whole object,
 * edits at the identity, a status write with edits elsewhere): finishPlan finishes those. The
 * caller has already refused a decision over a target the project does not own.
 */
export function generateFinisher(plan: Plan, shape: FinishShape): Finisher | null {
  if (plan.error !== null || plan.applyError !== null) return null;
  const C = { reason: plan.reason, namespace: shape.namespace, origin: shape.origin };
  if (plan.decision !== "apply") {
    const decision = plan.decision;
    return () => ({ decision, reason: C.reason });
  }
  if (plan.object !== undefined || plan.identity || (shape.statusOnly && !plan.statusEdits)) return null;
  const steps = compile(plan.edits);
  const ns = shape.namespace !== undefined ? "metadata.namespace = C.namespace;" : "";
  const lines: string[] = [];
  if (shape.statusOnly) {
    lines.push(`const metadata = { name: source.metadata?.name }; ${ns}`);
    lines.push(`let root = { apiVersion: source.apiVersion, kind: source.kind, metadata, status: source.status };`);
    lines.push(...staticEditLines(steps, [[], ["metadata"]]));
  } else {
    lines.push(`const m = source.metadata ?? {}; const metadata = { name: m.name }; ${ns}`);
    lines.push(`metadata.labels = { ...m.labels, ${JSON.stringify(LABEL_MANAGED_BY)}: ${JSON.stringify(MANAGED_BY_REFLECTION)}, ${JSON.stringify(LABEL_ORIGIN)}: C.origin };`);
    lines.push(`if (m.annotations) metadata.annotations = { ...m.annotations };`);
    lines.push(`let root = { ...source, metadata };`);
    if (!shape.keepStatus) lines.push(`delete root.status;`);
    lines.push(...staticEditLines(steps, BASE_COPY_OWN));
  }
  lines.push(`return { decision: "apply", reason: C.reason, object: root };`);
  // eslint-disable-next-line no-new-func -- see the header: constants as arguments, labels JSON.stringify'd
  return new Function("C", "h", "steps", `"use strict"; return (source) => {\n${lines.join("\n")}\n};`)(C, editHelpers, steps) as Finisher;
}
