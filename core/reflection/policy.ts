// Reflection policies, as Liqo 1.x has them: per kind, which local objects are reflected. "all"
// (Liqo's DenyList, the default): every object but those annotated liqo.io/skip-reflection; "opt-in"
// (Liqo's AllowList): only objects annotated liqo.io/allow-reflection; "none": no object of the
// kind (Liqo sets the kind's workers to 0); "selector(app=web)": only objects whose labels match
// (kubectl's -l syntax), skip-reflection honoured as under "all". The cluster's policy can be
// overridden per namespace by the annotation liqo.io/reflection-policy on the local namespace (the
// kinds it names; the others follow the cluster). EndpointSlices also follow their Service, as in
// Liqo: a slice is reflected only while its Service is. Copies an object loses by a policy change
// are removed from the provider. Pods, PersistentVolumeClaims and ServiceAccount tokens follow their
// own logic, as in Liqo, and have no policy.
import {
  LabelSelectorError,
  matchesLabels,
  parseLabelSelector,
  splitOutsideParens,
  type LabelRequirement,
} from "../kube/label-selector.ts";
import type { KubeObject } from "../kube/resources.ts";
import { ANNOTATION_SKIP } from "./abi.ts";

const ALLOW_REFLECTION_ANNOTATION = "liqo.io/allow-reflection";
/** On a local namespace: `kind=mode,...` over the cluster's policy for the objects in it. */
export const NAMESPACE_POLICY_ANNOTATION = "liqo.io/reflection-policy";
/**
 * Written by liqo on the namespace: the override in force, so a controller manager that restarts
 * while the user's annotation is refused keeps it (rather than falling back to the cluster's
 * policy and removing copies the override kept).
 */
export const NAMESPACE_POLICY_IN_FORCE_ANNOTATION = "liqo.io/reflection-policy-in-force";
/** The label naming an EndpointSlice's Service. */
const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** The kinds a policy may name (plural, lower case, as kubectl names them), with their Kind. */
export const POLICY_KINDS = {
  configmaps: "ConfigMap",
  secrets: "Secret",
  services: "Service",
  endpointslices: "EndpointSlice",
  ingresses: "Ingress",
  events: "Event",
} as const;
export type PolicyKind = keyof typeof POLICY_KINDS;
const POLICY_MODES = ["all", "opt-in", "none"] as const;
/** A fixed mode, or `selector(<label selector>)`: only objects whose labels match. */
export type PolicyMode = (typeof POLICY_MODES)[number] | `selector(${string})`;
export type ReflectionPolicy = Record<PolicyKind, PolicyMode>;
/** A namespace's override: the kinds it names. */
export type PolicyOverride = Partial<ReflectionPolicy>;

export const DEFAULT_POLICY: ReflectionPolicy = Object.freeze(
  Object.fromEntries(Object.keys(POLICY_KINDS).map((k) => [k, "all"])) as ReflectionPolicy,
);

export class ReflectionPolicyError extends Error {
  override name = "ReflectionPolicyError";
}

/** Liqo 1.x's words for the same modes. */
const ALIASES: Record<string, PolicyMode> = { denylist: "all", allowlist: "opt-in" };
/** Liqo 1.x's value names (reflection.<resource>.type) and Kinds, for the same kinds. */
const KIND_ALIASES: Record<string, PolicyKind> = Object.fromEntries(
  Object.entries(POLICY_KINDS).flatMap(([plural, kind]) => [
    [plural, plural],
    [kind.toLowerCase(), plural],
  ]),
) as Record<string, PolicyKind>;

const SELECTOR = /^selector\s*\(([\s\S]*)\)$/i;

function mode(kind: string, value: unknown, where: string): PolicyMode {
  const selector = typeof value === "string" ? SELECTOR.exec(value.trim()) : null;
  if (selector) return selectorMode(kind, selector[1]!.trim(), where);
  const v = typeof value === "string" ? value.trim().toLowerCase() : "";
  const m = (POLICY_MODES as readonly string[]).includes(v) ? (v as PolicyMode) : ALIASES[v];
  if (!m)
    throw new ReflectionPolicyError(
      `${where}: ${kind}=${JSON.stringify(value)} is not a reflection policy; use all, opt-in or none (Liqo's DenyList and AllowList are accepted too), or selector(<labels>) such as selector(app=web)`,
    );
  return m;
}

function selectorMode(kind: string, text: string, where: string): PolicyMode {
  if (!text)
    throw new ReflectionPolicyError(`${where}: ${kind}=selector() selects every object; write ${kind}=all instead`);
  try {
    parseLabelSelector(text);
  } catch (err) {
    if (!(err instanceof LabelSelectorError)) throw err;
    throw new ReflectionPolicyError(`${where}: ${kind}=selector(${text}): ${err.message}`);
  }
  return `selector(${text})`;
}

function kindOf(name: string, where: string): PolicyKind {
  const k = KIND_ALIASES[name.trim().toLowerCase()];
  if (!k)
    throw new ReflectionPolicyError(
      `${where}: unknown kind ${JSON.stringify(name)}; reflection policies exist for ${Object.keys(POLICY_KINDS).join(", ")}`,
    );
  return k;
}

/**
 * The kinds a policy text or map names, and their modes: a map (chart values, the ConfigMap) or
 * the `kind=mode,kind=mode` text of a flag or of a namespace's annotation (commas inside
 * `selector(...)` belong to the selector). Any unknown kind or mode refuses the whole input.
 */
export function parsePolicyEntries(
  input: string | Record<string, unknown>,
  where = "reflection policy",
): PolicyOverride {
  const entries: [string, unknown][] =
    typeof input === "string"
      ? splitOutsideParens(input)
          .filter(Boolean)
          .map((s) => {
            const eq = s.indexOf("=");
            if (eq < 0)
              throw new ReflectionPolicyError(
                `${where}: ${JSON.stringify(s)} is not kind=policy (e.g. secrets=opt-in)`,
              );
            return [s.slice(0, eq), s.slice(eq + 1)];
          })
      : Object.entries(input);
  const policy: PolicyOverride = {};
  for (const [name, value] of entries) {
    const kind = kindOf(name, where);
    policy[kind] = mode(kind, value, where);
  }
  return policy;
}

/** A whole policy from its parts, over the defaults (see parsePolicyEntries). */
export function parseReflectionPolicy(
  input: string | Record<string, unknown>,
  where = "reflection policy",
): ReflectionPolicy {
  return { ...DEFAULT_POLICY, ...parsePolicyEntries(input, where) };
}

/** The annotation's value asks for reflection: present and not "false" (as skip-reflection=false reflects). */
const says = (obj: KubeObject, key: string) => {
  const v = obj.metadata.annotations?.[key];
  return v !== undefined && v.trim().toLowerCase() !== "false";
};

/**
 * Reads an object from the local caches (the engine's); undefined when absent. The engine's throws
 * RetryAfterError while that cache is still listing.
 */
export type LocalLookup = (kind: string, namespace: string, name: string) => KubeObject | undefined;

const policyKindOf = (kind: string) =>
  Object.entries(POLICY_KINDS).find(([, k]) => k === kind)?.[0] as PolicyKind | undefined;

/**
 * Judges objects against a cluster policy and the namespaces' overrides, selectors parsed once.
 * Kinds without a policy are always reflected. Under "all" and selector(...),
 * liqo.io/skip-reflection is the reflectors' own business (they delete the copy), except for
 * Events, which no reflector handles. An EndpointSlice labelled with its Service's name is
 * reflected only while that Service is (read through `lookup`, the local caches).
 */
export function createPolicyJudge(
  cluster: ReflectionPolicy,
  overrides: ReadonlyMap<string, PolicyOverride> = new Map(),
) {
  const selectors = new Map<string, LabelRequirement[]>();
  const modeFor = (kind: PolicyKind, namespace: string | undefined): PolicyMode =>
    (namespace !== undefined && overrides.get(namespace)?.[kind]) || cluster[kind];
  const byPolicy = (kind: string, obj: KubeObject): boolean => {
    const k = policyKindOf(kind);
    if (!k) return true;
    const m = modeFor(k, obj.metadata.namespace);
    if (m === "none") return false;
    if (m === "opt-in") return says(obj, ALLOW_REFLECTION_ANNOTATION);
    if (m !== "all") {
      let reqs = selectors.get(m);
      if (!reqs) selectors.set(m, (reqs = parseLabelSelector(SELECTOR.exec(m)![1]!)));
      if (!matchesLabels(obj.metadata.labels, reqs)) return false;
    }
    return kind !== "Event" || !says(obj, ANNOTATION_SKIP);
  };
  return {
    modeFor,
    admits(kind: string, obj: KubeObject, lookup?: LocalLookup): boolean {
      if (!byPolicy(kind, obj)) return false;
      const service = kind === "EndpointSlice" ? obj.metadata.labels?.[SERVICE_NAME_LABEL] : undefined;
      if (!service || !lookup) return true;
      const svc = lookup("Service", obj.metadata.namespace ?? "", service);
      return !!svc && byPolicy("Service", svc) && !says(svc, ANNOTATION_SKIP);
    },
  };
}
export type PolicyJudge = ReturnType<typeof createPolicyJudge>;

/** Whether the policy reflects this local object of this Kind (see createPolicyJudge). */
export function admits(policy: ReflectionPolicy, kind: string, obj: KubeObject, lookup?: LocalLookup): boolean {
  return createPolicyJudge(policy).admits(kind, obj, lookup);
}

/**
 * The local objects whose admission follows this one: a Service's EndpointSlices. The engine
 * looks at them again whenever it changes.
 */
export function followersOf(
  kind: string,
  obj: KubeObject,
): { kind: string; labels: Record<string, string> } | undefined {
  if (kind !== "Service" || !obj.metadata.name) return undefined;
  return { kind: "EndpointSlice", labels: { [SERVICE_NAME_LABEL]: obj.metadata.name } };
}

/** `configmaps=all,secrets=opt-in,...`: the flag's syntax, and what liqoctl status shows. */
export function formatReflectionPolicy(policy: PolicyOverride): string {
  return Object.keys(POLICY_KINDS)
    .filter((k) => policy[k as PolicyKind] !== undefined)
    .map((k) => `${k}=${policy[k as PolicyKind]}`)
    .join(",");
}
