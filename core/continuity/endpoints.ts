// What the provider does to one reflected EndpointSlice while the consumer it came from is out of
// reach: every endpoint's conditions.ready set false, and what they were kept in an annotation, so
// that exactly that is put back when the consumer returns. The consumer's reflection owns the slice:
// if it rewrote the endpoints meanwhile (it reached this API server again before the tunnel came
// back), its answer stands and only our annotations go.
import { CONTINUITY_FIELD_MANAGER } from "../apis/labels.ts";
import type { JsonPatchOp } from "../kube/client.ts";
import type { KubeObject } from "../kube/resources.ts";

/** When the outage that marked the slice began (RFC 3339); also says the slice is marked. */
export const UNREACHABLE_SINCE_ANNOTATION = "liqo.io/unreachable-since";
/** The endpoints' ready conditions before marking: a JSON array of [first address, ready or null]. */
export const UNREADY_ENDPOINTS_ANNOTATION = "liqo.io/unready-endpoints";
export { CONTINUITY_FIELD_MANAGER };

export interface Endpoint {
  addresses?: string[];
  conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
  [k: string]: unknown;
}
export type EndpointSliceObject = KubeObject & { endpoints?: Endpoint[] | null };

type Saved = [string, boolean | null][];

export type SlicePlan =
  | { action: "none" }
  /** Mark: the consumer is past the threshold. */
  | { action: "mark"; ops: JsonPatchOp[] }
  /** Restore what was marked (the endpoints are still as we left them). */
  | { action: "restore"; ops: JsonPatchOp[] }
  /** The consumer rewrote the endpoints meanwhile: drop our annotations, keep its answer. */
  | { action: "forget"; ops: JsonPatchOp[] };

const pointer = (key: string) => `/metadata/annotations/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
const firstAddress = (ep: Endpoint) => ep.addresses?.[0] ?? "";

function savedOf(slice: EndpointSliceObject): Saved | undefined {
  const text = slice.metadata.annotations?.[UNREADY_ENDPOINTS_ANNOTATION];
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) && v.every((e) => Array.isArray(e) && typeof e[0] === "string") ? (v as Saved) : undefined;
  } catch {
    return undefined;
  }
}

/** The endpoints with every ready condition false. */
export function unreadyEndpoints(endpoints: readonly Endpoint[]): Endpoint[] {
  return endpoints.map((ep) => ({ ...ep, conditions: { ...ep.conditions, ready: false } }));
}

/** Whether the endpoints are exactly what marking `saved` left: same addresses in order, none ready. */
export function stillAsMarked(endpoints: readonly Endpoint[], saved: Saved): boolean {
  return (
    endpoints.length === saved.length &&
    endpoints.every((ep, i) => firstAddress(ep) === saved[i]![0] && ep.conditions?.ready === false)
  );
}

/** The endpoints with the ready conditions `saved` kept (a condition that was absent is absent again). */
export function restoredEndpoints(endpoints: readonly Endpoint[], saved: Saved): Endpoint[] {
  return endpoints.map((ep, i) => {
    const ready = saved[i]![1];
    const { conditions, ...bare } = ep;
    const { ready: _, ...rest } = conditions ?? {};
    if (ready !== null) return { ...bare, conditions: { ...rest, ready } };
    return Object.keys(rest).length ? { ...bare, conditions: rest } : bare;
  });
}

/** The resourceVersion as a precondition: replaced by itself, any other version fails with a Conflict. */
const precondition = (slice: EndpointSliceObject): JsonPatchOp => ({
  op: "replace",
  path: "/metadata/resourceVersion",
  value: slice.metadata.resourceVersion,
});

/**
 * What to do with one reflected slice. `unreachableSince`: when the consumer it came from stopped
 * answering (undefined: it answers); `past`: whether that is past the threshold.
 */
export function planSlice(slice: EndpointSliceObject, unreachableSince: number | undefined, past: boolean): SlicePlan {
  const marked = slice.metadata.annotations?.[UNREACHABLE_SINCE_ANNOTATION];
  const endpoints = slice.endpoints ?? [];
  if (past && unreachableSince !== undefined) {
    const since = new Date(unreachableSince).toISOString();
    // Marked in this outage already: if the consumer rewrote it since, its write stands (no fight).
    if (marked === since) return { action: "none" };
    // Marked in an outage never restored (we were down when it ended): the saved conditions stay.
    const saved: Saved =
      (marked && savedOf(slice)) || endpoints.map((ep) => [firstAddress(ep), ep.conditions?.ready ?? null]);
    const annotations = {
      [UNREACHABLE_SINCE_ANNOTATION]: since,
      [UNREADY_ENDPOINTS_ANNOTATION]: JSON.stringify(saved),
    };
    const ops: JsonPatchOp[] = [precondition(slice)];
    if (!slice.metadata.annotations) ops.push({ op: "add", path: "/metadata/annotations", value: annotations });
    else for (const [k, v] of Object.entries(annotations)) ops.push({ op: "add", path: pointer(k), value: v });
    ops.push({ op: "add", path: "/endpoints", value: unreadyEndpoints(endpoints) });
    return { action: "mark", ops };
  }
  if (!marked || unreachableSince !== undefined) return { action: "none" };
  const saved = savedOf(slice);
  const drop: JsonPatchOp[] = [UNREACHABLE_SINCE_ANNOTATION, UNREADY_ENDPOINTS_ANNOTATION]
    .filter((k) => slice.metadata.annotations?.[k] !== undefined)
    .map((k) => ({ op: "remove", path: pointer(k) }));
  if (saved && stillAsMarked(endpoints, saved))
    return {
      action: "restore",
      ops: [
        precondition(slice),
        ...drop,
        { op: "add", path: "/endpoints", value: restoredEndpoints(endpoints, saved) },
      ],
    };
  return { action: "forget", ops: [precondition(slice), ...drop] };
}
