// The clusterSelector of a NamespaceOffloading: a core/v1 NodeSelector matched against the labels
// (and name) of virtual nodes, with Kubernetes' semantics, except that no terms selects every
// cluster (as Liqo short-circuits it).
import type { NamespaceOffloadingSpec } from "../apis/index.ts";

export type NodeSelector = NonNullable<NamespaceOffloadingSpec["clusterSelector"]>;
type Term = NodeSelector["nodeSelectorTerms"][number];
type Requirement = NonNullable<Term["matchExpressions"]>[number];

export interface SelectableNode {
  name: string;
  labels: Record<string, string>;
}

const FIELD = "spec.clusterSelector.nodeSelectorTerms";
const INTEGER = /^[+-]?\d+$/;
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `key "${key}" has an invalid prefix (a DNS subdomain such as topology.liqo.io)`;
  if (name.length > 63 || !LABEL_NAME.test(name))
    return `key "${key}" is not a valid label key (such as topology.liqo.io/region)`;
  return undefined;
}

function expressionProblem(r: Requirement): string | undefined {
  const values = r.values ?? [];
  const keyProblem = labelKeyProblem(r.key);
  if (keyProblem) return keyProblem;
  switch (r.operator) {
    case "In":
    case "NotIn":
      return values.length === 0 ? `operator ${r.operator} needs at least one value` : undefined;
    case "Exists":
    case "DoesNotExist":
      return values.length > 0 ? `operator ${r.operator} takes no values (got ${values.length})` : undefined;
    case "Gt":
    case "Lt":
      return values.length !== 1 || !INTEGER.test(values[0]!)
        ? `operator ${r.operator} needs exactly one integer value (got ${JSON.stringify(values)})`
        : undefined;
    default:
      return `operator "${r.operator}" is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt`;
  }
}

function fieldProblem(r: Requirement): string | undefined {
  if (r.key !== "metadata.name") return `field "${r.key}" cannot be selected; only metadata.name can`;
  if (r.operator !== "In" && r.operator !== "NotIn")
    return `operator "${r.operator}" cannot select fields; use In or NotIn`;
  return (r.values ?? []).length !== 1 ? `operator ${r.operator} on metadata.name needs exactly one value` : undefined;
}

/** Every reason the selector cannot be evaluated, each naming the requirement; empty when valid. */
export function nodeSelectorProblems(selector: NodeSelector | undefined): string[] {
  const problems: string[] = [];
  (selector?.nodeSelectorTerms ?? []).forEach((term, t) => {
    (term.matchExpressions ?? []).forEach((r, i) => {
      const p = expressionProblem(r);
      if (p) problems.push(`${FIELD}[${t}].matchExpressions[${i}]: ${p}`);
    });
    (term.matchFields ?? []).forEach((r, i) => {
      const p = fieldProblem(r);
      if (p) problems.push(`${FIELD}[${t}].matchFields[${i}]: ${p}`);
    });
  });
  return problems;
}

function matchesExpression(labels: Record<string, string>, r: Requirement): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  const values = r.values ?? [];
  switch (r.operator) {
    case "In":
      return has && values.includes(value!);
    case "NotIn":
      return !has || !values.includes(value!);
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
    case "Gt":
    case "Lt": {
      // A label that is not an integer never satisfies Gt/Lt, as in Kubernetes.
      if (!has || !INTEGER.test(value!)) return false;
      const [a, b] = [BigInt(value!), BigInt(values[0]!)];
      return r.operator === "Gt" ? a > b : a < b;
    }
    default:
      return false;
  }
}

function matchesTerm(node: SelectableNode, term: Term): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  // An empty term matches nothing (Kubernetes' rule), unlike an empty list of terms.
  if (expressions.length === 0 && fields.length === 0) return false;
  return (
    expressions.every((r) => matchesExpression(node.labels, r)) &&
    fields.every((r) => (r.operator === "In") === (r.values ?? []).includes(node.name))
  );
}

/** Terms are ORed, requirements in a term ANDed; no selector or no terms selects every node. */
export function matchesNodeSelector(node: SelectableNode, selector: NodeSelector | undefined): boolean {
  const terms = selector?.nodeSelectorTerms ?? [];
  if (terms.length === 0) return true;
  return terms.some((term) => matchesTerm(node, term));
}
