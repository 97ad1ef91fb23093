// Kubernetes resource quantities ("7800m", "31Gi", "1e3", 110) as exact integers of milli-units,
// so sums and percentages never drift the way floats would. Only what offers need: parse, add,
// scale down, and format back in the unit people expect for each resource.

export class QuantityError extends Error {
  override name = "QuantityError";
}

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};
const DECIMAL_EXP: Record<string, number> = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE]([+-]?\d+))?$/;

// The same few spellings ("100m", "128Mi") recur across thousands of pods: parse each once.
const parsed = new Map<string, bigint>();

/** Milli-units of a quantity (1 cpu = 1000, "250m" = 250, "1Ki" = 1024000); fractions below a milli round up, as Kubernetes does. */
export function parseQuantity(value: string | number, what = "quantity"): bigint {
  const text = typeof value === "number" ? String(value) : value.trim();
  const known = parsed.get(text);
  if (known !== undefined) return known;
  const result = parseText(text, value, what);
  if (parsed.size >= 4096) parsed.clear();
  parsed.set(text, result);
  return result;
}

function parseText(text: string, value: string | number, what: string): bigint {
  const m = QUANTITY.exec(text);
  if (!m)
    throw new QuantityError(
      `${what}: "${value}" is not a Kubernetes quantity (examples: 500m, 2, 1.5Gi, 128974848, 1e3)`,
    );
  const [, sign, number, suffix = "", exponent] = m;
  const [whole, fraction = ""] = number!.split(".");
  // digits × 10^(scale) with `scale` counting the fraction digits, then times the suffix.
  let digits = BigInt((whole || "0") + fraction);
  let exp10 = -fraction.length + 3; // +3: the result is in milli-units
  let factor = 1n;
  if (suffix in BINARY) factor = BINARY[suffix]!;
  else exp10 += exponent !== undefined ? Number(exponent) : DECIMAL_EXP[suffix]!;
  digits *= factor;
  let result: bigint;
  if (exp10 >= 0) result = digits * 10n ** BigInt(exp10);
  else {
    const div = 10n ** BigInt(-exp10);
    result = (digits + div - 1n) / div;
  }
  return sign === "-" ? -result : result;
}

/** How a resource's quantity is written back: cores for cpu, bytes for memory and storage, counts for the rest. */
export type QuantityUnit = "cpu" | "bytes" | "count";

export function unitOf(resource: string): QuantityUnit {
  if (resource === "cpu") return "cpu";
  if (resource === "memory" || resource.includes("storage") || resource.startsWith("hugepages-")) return "bytes";
  return "count";
}

/**
 * The canonical text of `milli` milli-units: cpu as whole cores or "<n>m"; bytes (rounded down to
 * whole bytes) with the largest binary suffix that divides them; counts as whole numbers.
 */
export function formatQuantity(milli: bigint, unit: QuantityUnit): string {
  if (milli < 0n) milli = 0n;
  if (unit === "cpu") return milli % 1000n === 0n ? String(milli / 1000n) : `${milli}m`;
  const whole = milli / 1000n;
  if (unit === "count" || whole === 0n) return String(whole);
  for (const suffix of ["Ei", "Pi", "Ti", "Gi", "Mi", "Ki"]) {
    const f = BINARY[suffix]!;
    if (whole % f === 0n) return `${whole / f}${suffix}`;
  }
  return String(whole);
}

/** `percent` % of `milli`, rounded down (an offer never promises more than there is). */
export function percentOf(milli: bigint, percent: number): bigint {
  if (milli <= 0n) return 0n;
  // Percentages may have decimals (12.5); scale to basis points of a percent.
  return (milli * BigInt(Math.round(percent * 100))) / 10_000n;
}
