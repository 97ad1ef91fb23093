// Whether an object already has every field a desired object sets, with the same values: then a
// server-side apply would change nothing, and the request (the most expensive step of a
// reconcile) is skipped. Fields the server adds (defaults, status, IPs) do not matter.
export function isSubset(desired: unknown, actual: unknown): boolean {
  if (desired === actual) return true;
  if (desired === null || typeof desired !== "object") return desired === actual;
  if (actual === null || typeof actual !== "object") return false;
  if (Array.isArray(desired)) {
    if (!Array.isArray(actual) || actual.length !== desired.length) return false;
    return desired.every((d, i) => isSubset(d, actual[i]));
  }
  if (Array.isArray(actual)) return false;
  const a = actual as Record<string, unknown>;
  for (const [k, v] of Object.entries(desired as Record<string, unknown>)) {
    if (v === undefined) continue;
    if (!isSubset(v, a[k])) return false;
  }
  return true;
}
