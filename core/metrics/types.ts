// The shapes shared by the registry, the text exposition and the parser. A registry scrape and
// a parsed exposition are the same `MetricFamily[]`, which is what makes round-trip tests exact.

export type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped";

export interface Sample {
  /** Full sample name: the family name, or with `_bucket`/`_sum`/`_count` for histograms. */
  name: string;
  labels: Record<string, string>;
  value: number;
  /** Milliseconds since the epoch, only when the exposition carried one. */
  timestampMs?: number;
}

export interface MetricFamily {
  name: string;
  help?: string;
  type: MetricType;
  samples: Sample[];
}

/** Values for every declared label; numbers are rendered with String(). */
export type LabelValues<L extends string> = { readonly [K in L]: string | number };

/** Content type of the Prometheus text exposition format this package writes. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
