// Named amounts people write: a provider's fixed offer to one consumer (its ForeignCluster's
// spec.offeredResources) and a consumer's asked amounts (liqoctl peer --cpu/--memory/--pods/
// --resource, its ForeignCluster's spec.requestedResources, carried in the ResourceRequest). Pure:
// parsing with errors that name the field and the fix, and the grant, resource by resource.
import { formatQuantity, parseQuantity, QuantityError, unitOf } from "../../kube/quantity.ts";
import {
  formatResourceList,
  grainOf,
  isBase,
  isNamedResource,
  OFFERED_RESOURCES,
  percentShare,
  wholeUnits,
  type Amounts,
} from "./offer.ts";

export class ResourceAmountError extends Error {
  override name = "ResourceAmountError";
}

// Kubernetes' qualified names: an optional DNS-subdomain prefix, then a name of at most 63 characters.
const PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++)
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
  return d[a.length]![b.length]!;
}

const KNOWN = `${OFFERED_RESOURCES.join(", ")}, hugepages-<page size> or an extended resource with a domain (e.g. nvidia.com/gpu)`;

/** Why `name` cannot be offered or asked for (undefined: it can), with the likely fix. */
export function resourceNameProblem(name: string): string | undefined {
  if (isBase(name)) return undefined;
  if (name.startsWith("hugepages-")) {
    try {
      if (parseQuantity(name.slice("hugepages-".length)) > 0n) return undefined;
    } catch {
      // falls through to the message below
    }
    return `"${name}" is not hugepages-<page size> (e.g. hugepages-2Mi)`;
  }
  const slash = name.indexOf("/");
  if (slash < 0) {
    const lower = name.toLowerCase();
    // Typos of the four ("cpus", "Memory", "pod"); a short word such as "gpu" is more likely an extended resource.
    const near = OFFERED_RESOURCES.find(
      (r) => (lower.length >= 4 && distance(lower, r) <= 2) || lower.startsWith(r) || r.startsWith(lower),
    );
    if (near) return `unknown resource "${name}": did you mean "${near}"?`;
    return `unknown resource "${name}": give ${KNOWN}`;
  }
  const [prefix, rest] = [name.slice(0, slash), name.slice(slash + 1)];
  if (!PREFIX.test(prefix) || prefix.length > 253 || !NAME.test(rest) || rest.length > 63)
    return `"${name}" is not a resource name: a domain, a slash and a name (e.g. example.com/dongle)`;
  if (!isNamedResource(name))
    return `"${name}" is in a Kubernetes domain, which names no extended resource: give ${KNOWN}`;
  return undefined;
}

/**
 * Parses named amounts; every problem is listed, each naming `field.<resource>` and the fix.
 * Quantities must be 0 or more; pods, devices and huge pages come in whole units.
 */
export function parseResourceAmounts(
  entries: Record<string, string | number> | undefined,
  field: string,
  /** How one amount is named in errors (default `field.<resource>`). */
  nameOf: (resource: string) => string = (r) => `${field}.${r}`,
): { amounts: Map<string, bigint>; errors: string[] } {
  const amounts = new Map<string, bigint>();
  const errors: string[] = [];
  for (const [name, value] of Object.entries(entries ?? {})) {
    const problem = resourceNameProblem(name);
    if (problem) {
      errors.push(`${field}: ${problem}`);
      continue;
    }
    const where = nameOf(name);
    let milli: bigint;
    try {
      milli = parseQuantity(value, where);
    } catch (err) {
      errors.push(err instanceof QuantityError ? err.message : `${where}: ${(err as Error).message}`);
      continue;
    }
    if (milli < 0n) {
      errors.push(`${where}: "${value}" is negative; give 0 or more`);
      continue;
    }
    if (wholeUnits(name, milli) !== milli) {
      const grain = grainOf(name);
      errors.push(
        `${where}: "${value}" is not a whole number of ${grain === 1000n ? (unitOf(name) === "bytes" ? "bytes" : "units") : `pages of ${name.slice("hugepages-".length)}`}`,
      );
      continue;
    }
    amounts.set(name, milli);
  }
  return { amounts, errors };
}

/** Like parseResourceAmounts, but throws the problems as one error. */
export function mustParseResourceAmounts(
  entries: Record<string, string | number> | undefined,
  field: string,
  nameOf?: (resource: string) => string,
): Map<string, bigint> {
  const { amounts, errors } = parseResourceAmounts(entries, field, nameOf);
  if (errors.length) throw new ResourceAmountError(errors.join("; "));
  return amounts;
}

/** `name=quantity` (liqoctl peer --resource), checked as parseResourceAmounts checks it. */
export function parseResourceFlag(text: string, flag = "--resource"): [string, string] {
  const eq = text.indexOf("=");
  const [name, value] = eq < 0 ? [text, ""] : [text.slice(0, eq).trim(), text.slice(eq + 1).trim()];
  if (!name || !value)
    throw new ResourceAmountError(`${flag} "${text}": give name=quantity, e.g. ${flag} nvidia.com/gpu=1`);
  mustParseResourceAmounts({ [name]: value }, flag, (r) => `${flag} ${r}`);
  return [name, value];
}

/** One resource of the provider's answer to the amounts a consumer asked for. */
export interface ResourceGrant {
  name: string;
  asked: string;
  granted: string;
  /** True when the provider gave less than asked. */
  capped: boolean;
}

export interface OfferDecision {
  /** The offer's resourceQuota.hard. */
  hard: Record<string, string>;
  /** One line per asked resource (none asked: empty). */
  grants: ResourceGrant[];
}

/**
 * What a provider offers one consumer: each resource by its rule (the fixed amount the provider
 * set for this consumer, else `percentage` % of what is free), and of what the consumer asked,
 * min(asked, that rule): an ask never gets more than the rule gives, and a resource the provider
 * has none of is granted 0. Resources the consumer does not ask for follow the rule.
 */
export function decideOffer(
  free: Amounts,
  percentage: number,
  fixed: Map<string, bigint> = new Map(),
  asked: Map<string, bigint> = new Map(),
): OfferDecision {
  const rule = percentShare(free, percentage);
  for (const [r, v] of fixed) rule[r] = v;
  const granted = { ...rule } as Amounts;
  const grants: ResourceGrant[] = [];
  for (const [r, want] of [...asked].sort(([a], [b]) => a.localeCompare(b))) {
    const can = rule[r] ?? 0n;
    const give = want < can ? want : can;
    granted[r] = give;
    const f = (n: bigint) => formatQuantity(n, unitOf(r));
    grants.push({ name: r, asked: f(want), granted: f(give), capped: give < want });
  }
  return { hard: formatResourceList(granted), grants };
}
