import { describe, expect, test } from "bun:test";
import { andTerms, requireNodeTerms } from "./node-affinity.ts";
import type { PodSpec } from "./types.ts";

const north = { matchExpressions: [{ key: "topology.liqo.io/region", operator: "In", values: ["north"] }] };

describe("andTerms", () => {
  test("every pair of ORed terms is merged", () => {
    const a = [
      { matchExpressions: [{ key: "a", operator: "Exists" }] },
      { matchExpressions: [{ key: "b", operator: "Exists" }] },
    ];
    const b = [{ matchExpressions: [{ key: "c", operator: "Exists" }] }];
    expect(andTerms(a, b)).toEqual([
      {
        matchExpressions: [
          { key: "a", operator: "Exists" },
          { key: "c", operator: "Exists" },
        ],
      },
      {
        matchExpressions: [
          { key: "b", operator: "Exists" },
          { key: "c", operator: "Exists" },
        ],
      },
    ]);
  });
  test("an empty side leaves the other", () => expect(andTerms([], [north])).toEqual([north]));
});

describe("requireNodeTerms", () => {
  test("a spec without affinity gets the terms", () => {
    const spec: PodSpec = {};
    requireNodeTerms(spec, [north]);
    expect(spec.affinity).toEqual({
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [north] } },
    });
  });
  test("no terms leave the spec as it was", () => {
    const spec = {};
    requireNodeTerms(spec, []);
    expect(spec).toEqual({});
  });
});
