import { describe, expect, test } from "bun:test";
import {
  planSlice,
  restoredEndpoints,
  stillAsMarked,
  UNREACHABLE_SINCE_ANNOTATION,
  UNREADY_ENDPOINTS_ANNOTATION,
  unreadyEndpoints,
  type Endpoint,
  type EndpointSliceObject,
} from "./endpoints.ts";

const since = Date.parse("2026-11-28T17:00:00Z");
const eps: Endpoint[] = [
  { addresses: ["10.1.0.5"], conditions: { ready: true, serving: true } },
  { addresses: ["10.1.0.6"], conditions: { ready: false } },
  { addresses: ["10.1.0.7"] },
];
const slice = (endpoints: Endpoint[], annotations?: Record<string, string>): EndpointSliceObject => ({
  metadata: { name: "web-x", namespace: "twin", resourceVersion: "42", ...(annotations && { annotations }) },
  endpoints,
});
const saved = JSON.stringify([
  ["10.1.0.5", true],
  ["10.1.0.6", false],
  ["10.1.0.7", null],
]);
const marked = (endpoints = unreadyEndpoints(eps)) =>
  slice(endpoints, {
    [UNREACHABLE_SINCE_ANNOTATION]: new Date(since).toISOString(),
    [UNREADY_ENDPOINTS_ANNOTATION]: saved,
  });

describe("unreadyEndpoints", () => {
  test("every ready condition false, the others kept", () =>
    expect(unreadyEndpoints(eps).map((e) => e.conditions)).toEqual([
      { ready: false, serving: true },
      { ready: false },
      { ready: false },
    ]));
});

describe("restoredEndpoints", () => {
  test("the saved conditions back, an absent one absent again", () =>
    expect(restoredEndpoints(unreadyEndpoints(eps), JSON.parse(saved))).toEqual(eps));
});

describe("stillAsMarked", () => {
  test("as we left them", () => expect(stillAsMarked(unreadyEndpoints(eps), JSON.parse(saved))).toBe(true));
  test("one ready again: rewritten", () =>
    expect(stillAsMarked([{ ...eps[0]! }, ...unreadyEndpoints(eps).slice(1)], JSON.parse(saved))).toBe(false));
  test("another address: rewritten", () =>
    expect(stillAsMarked(unreadyEndpoints(eps).slice(1), JSON.parse(saved))).toBe(false));
});

describe("planSlice", () => {
  test("reachable and unmarked: nothing", () =>
    expect(planSlice(slice(eps), undefined, false)).toEqual({ action: "none" }));
  test("unreachable within the threshold: nothing yet", () =>
    expect(planSlice(slice(eps), since, false)).toEqual({ action: "none" }));
  test("past the threshold: marked, with what it was, under a resourceVersion precondition", () =>
    expect(planSlice(slice(eps), since, true)).toEqual({
      action: "mark",
      ops: [
        { op: "replace", path: "/metadata/resourceVersion", value: "42" },
        {
          op: "add",
          path: "/metadata/annotations",
          value: {
            [UNREACHABLE_SINCE_ANNOTATION]: new Date(since).toISOString(),
            [UNREADY_ENDPOINTS_ANNOTATION]: saved,
          },
        },
        { op: "add", path: "/endpoints", value: unreadyEndpoints(eps) },
      ],
    }));
  test("existing annotations are added to, not replaced", () => {
    const p = planSlice(slice(eps, { keep: "me" }), since, true);
    expect(p.action === "mark" && p.ops.slice(1, 3).map((o) => o.path)).toEqual([
      "/metadata/annotations/liqo.io~1unreachable-since",
      "/metadata/annotations/liqo.io~1unready-endpoints",
    ]);
  });
  test("marked in this outage, rewritten by the consumer since: left alone (no fight)", () =>
    expect(planSlice(marked(eps), since, true)).toEqual({ action: "none" }));
  test("marked in an older outage: marked again, the first saved conditions kept", () => {
    const p = planSlice(marked(eps), since + 60_000, true);
    expect(p.action).toBe("mark");
    expect(p.action === "mark" && p.ops[2]).toEqual({
      op: "add",
      path: "/metadata/annotations/liqo.io~1unready-endpoints",
      value: saved,
    });
  });
  test("reachable again, still as marked: restored and unannotated", () =>
    expect(planSlice(marked(), undefined, false)).toEqual({
      action: "restore",
      ops: [
        { op: "replace", path: "/metadata/resourceVersion", value: "42" },
        { op: "remove", path: "/metadata/annotations/liqo.io~1unreachable-since" },
        { op: "remove", path: "/metadata/annotations/liqo.io~1unready-endpoints" },
        { op: "add", path: "/endpoints", value: eps },
      ],
    }));
  test("reachable again, rewritten by the consumer: only the annotations go", () =>
    expect(planSlice(marked(eps), undefined, false)).toEqual({
      action: "forget",
      ops: [
        { op: "replace", path: "/metadata/resourceVersion", value: "42" },
        { op: "remove", path: "/metadata/annotations/liqo.io~1unreachable-since" },
        { op: "remove", path: "/metadata/annotations/liqo.io~1unready-endpoints" },
      ],
    }));
  test("marked and unreachable again within the threshold: kept as it is", () =>
    expect(planSlice(marked(), since + 60_000, false)).toEqual({ action: "none" }));
  test("an unreadable saved annotation: forgotten, not restored from garbage", () =>
    expect(
      planSlice(
        slice(unreadyEndpoints(eps), {
          [UNREACHABLE_SINCE_ANNOTATION]: "x",
          [UNREADY_ENDPOINTS_ANNOTATION]: "{not json",
        }),
        undefined,
        false,
      ).action,
    ).toBe("forget"));
});
