// Writes metric families in the Prometheus text format 0.0.4.
import { escapeHelp, escapeLabelValue, formatValue } from "./text.ts";
import type { MetricFamily, Sample } from "./types.ts";

function renderLabels(labels: Record<string, string>): string {
  const pairs = Object.entries(labels);
  if (pairs.length === 0) return "";
  return `{${pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(",")}}`;
}

function renderSample(sample: Sample): string {
  const ts = sample.timestampMs === undefined ? "" : ` ${Math.trunc(sample.timestampMs)}`;
  return `${sample.name}${renderLabels(sample.labels)} ${formatValue(sample.value)}${ts}\n`;
}

/** Renders families in the order given; the text ends with a line feed, as the format requires. */
export function renderPrometheusText(families: readonly MetricFamily[]): string {
  let out = "";
  for (const family of families) {
    if (family.help !== undefined) out += `# HELP ${family.name} ${escapeHelp(family.help)}\n`;
    out += `# TYPE ${family.name} ${family.type}\n`;
    for (const sample of family.samples) out += renderSample(sample);
  }
  return out;
}
