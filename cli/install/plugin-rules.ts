// liqoctl plugin allow|disallow: the pure parts. A name the user gives (kind, plural, short name,
// with or without its group) resolved against the cluster's discovery, and the edit of the
// release's values that lets liqo's controller manager read and delete that kind
// (reflection.pluginRules) and, on a provider, grant it to peers' plugins (reflection.grantPeerPlugins).
//
// Which rule is liqoctl's: exactly one group, one resource and the verbs RULE_VERBS, the rule
// `allow` writes. `disallow` removes only rules of that shape; a rule of another shape (several
// resources, other verbs) was written by hand and is left alone, and reported when it still covers
// the kind. The values keep no other record, so a release edited by hand reads the same way.

type Values = Record<string, unknown>;

/** A consumer reads the kind (get, list, watch); a provider lists and deletes the copies of a revoked plugin (list, delete). */
export const RULE_VERBS = ["get", "list", "watch", "delete"];

export interface ServedResource {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular?: string;
  shortNames?: string[];
  namespaced: boolean;
}

export interface PluginRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** `plural.group` (`plural` for the core group), as kubectl names a resource. */
export const resourceName = (r: { group: string; plural: string }) => (r.group ? `${r.plural}.${r.group}` : r.plural);

/**
 * The one served resource a name means: a kind, a plural, a singular or a short name (any case),
 * optionally followed by `.group`. Throws an Error naming the candidates when it means none or several.
 */
export function resolveKind(name: string, served: ServedResource[]): ServedResource {
  const dot = name.indexOf(".");
  const bare = (dot < 0 ? name : name.slice(0, dot)).toLowerCase();
  const group = dot < 0 ? undefined : name.slice(dot + 1).toLowerCase();
  const named = (r: ServedResource) =>
    r.kind.toLowerCase() === bare ||
    r.plural === bare ||
    r.singular === bare ||
    (r.shortNames ?? []).some((s) => s.toLowerCase() === bare);
  const found = served.filter((r) => named(r) && (group === undefined || r.group === group));
  // One resource per group: discovery may list a group's kind under several versions.
  const byResource = new Map<string, ServedResource>();
  for (const r of found) if (!byResource.has(resourceName(r))) byResource.set(resourceName(r), r);
  const matches = [...byResource.values()];
  if (matches.length === 1) return matches[0]!;
  if (!matches.length) {
    const elsewhere = group === undefined ? [] : served.filter(named).map(resourceName);
    throw new Error(
      `unknown kind ${name}: this cluster serves no such resource${elsewhere.length ? ` in group ${group} (it does in: ${[...new Set(elsewhere)].join(", ")})` : ""}; ` +
        `kubectl api-resources --namespaced lists the kinds it serves (a CRD must be installed first)`,
    );
  }
  throw new Error(
    `${name} names ${matches.length} resources here (${matches.map(resourceName).join(", ")}): give the group, e.g. ${matches[0]!.kind}.${matches[0]!.group || "<group>"}`,
  );
}

const isObject = (v: unknown): v is Values => typeof v === "object" && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

function rulesOf(values: Values): unknown[] {
  const reflection = values.reflection;
  return isObject(reflection) && Array.isArray(reflection.pluginRules) ? reflection.pluginRules : [];
}

/** The rule `allow` writes for a resource. */
export const ruleFor = (r: { group: string; plural: string }): PluginRule => ({
  apiGroups: [r.group],
  resources: [r.plural],
  verbs: [...RULE_VERBS],
});

/** Whether a rule is one `allow` wrote for this resource (its exact shape). */
export function isLiqoctlRule(rule: unknown, r: { group: string; plural: string }): boolean {
  if (!isObject(rule)) return false;
  const verbs = strings(rule.verbs);
  return (
    Object.keys(rule).every((k) => k === "apiGroups" || k === "resources" || k === "verbs") &&
    JSON.stringify(strings(rule.apiGroups)) === JSON.stringify([r.group]) &&
    JSON.stringify(strings(rule.resources)) === JSON.stringify([r.plural]) &&
    verbs.length === RULE_VERBS.length &&
    RULE_VERBS.every((v) => verbs.includes(v))
  );
}

/** The verbs of RULE_VERBS that the rules give on a resource (`*` counts for every group, resource or verb). */
export function coveredVerbs(rules: unknown[], r: { group: string; plural: string }): string[] {
  const out = new Set<string>();
  for (const rule of rules) {
    if (!isObject(rule)) continue;
    const groups = strings(rule.apiGroups);
    const resources = strings(rule.resources);
    if (!(groups.includes(r.group) || groups.includes("*"))) continue;
    if (!(resources.includes(r.plural) || resources.includes("*"))) continue;
    const verbs = strings(rule.verbs);
    for (const v of RULE_VERBS) if (verbs.includes(v) || verbs.includes("*")) out.add(v);
  }
  return RULE_VERBS.filter((v) => out.has(v));
}

export interface Edit {
  values: Values;
  /** What changed, for the user (empty: nothing to do). */
  changes: string[];
  /** What was left as it is, and why. */
  notes: string[];
}

function withReflection(values: Values, patch: Values): Values {
  const out = structuredClone(values);
  out.reflection = { ...(isObject(out.reflection) ? out.reflection : {}), ...patch };
  return out;
}

/** The values with the resource allowed (and, with grant, peers' plugins granted): unchanged when they already are. */
export function allowKind(values: Values, r: { group: string; plural: string }, o: { grant?: boolean } = {}): Edit {
  const rules = rulesOf(values);
  const name = resourceName(r);
  const changes: string[] = [];
  const notes: string[] = [];
  const patch: Values = {};
  const covered = coveredVerbs(rules, r);
  if (covered.length === RULE_VERBS.length) {
    notes.push(
      rules.some((rule) => isLiqoctlRule(rule, r))
        ? `${name} is already allowed (reflection.pluginRules)`
        : `${name} is already allowed by a rule of reflection.pluginRules written by hand`,
    );
  } else {
    patch.pluginRules = [...rules, ruleFor(r)];
    changes.push(`reflection.pluginRules: + ${RULE_VERBS.join(",")} on ${name}`);
  }
  if (o.grant) {
    const reflection = isObject(values.reflection) ? values.reflection : {};
    if (reflection.grantPeerPlugins === true)
      notes.push("peers' plugins are already granted (reflection.grantPeerPlugins)");
    else {
      patch.grantPeerPlugins = true;
      changes.push("reflection.grantPeerPlugins: true (grant peers' reflector plugins the kinds this cluster accepts)");
    }
  }
  return { values: changes.length ? withReflection(values, patch) : structuredClone(values), changes, notes };
}

/**
 * The values without the rules `allow` wrote for the resource. Rules written by hand stay (noted
 * when they still cover it). Granting goes off with the last rule: a provider granting kinds it
 * may not delete would leave copies behind when a plugin is removed.
 */
export function disallowKind(values: Values, r: { group: string; plural: string }): Edit {
  const rules = rulesOf(values);
  const name = resourceName(r);
  const kept = rules.filter((rule) => !isLiqoctlRule(rule, r));
  const changes: string[] = [];
  const notes: string[] = [];
  const patch: Values = {};
  if (kept.length !== rules.length) {
    patch.pluginRules = kept;
    changes.push(`reflection.pluginRules: - ${RULE_VERBS.join(",")} on ${name}`);
  }
  const still = coveredVerbs(kept, r);
  if (still.length)
    notes.push(
      `a rule of reflection.pluginRules written by hand still gives ${still.join(", ")} on ${name}: liqoctl leaves it; change it with liqoctl install --set or helm`,
    );
  else if (!changes.length) notes.push(`${name} is not allowed (no rule of reflection.pluginRules covers it)`);
  const reflection = isObject(values.reflection) ? values.reflection : {};
  if (changes.length && !kept.length && reflection.grantPeerPlugins === true) {
    patch.grantPeerPlugins = false;
    changes.push(
      "reflection.grantPeerPlugins: false (no plugin kind is allowed any more: peers' plugins are not granted)",
    );
  }
  return { values: changes.length ? withReflection(values, patch) : structuredClone(values), changes, notes };
}
