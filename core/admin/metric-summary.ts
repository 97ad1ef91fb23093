// Numbers for the JSON views and the status page, read from the same registry /metrics serves:
// counters summed per group, histograms merged per group into count, mean and quantiles
// (linear interpolation inside the bucket, as Prometheus' histogram_quantile does).
import type { MetricFamily } from "../metrics/index.ts";

export interface LatencySummary {
  count: number;
  meanSeconds?: number;
  p50Seconds?: number;
  p99Seconds?: number;
}

/** Maps a series' label value to the group it counts towards (e.g. reflector "pods/Pod" → plugin "pods"). */
type Grouping = (labels: Record<string, string>) => string | undefined;

export function byLabel(label: string): Grouping {
  return (labels) => labels[label];
}

export function sumCounter(families: MetricFamily[], name: string, group: Grouping): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of families.find((f) => f.name === name)?.samples ?? []) {
    const key = group(s.labels);
    if (key !== undefined) out.set(key, (out.get(key) ?? 0) + s.value);
  }
  return out;
}

/** The q-quantile of cumulative buckets sorted by bound; undefined without observations. */
export function bucketQuantile(q: number, buckets: Array<[number, number]>): number | undefined {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return undefined;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      // The +Inf bucket has no upper bound: answer the highest finite one, like Prometheus.
      if (!Number.isFinite(le)) return lowerBound;
      return count === lowerCount ? le : lowerBound + ((le - lowerBound) * (rank - lowerCount)) / (count - lowerCount);
    }
    lowerBound = le;
    lowerCount = count;
  }
  return lowerBound;
}

export function summarizeHistogram(
  families: MetricFamily[],
  name: string,
  group: Grouping,
): Map<string, LatencySummary> {
  const family = families.find((f) => f.name === name && f.type === "histogram");
  const acc = new Map<string, { count: number; sum: number; buckets: Map<number, number> }>();
  for (const s of family?.samples ?? []) {
    const { le, ...rest } = s.labels;
    const key = group(rest);
    if (key === undefined) continue;
    let a = acc.get(key);
    if (!a) acc.set(key, (a = { count: 0, sum: 0, buckets: new Map() }));
    if (s.name === `${name}_count`) a.count += s.value;
    else if (s.name === `${name}_sum`) a.sum += s.value;
    else if (s.name === `${name}_bucket` && le !== undefined) {
      const bound = le === "+Inf" ? Infinity : Number(le);
      a.buckets.set(bound, (a.buckets.get(bound) ?? 0) + s.value);
    }
  }
  const out = new Map<string, LatencySummary>();
  for (const [key, a] of acc) {
    const buckets = [...a.buckets.entries()].sort((x, y) => x[0] - y[0]);
    out.set(
      key,
      a.count === 0
        ? { count: 0 }
        : {
            count: a.count,
            meanSeconds: a.sum / a.count,
            p50Seconds: bucketQuantile(0.5, buckets),
            p99Seconds: bucketQuantile(0.99, buckets),
          },
    );
  }
  return out;
}
