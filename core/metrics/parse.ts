// A strict parser for the Prometheus text format 0.0.4, for tests and tools. Strict means it
// rejects what Prometheus would reject, plus a few things it tolerates but no correct writer
// produces (non-contiguous families, unknown escapes, incoherent histograms), because its job
// here is to catch our own exposition bugs.
import { parseDirective, parseSampleLine, PrometheusParseError } from "./parse-line.ts";
import { parseValue } from "./text.ts";
import type { MetricFamily, MetricType, Sample } from "./types.ts";

export { PrometheusParseError } from "./parse-line.ts";

interface FamilyState {
  family: MetricFamily;
  typed: boolean;
  firstLine: number;
  series: Set<string>;
}

const suffixes: Partial<Record<MetricType, string[]>> = {
  histogram: ["_bucket", "_sum", "_count"],
  summary: ["_sum", "_count"],
};

function seriesKey(sample: Sample): string {
  const pairs = Object.entries(sample.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([sample.name, pairs]);
}

/** Which family a sample line belongs to, given the family being read. */
function familyNameFor(sampleName: string, current: FamilyState | undefined): string {
  if (current) {
    const base = current.family.name;
    if (sampleName === base) return base;
    for (const suffix of suffixes[current.family.type] ?? []) {
      if (sampleName === base + suffix) return base;
    }
  }
  return sampleName;
}

function checkSample(state: FamilyState, sample: Sample, lineNo: number): void {
  const { name, type } = state.family;
  const fail = (msg: string) => {
    throw new PrometheusParseError(msg, lineNo);
  };
  const isBucket = sample.name === `${name}_bucket`;
  const isQuantileSample = type === "summary" && sample.name === name;
  if (type === "histogram" && sample.name === name)
    fail(`histogram ${name}: sample must be named ${name}_bucket, _sum or _count`);
  if (isBucket !== Object.hasOwn(sample.labels, "le") && type === "histogram") {
    fail(
      isBucket ? `histogram ${name}: bucket without an "le" label` : `histogram ${name}: "le" label on ${sample.name}`,
    );
  }
  if (isBucket) {
    const le = parseValue(sample.labels.le!);
    if (le === undefined || Number.isNaN(le))
      fail(`histogram ${name}: invalid "le" value ${JSON.stringify(sample.labels.le)}`);
  }
  if (type === "summary" && isQuantileSample !== Object.hasOwn(sample.labels, "quantile")) {
    fail(`summary ${name}: "quantile" label belongs on ${name} samples only`);
  }
  if (isQuantileSample) {
    const q = parseValue(sample.labels.quantile!);
    if (q === undefined || !(q >= 0 && q <= 1))
      fail(`summary ${name}: invalid quantile ${JSON.stringify(sample.labels.quantile)}`);
  }
  const isCount = sample.name.endsWith("_count") && sample.name !== name;
  if ((type === "counter" || isBucket || isCount) && sample.value < 0)
    fail(`${sample.name}: value ${sample.value} must not be negative`);
  const key = seriesKey(sample);
  if (state.series.has(key)) fail(`duplicate sample ${sample.name}${JSON.stringify(sample.labels)}`);
  state.series.add(key);
}

/** Buckets must be cumulative, end in +Inf, and agree with _count, for every label set. */
function checkHistogram(state: FamilyState): void {
  const { name, samples } = state.family;
  const groups = new Map<string, { where: string; buckets: [number, number][]; sum?: number; count?: number }>();
  for (const s of samples) {
    const { le, ...rest } = s.labels;
    const key = seriesKey({ name: "", labels: rest, value: 0 });
    const where = `series {${Object.entries(rest)
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(",")}}`;
    const group = groups.get(key) ?? { where, buckets: [] };
    groups.set(key, group);
    if (s.name === `${name}_bucket`) group.buckets.push([parseValue(le!)!, s.value]);
    else if (s.name === `${name}_sum`) group.sum = s.value;
    else group.count = s.value;
  }
  const fail = (msg: string) => {
    throw new PrometheusParseError(`histogram ${name}: ${msg}`, state.firstLine);
  };
  for (const group of groups.values()) {
    const where = group.where;
    group.buckets.sort((a, b) => a[0] - b[0]);
    const inf = group.buckets.at(-1);
    if (!inf || inf[0] !== Infinity) fail(`${where} has no le="+Inf" bucket`);
    for (let i = 1; i < group.buckets.length; i++) {
      if (group.buckets[i]![1] < group.buckets[i - 1]![1])
        fail(`${where}: bucket counts are not cumulative at le=${group.buckets[i]![0]}`);
    }
    if (group.count === undefined || group.sum === undefined) fail(`${where} lacks ${name}_count or ${name}_sum`);
    if (group.count !== inf![1]) fail(`${where}: _count ${group.count} differs from the +Inf bucket ${inf![1]}`);
  }
}

export function parsePrometheusText(text: string): MetricFamily[] {
  if (typeof text !== "string") throw new TypeError("parsePrometheusText expects a string");
  const lines = text.split("\n");
  if (lines.at(-1) !== "") throw new PrometheusParseError("exposition must end with a line feed", lines.length);
  lines.pop();

  const families: MetricFamily[] = [];
  const seen = new Map<string, FamilyState>();
  let current: FamilyState | undefined;

  const finish = () => {
    if (current?.family.type === "histogram") checkHistogram(current);
  };
  // A family may only be read in one contiguous block; meeting its name again is an error.
  const enter = (name: string, lineNo: number, why: string): FamilyState => {
    if (current?.family.name === name) return current;
    if (seen.has(name))
      throw new PrometheusParseError(`${why} for ${name} after its family ended (families must be contiguous)`, lineNo);
    finish();
    current = { family: { name, type: "untyped", samples: [] }, typed: false, firstLine: lineNo, series: new Set() };
    seen.set(name, current);
    families.push(current.family);
    return current;
  };

  lines.forEach((line, index) => {
    const lineNo = index + 1;
    if (line.includes("\r"))
      throw new PrometheusParseError("carriage return in line (the format uses \\n line endings)", lineNo);
    if (line.trim() === "") return;
    if (line.startsWith("#")) {
      const directive = parseDirective(line, lineNo);
      if (directive.kind === "comment") return;
      const state = enter(directive.name, lineNo, directive.kind === "help" ? "HELP line" : "TYPE line");
      if (directive.kind === "help") {
        if (state.family.help !== undefined)
          throw new PrometheusParseError(`second HELP line for ${directive.name}`, lineNo);
        state.family.help = directive.help;
        return;
      }
      if (state.typed) throw new PrometheusParseError(`second TYPE line for ${directive.name}`, lineNo);
      if (state.family.samples.length > 0)
        throw new PrometheusParseError(`TYPE line for ${directive.name} after its samples`, lineNo);
      state.family.type = directive.type as MetricType;
      state.typed = true;
      return;
    }
    const sample = parseSampleLine(line, lineNo);
    const state = enter(familyNameFor(sample.name, current), lineNo, "sample");
    checkSample(state, sample, lineNo);
    state.family.samples.push(sample);
  });
  finish();
  return families;
}
