// Label selectors in kubectl's -l syntax (`app=web,tier in (a,b),!legacy`): parsed into
// requirements (ANDed) and matched against an object's labels with Kubernetes' semantics.
// liqoctl offload --selector and the reflection policies' selector(...) mode share it.

export interface LabelRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  values?: string[];
}

/** A selector that cannot be parsed; the message names the part and says what would parse. */
export class LabelSelectorError extends Error {
  override name = "LabelSelectorError";
}

const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]{0,61}[a-z0-9A-Z])?$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/** Splits on commas that are not inside parentheses. */
export function splitOutsideParens(text: string): string[] {
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

function checkKey(key: string): string {
  if (!KEY.test(key)) throw new LabelSelectorError(`"${key}" is not a valid label key`);
  return key;
}

function checkValues(values: string[]): string[] {
  for (const v of values) if (!VALUE.test(v)) throw new LabelSelectorError(`"${v}" is not a valid label value`);
  return values;
}

/** The requirements of a non-empty selector; throws LabelSelectorError on anything else. */
export function parseLabelSelector(selector: string): LabelRequirement[] {
  return splitOutsideParens(selector).map((part) => {
    if (!part) throw new LabelSelectorError("empty requirement (a stray comma?)");
    let m: RegExpExecArray | null;
    if ((m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part))) {
      const values = m[3]!
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      if (!values.length) throw new LabelSelectorError(`"${part}" lists no values`);
      return { key: checkKey(m[1]!), operator: m[2] === "in" ? "In" : "NotIn", values: checkValues(values) };
    }
    if ((m = /^(\S+?)\s*(!=|==|=)\s*(\S*)$/.exec(part)))
      return { key: checkKey(m[1]!), operator: m[2] === "!=" ? "NotIn" : "In", values: checkValues([m[3]!]) };
    if ((m = /^!\s*(\S+)$/.exec(part))) return { key: checkKey(m[1]!), operator: "DoesNotExist" };
    if (/^\S+$/.test(part)) return { key: checkKey(part), operator: "Exists" };
    throw new LabelSelectorError(
      `cannot parse "${part}"; use key=value, key!=value, key in (a,b), key notin (a,b), key or !key`,
    );
  });
}

/** Every requirement holds for these labels (NotIn and DoesNotExist hold for a missing key). */
export function matchesLabels(labels: Record<string, string> | undefined, requirements: LabelRequirement[]): boolean {
  const l = labels ?? {};
  return requirements.every((r) => {
    const has = Object.hasOwn(l, r.key);
    switch (r.operator) {
      case "In":
        return has && (r.values ?? []).includes(l[r.key]!);
      case "NotIn":
        return !has || !(r.values ?? []).includes(l[r.key]!);
      case "Exists":
        return has;
      case "DoesNotExist":
        return !has;
    }
  });
}
