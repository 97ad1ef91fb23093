// Whether an object already has every field a desired object sets, with the same values. Fields
// the server adds (defaults, status, IPs) do not matter. Containment is only half of equality:
// it cannot see a field the answer dropped, so on its own it must never skip a write
// (ownership.ts adds the other half, from the object's managedFields).
export function isSubset(desired: unknown, actual: unknown): boolean {
  if (desired === actual) return true;
  if (desired === null || typeof desired !== "object") return desired === actual;
  // The API server stores an empty list or map as absent (or null): `endpoints: []` comes back as
  // `endpoints: null`. Counting that as a difference re-applied every EndpointSlice of a Service
  // without pods on each of its own watch events.
  if (actual === null || actual === undefined) return isEmpty(desired);
  if (typeof actual !== "object") return false;
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

function isEmpty(value: object): boolean {
  if (Array.isArray(value)) return value.length === 0;
  for (const v of Object.values(value))
    if (v !== undefined && !(v !== null && typeof v === "object" && isEmpty(v))) return false;
  return true;
}
