// Metrics whose value is read at scrape time from somewhere else (queue depth, cache size,
// process counters), so the owner never has to remember to update a gauge.
import { resolveLabels, type Collectable } from "./labels.ts";
import { MetricDefinitionError } from "./names.ts";
import type { LabelValues, Sample } from "./types.ts";
import type { MetricOptions } from "./instruments.ts";

export interface LabeledValue<L extends string> {
  labels: LabelValues<L>;
  value: number;
}

/** A single number for an unlabelled metric, or one entry per series. */
export type CallbackResult<L extends string> = number | Iterable<LabeledValue<L>>;

export interface CallbackOptions<L extends string> extends MetricOptions<L> {
  collect: () => CallbackResult<L> | Promise<CallbackResult<L>>;
}

export function createCallbackMetric<L extends string>(
  type: "counter" | "gauge",
  opts: CallbackOptions<L>,
): Collectable {
  const labelNames = opts.labelNames ?? [];
  const checkValue = (value: unknown): number => {
    if (typeof value !== "number")
      throw new MetricDefinitionError(`metric ${opts.name}: callback value must be a number, got ${typeof value}`);
    if (type === "counter" && !(value >= 0))
      throw new MetricDefinitionError(`counter ${opts.name}: callback returned ${value}, must be >= 0`);
    return value;
  };
  const toSamples = (result: CallbackResult<L>): Sample[] => {
    if (typeof result === "number") {
      if (labelNames.length > 0) {
        throw new MetricDefinitionError(`metric ${opts.name}: callback returned a bare number but labels are declared`);
      }
      return [{ name: opts.name, labels: {}, value: checkValue(result) }];
    }
    if (result == null || typeof (result as Iterable<unknown>)[Symbol.iterator] !== "function") {
      throw new MetricDefinitionError(
        `metric ${opts.name}: callback must return a number or an iterable of {labels, value}`,
      );
    }
    const seen = new Set<string>();
    const out: Sample[] = [];
    for (const entry of result) {
      const resolved = resolveLabels(opts.name, labelNames, entry.labels);
      if (seen.has(resolved.key))
        throw new MetricDefinitionError(`metric ${opts.name}: callback returned one label set twice`);
      seen.add(resolved.key);
      out.push({ name: opts.name, labels: resolved.labels, value: checkValue(entry.value) });
    }
    return out;
  };
  return {
    name: opts.name,
    help: opts.help,
    type,
    sampleNames: [opts.name],
    collect() {
      const result = opts.collect();
      return result instanceof Promise ? result.then(toSamples) : toSamples(result);
    },
  };
}
