// Lexing of single lines of the text format 0.0.4: comments (HELP/TYPE) and samples.
// Grouping lines into families and checking them together is parse.ts's job.
import { isValidLabelName, isValidMetricName } from "./names.ts";
import { parseValue } from "./text.ts";
import type { Sample } from "./types.ts";

/** A malformed exposition; `line` is 1-based. */
export class PrometheusParseError extends Error {
  override name = "PrometheusParseError";
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(`line ${line}: ${message}`);
  }
}

export type Directive =
  | { kind: "help"; name: string; help: string }
  | { kind: "type"; name: string; type: string }
  | { kind: "comment" };

const isBlank = (ch: string | undefined) => ch === " " || ch === "\t";

/** Undoes the escapes allowed in `what`; any other backslash sequence is an error. */
export function unescapeText(text: string, allowed: string, lineNo: number, what: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch !== "\\") {
      out += ch;
      continue;
    }
    const next = text[++i];
    if (next === undefined || !allowed.includes(next)) {
      throw new PrometheusParseError(`invalid escape sequence "\\${next ?? ""}" in ${what}`, lineNo);
    }
    out += next === "n" ? "\n" : next;
  }
  return out;
}

export function parseDirective(line: string, lineNo: number): Directive {
  const match = /^#[ \t]+(HELP|TYPE)(?:[ \t]+(.*))?$/.exec(line);
  if (!match) return { kind: "comment" };
  const keyword = match[1]!;
  const rest = match[2] ?? "";
  const nameMatch = /^(\S+)(?:[ \t]+(.*))?$/.exec(rest);
  if (!nameMatch) throw new PrometheusParseError(`${keyword} line without a metric name`, lineNo);
  const name = nameMatch[1]!;
  if (!isValidMetricName(name))
    throw new PrometheusParseError(`invalid metric name ${JSON.stringify(name)} in ${keyword} line`, lineNo);
  const tail = nameMatch[2] ?? "";
  if (keyword === "HELP") return { kind: "help", name, help: unescapeText(tail, "\\n", lineNo, "HELP text") };
  const type = tail.trimEnd();
  if (!["counter", "gauge", "histogram", "summary", "untyped"].includes(type)) {
    throw new PrometheusParseError(`unknown metric type ${JSON.stringify(type)} for ${name}`, lineNo);
  }
  return { kind: "type", name, type };
}

/** Reads a quoted label value starting at the opening quote; returns the value and the index after the closing quote. */
function readQuoted(line: string, start: number, lineNo: number): [string, number] {
  let raw = "";
  for (let i = start + 1; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === "\\") {
      raw += ch + (line[i + 1] ?? "");
      i++;
    } else if (ch === '"') {
      return [unescapeText(raw, '\\"n', lineNo, "label value"), i + 1];
    } else {
      raw += ch;
    }
  }
  throw new PrometheusParseError("unterminated label value", lineNo);
}

function parseLabels(line: string, start: number, lineNo: number): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  let i = start + 1; // past "{"
  for (;;) {
    while (isBlank(line[i])) i++;
    if (line[i] === "}") return [labels, i + 1];
    const name = /^[^=\s,}"]*/.exec(line.slice(i))![0];
    if (!isValidLabelName(name)) {
      throw new PrometheusParseError(
        `invalid label name ${JSON.stringify(name)} (must match [a-zA-Z_][a-zA-Z0-9_]*, not start with "__")`,
        lineNo,
      );
    }
    if (Object.hasOwn(labels, name)) throw new PrometheusParseError(`label ${name} appears twice`, lineNo);
    i += name.length;
    while (isBlank(line[i])) i++;
    if (line[i] !== "=") throw new PrometheusParseError(`expected "=" after label name ${name}`, lineNo);
    i++;
    while (isBlank(line[i])) i++;
    if (line[i] !== '"') throw new PrometheusParseError(`expected '"' to open the value of label ${name}`, lineNo);
    const [value, after] = readQuoted(line, i, lineNo);
    labels[name] = value;
    i = after;
    while (isBlank(line[i])) i++;
    if (line[i] === ",") i++;
    else if (line[i] !== "}")
      throw new PrometheusParseError(`expected "," or "}" after the value of label ${name}`, lineNo);
  }
}

export function parseSampleLine(line: string, lineNo: number): Sample {
  const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
  if (!name)
    throw new PrometheusParseError(
      `expected a metric name at the start of ${JSON.stringify(line.slice(0, 40))}`,
      lineNo,
    );
  let i = name.length;
  const afterName = line[i];
  if (afterName !== undefined && afterName !== "{" && !isBlank(afterName)) {
    throw new PrometheusParseError(
      `unexpected character ${JSON.stringify(afterName)} after metric name ${name}`,
      lineNo,
    );
  }
  while (isBlank(line[i])) i++;
  let labels: Record<string, string> = {};
  if (line[i] === "{") {
    [labels, i] = parseLabels(line, i, lineNo);
    if (line[i] !== undefined && !isBlank(line[i])) {
      throw new PrometheusParseError(`expected a blank between the labels and the value of ${name}`, lineNo);
    }
  }
  const fields = line
    .slice(i)
    .trim()
    .split(/[ \t]+/);
  if (fields.length === 1 && fields[0] === "") throw new PrometheusParseError(`sample ${name} has no value`, lineNo);
  if (fields.length > 2) throw new PrometheusParseError(`unexpected text after the timestamp of ${name}`, lineNo);
  const value = parseValue(fields[0]!);
  if (value === undefined)
    throw new PrometheusParseError(`invalid value ${JSON.stringify(fields[0])} for ${name}`, lineNo);
  const sample: Sample = { name, labels, value };
  if (fields[1] !== undefined) {
    if (!/^-?\d+$/.test(fields[1]))
      throw new PrometheusParseError(`invalid timestamp ${JSON.stringify(fields[1])} for ${name}`, lineNo);
    sample.timestampMs = Number(fields[1]);
  }
  return sample;
}
