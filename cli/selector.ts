// Label-selector syntax (as kubectl's -l) parsed into node-selector requirements: one --selector
// becomes one node-selector term (its requirements ANDed); repeated --selector flags are ORed.
import { CliError } from "./errors.ts";

export interface Requirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  values?: string[];
}

const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]{0,61}[a-z0-9A-Z])?$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/** Splits on commas that are not inside parentheses. */
function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "(") depth++;
    else if (text[i] === ")") depth--;
    else if (text[i] === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim());
}

function checkKey(key: string, selector: string): string {
  if (!KEY.test(key)) throw new CliError(`--selector '${selector}': "${key}" is not a valid label key`);
  return key;
}

function checkValues(values: string[], selector: string): string[] {
  for (const v of values)
    if (!VALUE.test(v)) throw new CliError(`--selector '${selector}': "${v}" is not a valid label value`);
  return values;
}

export function parseSelector(selector: string): Requirement[] {
  if (!selector.trim())
    throw new CliError("--selector '': an empty selector matches every cluster; omit --selector instead");
  return splitTop(selector).map((part) => {
    if (!part) throw new CliError(`--selector '${selector}': empty requirement (a stray comma?)`);
    let m: RegExpExecArray | null;
    if ((m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part))) {
      const values = m[3]!
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      if (!values.length) throw new CliError(`--selector '${selector}': "${part}" lists no values`);
      return {
        key: checkKey(m[1]!, selector),
        operator: m[2] === "in" ? "In" : "NotIn",
        values: checkValues(values, selector),
      };
    }
    if ((m = /^(\S+?)\s*(!=|==|=)\s*(\S*)$/.exec(part))) {
      return {
        key: checkKey(m[1]!, selector),
        operator: m[2] === "!=" ? "NotIn" : "In",
        values: checkValues([m[3]!], selector),
      };
    }
    if ((m = /^!\s*(\S+)$/.exec(part))) return { key: checkKey(m[1]!, selector), operator: "DoesNotExist" };
    if (/^\S+$/.test(part)) return { key: checkKey(part, selector), operator: "Exists" };
    throw new CliError(
      `--selector '${selector}': cannot parse "${part}"; use key=value, key!=value, key in (a,b), key notin (a,b), key or !key`,
    );
  });
}

export function selectorTerms(selectors: string[]): { matchExpressions: Requirement[] }[] {
  return selectors.map((s) => ({ matchExpressions: parseSelector(s) }));
}
