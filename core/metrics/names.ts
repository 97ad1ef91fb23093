// Name rules of the Prometheus data model, checked when a metric is declared so that a bad
// name fails at startup in the role that declared it, not later in a scraper's logs.

const metricNamePattern = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const labelNamePattern = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Thrown for a declaration or a label set that breaks the data model; the message says which rule. */
export class MetricDefinitionError extends Error {
  override name = "MetricDefinitionError";
}

export function isValidMetricName(name: string): boolean {
  return metricNamePattern.test(name);
}

export function isValidLabelName(name: string): boolean {
  // Names starting with "__" are reserved for Prometheus' own use (relabelling, __name__).
  return labelNamePattern.test(name) && !name.startsWith("__");
}

export function assertMetricName(name: string): void {
  if (typeof name !== "string" || !isValidMetricName(name)) {
    throw new MetricDefinitionError(`invalid metric name ${JSON.stringify(name)}: must match [a-zA-Z_:][a-zA-Z0-9_:]*`);
  }
}

/**
 * Checks a declared list of label names. `reserved` holds names the metric type adds itself
 * (`le` for histograms), which a caller may not declare.
 */
export function assertLabelNames(metric: string, names: readonly string[], reserved: readonly string[] = []): void {
  const seen = new Set<string>();
  for (const label of names) {
    if (typeof label !== "string" || !isValidLabelName(label)) {
      throw new MetricDefinitionError(
        `metric ${metric}: invalid label name ${JSON.stringify(label)}: must match [a-zA-Z_][a-zA-Z0-9_]* and not start with "__"`,
      );
    }
    if (reserved.includes(label)) {
      throw new MetricDefinitionError(`metric ${metric}: label name "${label}" is reserved for this metric type`);
    }
    if (seen.has(label)) throw new MetricDefinitionError(`metric ${metric}: label name "${label}" declared twice`);
    seen.add(label);
  }
}
