// Turns a caller's label object into the stored form: one key per series (values in declared
// order) plus a plain string record. Every series of a metric must carry exactly the declared
// labels, otherwise the exposition would mix label shapes within one family.
import { MetricDefinitionError } from "./names.ts";
import type { Sample } from "./types.ts";

export interface ResolvedLabels {
  key: string;
  labels: Record<string, string>;
}

const noLabels: ResolvedLabels = { key: "", labels: {} };

export function resolveLabels(
  metric: string,
  names: readonly string[],
  given: Readonly<Record<string, unknown>> | undefined,
): ResolvedLabels {
  const givenCount = given ? Object.keys(given).length : 0;
  if (names.length === 0) {
    if (givenCount > 0)
      throw new MetricDefinitionError(
        `metric ${metric}: declared without labels, got ${Object.keys(given!).join(", ")}`,
      );
    return noLabels;
  }
  if (!given) throw new MetricDefinitionError(`metric ${metric}: labels required: ${names.join(", ")}`);
  const labels: Record<string, string> = {};
  const values: string[] = [];
  for (const name of names) {
    const value = given[name];
    if (typeof value !== "string" && typeof value !== "number") {
      throw new MetricDefinitionError(
        `metric ${metric}: label "${name}" must be a string or number, got ${value === undefined ? "nothing" : typeof value}`,
      );
    }
    const text = String(value);
    labels[name] = text;
    values.push(text);
  }
  if (givenCount !== names.length) {
    const extra = Object.keys(given).filter((k) => !names.includes(k));
    throw new MetricDefinitionError(`metric ${metric}: undeclared labels: ${extra.join(", ")}`);
  }
  return { key: JSON.stringify(values), labels };
}

/** What the registry needs from anything it scrapes. */
export interface Collectable {
  readonly name: string;
  readonly help: string;
  readonly type: "counter" | "gauge" | "histogram";
  /** Sample names this metric writes, so two metrics cannot collide in one exposition. */
  readonly sampleNames: readonly string[];
  collect(): Sample[] | Promise<Sample[]>;
}
