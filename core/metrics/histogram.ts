// Histograms with fixed upper bounds. Counts are stored per bucket and summed into the
// cumulative `le` form only at scrape, so observe() touches one slot.
import { resolveLabels, type Collectable } from "./labels.ts";
import { MetricDefinitionError } from "./names.ts";
import { formatValue } from "./text.ts";
import type { LabelValues, Sample } from "./types.ts";
import type { MetricOptions } from "./instruments.ts";

/** Prometheus' client defaults: 5 ms to 10 s, suited to request latencies in seconds. */
export const DEFAULT_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  if (!(start > 0) || !(factor > 1) || !(count >= 1)) {
    throw new MetricDefinitionError("exponentialBuckets needs start > 0, factor > 1, count >= 1");
  }
  return Array.from({ length: count }, (_, i) => start * factor ** i);
}

export function linearBuckets(start: number, width: number, count: number): number[] {
  if (!(width > 0) || !(count >= 1)) throw new MetricDefinitionError("linearBuckets needs width > 0, count >= 1");
  return Array.from({ length: count }, (_, i) => start + width * i);
}

export interface HistogramOptions<L extends string> extends MetricOptions<L> {
  /** Upper bounds, strictly increasing and finite; +Inf is always added. */
  buckets?: readonly number[];
  /** Milliseconds clock for startTimer(); injected by tests. */
  now?: () => number;
}

export interface BoundHistogram {
  observe(value: number): void;
  /** Returns a stop function that observes the elapsed seconds and returns them. */
  startTimer(): () => number;
}

export interface Histogram<L extends string = never> {
  readonly name: string;
  observe(value: number): void;
  observe(labels: LabelValues<L>, value: number): void;
  startTimer(labels?: LabelValues<L>): () => number;
  with(labels: LabelValues<L>): BoundHistogram;
  remove(labels: LabelValues<L>): boolean;
  reset(): void;
}

interface Series {
  labels: Record<string, string>;
  counts: number[]; // one slot per bound, plus one for +Inf
  sum: number;
  count: number;
}

function checkBuckets(metric: string, buckets: readonly number[]): number[] {
  if (buckets.length === 0) throw new MetricDefinitionError(`histogram ${metric}: needs at least one bucket`);
  for (let i = 0; i < buckets.length; i++) {
    const b = buckets[i]!;
    if (typeof b !== "number" || !Number.isFinite(b)) {
      throw new MetricDefinitionError(
        `histogram ${metric}: bucket ${String(b)} must be a finite number (+Inf is implicit)`,
      );
    }
    if (i > 0 && !(b > buckets[i - 1]!)) {
      throw new MetricDefinitionError(
        `histogram ${metric}: buckets must be strictly increasing, ${buckets[i - 1]} then ${b}`,
      );
    }
  }
  return [...buckets];
}

export function createHistogram<L extends string>(opts: HistogramOptions<L>): Histogram<L> & Collectable {
  const name = opts.name;
  const labelNames = opts.labelNames ?? [];
  const bounds = checkBuckets(name, opts.buckets ?? DEFAULT_BUCKETS);
  const now = opts.now ?? (() => performance.now());
  const series = new Map<string, Series>();
  const fresh = (labels: Record<string, string>): Series => ({
    labels,
    counts: new Array(bounds.length + 1).fill(0),
    sum: 0,
    count: 0,
  });
  if (labelNames.length === 0) series.set("", fresh({}));

  const seriesFor = (labels: Record<string, unknown> | undefined): Series => {
    const resolved = resolveLabels(name, labelNames, labels);
    let s = series.get(resolved.key);
    if (!s) {
      s = fresh(resolved.labels);
      series.set(resolved.key, s);
    }
    return s;
  };
  const observeInto = (s: Series, value: number) => {
    if (typeof value !== "number" || Number.isNaN(value)) {
      throw new MetricDefinitionError(`histogram ${name}: observed value must be a number, got ${String(value)}`);
    }
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    s.counts[i]!++;
    s.sum += value;
    s.count++;
  };
  const bind = (s: Series): BoundHistogram => ({
    observe: (value) => observeInto(s, value),
    startTimer() {
      const start = now();
      return () => {
        const seconds = (now() - start) / 1000;
        observeInto(s, seconds);
        return seconds;
      };
    },
  });

  const collect = (): Sample[] => {
    const out: Sample[] = [];
    for (const s of series.values()) {
      let cumulative = 0;
      for (let i = 0; i < bounds.length; i++) {
        cumulative += s.counts[i]!;
        out.push({ name: `${name}_bucket`, labels: { ...s.labels, le: formatValue(bounds[i]!) }, value: cumulative });
      }
      out.push({ name: `${name}_bucket`, labels: { ...s.labels, le: "+Inf" }, value: s.count });
      out.push({ name: `${name}_sum`, labels: { ...s.labels }, value: s.sum });
      out.push({ name: `${name}_count`, labels: { ...s.labels }, value: s.count });
    }
    return out;
  };

  return {
    name,
    help: opts.help,
    type: "histogram",
    sampleNames: [name, `${name}_bucket`, `${name}_sum`, `${name}_count`],
    observe(...args: unknown[]) {
      if (typeof args[0] === "number") observeInto(seriesFor(undefined), args[0] as number);
      else observeInto(seriesFor(args[0] as Record<string, unknown>), args[1] as number);
    },
    startTimer: (labels) => bind(seriesFor(labels)).startTimer(),
    with: (labels) => bind(seriesFor(labels)),
    remove: (labels) => series.delete(resolveLabels(name, labelNames, labels).key),
    reset() {
      series.clear();
      if (labelNames.length === 0) series.set("", fresh({}));
    },
    collect,
  };
}
