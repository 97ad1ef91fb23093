// Escaping and number spelling of the text format 0.0.4. HELP text escapes only backslash and
// line feed; label values also escape the double quote. Writer and parser share these rules.

export function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** Go's ParseFloat spellings that Prometheus writes and reads for the special values. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

// Decimal or exponent notation only: Go would also take hex floats and underscores, but no
// client writes those into an exposition, so accepting them would only hide corrupt input.
const decimalPattern = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const specialPattern = /^(?:([+-]?)inf(?:inity)?|nan)$/i;

/** Parses a sample value; returns undefined for anything that is not a float spelling. */
export function parseValue(text: string): number | undefined {
  if (decimalPattern.test(text)) return Number(text);
  const special = specialPattern.exec(text);
  if (!special) return undefined;
  if (/nan/i.test(text)) return NaN;
  return special[1] === "-" ? -Infinity : Infinity;
}
