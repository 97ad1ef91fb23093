// Reflection policies, as Liqo 1.x has them: per kind, which local objects are reflected. "all"
// (Liqo's DenyList, the default): every object but those annotated liqo.io/skip-reflection; "opt-in"
// (Liqo's AllowList): only objects annotated liqo.io/allow-reflection; "none": no object of the
// kind (Liqo sets the kind's workers to 0). Copies an object loses by a policy change are removed
// from the provider. Pods, PersistentVolumeClaims and ServiceAccount tokens follow their own
// logic, as in Liqo, and have no policy.
import type { KubeObject } from "../kube/resources.ts";

export const ALLOW_REFLECTION_ANNOTATION = "liqo.io/allow-reflection";
export const SKIP_REFLECTION_ANNOTATION = "liqo.io/skip-reflection";

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
export const POLICY_MODES = ["all", "opt-in", "none"] as const;
export type PolicyMode = (typeof POLICY_MODES)[number];
export type ReflectionPolicy = Record<PolicyKind, PolicyMode>;

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

function mode(kind: string, value: unknown, where: string): PolicyMode {
  const v = typeof value === "string" ? value.trim().toLowerCase() : "";
  const m = (POLICY_MODES as readonly string[]).includes(v) ? (v as PolicyMode) : ALIASES[v];
  if (!m)
    throw new ReflectionPolicyError(
      `${where}: ${kind}=${JSON.stringify(value)} is not a reflection policy; use all, opt-in or none (Liqo's DenyList and AllowList are accepted too)`,
    );
  return m;
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
 * A policy from its parts, over the defaults: a map (chart values, the ConfigMap) or the
 * `kind=mode,kind=mode` text of a flag. Any unknown kind or mode refuses the whole policy.
 */
export function parseReflectionPolicy(
  input: string | Record<string, unknown>,
  where = "reflection policy",
): ReflectionPolicy {
  const entries: [string, unknown][] =
    typeof input === "string"
      ? input
          .split(",")
          .map((s) => s.trim())
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
  const policy: ReflectionPolicy = { ...DEFAULT_POLICY };
  for (const [name, value] of entries) {
    const kind = kindOf(name, where);
    policy[kind] = mode(kind, value, where);
  }
  return policy;
}

/** The annotation's value asks for reflection: present and not "false" (as skip-reflection=false reflects). */
const says = (obj: KubeObject, key: string) => {
  const v = obj.metadata.annotations?.[key];
  return v !== undefined && v.trim().toLowerCase() !== "false";
};

/**
 * Whether the policy reflects this local object of this Kind. Kinds without a policy are always
 * reflected. Under "all", liqo.io/skip-reflection is the reflectors' own business (they delete the
 * copy), except for Events, which no reflector handles.
 */
export function admits(policy: ReflectionPolicy, kind: string, obj: KubeObject): boolean {
  const entry = Object.entries(POLICY_KINDS).find(([, k]) => k === kind);
  if (!entry) return true;
  const m = policy[entry[0] as PolicyKind];
  if (m === "none") return false;
  if (m === "opt-in") return says(obj, ALLOW_REFLECTION_ANNOTATION);
  return kind !== "Event" || !says(obj, SKIP_REFLECTION_ANNOTATION);
}

/** `configmaps=all,secrets=opt-in,...`: the flag's syntax, and what liqoctl status shows. */
export function formatReflectionPolicy(policy: ReflectionPolicy): string {
  return Object.keys(POLICY_KINDS)
    .map((k) => `${k}=${policy[k as PolicyKind]}`)
    .join(",");
}
