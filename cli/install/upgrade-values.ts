// liqoctl install on a cluster where liqo is installed already: the release keeps the values it
// has, and only what the command line gives changes. A user enabling one thing (--enable-metrics,
// a --set) must not have to restate every flag of the first install, nor lose a --set given then.
import type { InstallFlags } from "./values.ts";

type Values = Record<string, unknown>;

/** The chart values each install flag sets: a flag left out leaves these paths as the release has them. */
const FLAG_PATHS: Record<keyof InstallFlags, string[]> = {
  clusterName: ["clusterName"],
  clusterLabels: ["clusterLabels"],
  sharingPercentage: ["sharingPercentage"],
  reservedSubnets: ["networking.reservedSubnets"],
  enableHa: ["controllerManager.replicas", "gateway.replicas"],
  enableMetrics: ["metrics.enabled"],
  version: ["image.tag"],
  apiServerUrl: ["apiServer.url"],
  podCidr: ["networking.podCIDR"],
  serviceCidr: ["networking.serviceCIDR"],
  reflectionPolicy: ["reflection.policy"],
};

const isObject = (v: unknown): v is Values => typeof v === "object" && v !== null && !Array.isArray(v);

function get(values: Values, path: string): unknown {
  let at: unknown = values;
  for (const key of path.split(".")) {
    if (!isObject(at)) return undefined;
    at = at[key];
  }
  return at;
}

function set(values: Values, path: string, value: unknown): void {
  const keys = path.split(".");
  let at = values;
  for (const key of keys.slice(0, -1)) {
    if (!isObject(at[key])) at[key] = {};
    at = at[key] as Values;
  }
  at[keys.at(-1)!] = value;
}

/** Which install flags the command line gave (booleans count when given either way). */
export function givenFlags(flags: InstallFlags): (keyof InstallFlags)[] {
  return (Object.keys(FLAG_PATHS) as (keyof InstallFlags)[]).filter((k) => flags[k] !== undefined);
}

/**
 * The values to upgrade with: the release's own (what `helm get values` answers: what liqoctl
 * generated and every --set given before), with the paths of the flags given now taken from
 * `fresh` (the values this command line generates). --set flags are applied by Helm over these.
 */
export function upgradeValues(current: Values, fresh: Values, given: (keyof InstallFlags)[]): Values {
  const out = structuredClone(current);
  for (const flag of given)
    for (const path of FLAG_PATHS[flag]) {
      const value = get(fresh, path);
      if (value !== undefined) set(out, path, structuredClone(value));
    }
  return out;
}

/** Every leaf path with its value, arrays and empty objects as leaves. */
function leaves(values: unknown, prefix = ""): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (isObject(values) && Object.keys(values).length > 0) {
    for (const [k, v] of Object.entries(values))
      for (const [p, leaf] of leaves(v, prefix ? `${prefix}.${k}` : k)) out.set(p, leaf);
  } else if (prefix) out.set(prefix, values);
  return out;
}

/** `path: before → after` for each value that differs, sorted; "(unset)" for a side without it. */
export function valuesDiff(before: Values, after: Values, sets: string[] = []): string[] {
  const a = leaves(before);
  const b = leaves(after);
  // --set key=value as Helm will apply it over the values.
  for (const s of sets) {
    const eq = s.indexOf("=");
    b.set(s.slice(0, eq), coerce(s.slice(eq + 1)));
  }
  const show = (v: unknown) => (v === undefined ? "(unset)" : JSON.stringify(v));
  const lines: string[] = [];
  for (const path of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(path);
    const y = b.get(path);
    if (JSON.stringify(x) === JSON.stringify(y)) continue;
    lines.push(`${path}: ${show(x)} → ${show(y)}`);
  }
  return lines;
}

/** A --set value read as Helm reads scalars: true/false and numbers are not strings. */
function coerce(text: string): unknown {
  if (text === "true" || text === "false") return text === "true";
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  return text;
}
