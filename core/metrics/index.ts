// Public surface of the metrics package; other code imports from here only.
export { createRegistry, type Registry, type RegistryOptions } from "./registry.ts";
export type { Counter, Gauge, BoundCounter, BoundGauge, MetricOptions } from "./instruments.ts";
export {
  DEFAULT_BUCKETS,
  exponentialBuckets,
  linearBuckets,
  type Histogram,
  type BoundHistogram,
  type HistogramOptions,
} from "./histogram.ts";
export type { CallbackOptions, CallbackResult, LabeledValue } from "./callback.ts";
export { registerProcessMetrics, bunProcessSource, type ProcessSource } from "./process.ts";
export { renderPrometheusText } from "./exposition.ts";
export { parsePrometheusText, PrometheusParseError } from "./parse.ts";
export { MetricDefinitionError, isValidMetricName, isValidLabelName } from "./names.ts";
export { PROMETHEUS_CONTENT_TYPE, type MetricFamily, type MetricType, type Sample, type LabelValues } from "./types.ts";
