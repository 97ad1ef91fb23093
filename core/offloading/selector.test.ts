import { describe, expect, test } from "bun:test";
import { matchesNodeSelector, nodeSelectorProblems, type NodeSelector } from "./selector.ts";

const north = {
  name: "liqo-milan",
  labels: { "topology.liqo.io/region": "north", "liqo.io/remote-cluster-id": "m", cpus: "8" },
};
const south = {
  name: "liqo-naples",
  labels: { "topology.liqo.io/region": "south", "liqo.io/remote-cluster-id": "n", staging: "" },
};
const expr = (key: string, operator: string, values?: string[]): NodeSelector => ({
  nodeSelectorTerms: [{ matchExpressions: [{ key, operator, values }] }],
});

describe("matchesNodeSelector", () => {
  test("no selector selects every cluster", () => expect(matchesNodeSelector(north, undefined)).toBe(true));
  test("no terms select every cluster", () => expect(matchesNodeSelector(north, { nodeSelectorTerms: [] })).toBe(true));
  test("an empty term selects nothing", () =>
    expect(matchesNodeSelector(north, { nodeSelectorTerms: [{}] })).toBe(false));
  test("In", () => {
    expect(matchesNodeSelector(north, expr("topology.liqo.io/region", "In", ["north", "east"]))).toBe(true);
    expect(matchesNodeSelector(south, expr("topology.liqo.io/region", "In", ["north"]))).toBe(false);
  });
  test("NotIn matches a missing label", () => {
    expect(matchesNodeSelector(north, expr("topology.liqo.io/region", "NotIn", ["south"]))).toBe(true);
    expect(matchesNodeSelector(north, expr("tier", "NotIn", ["gold"]))).toBe(true);
    expect(matchesNodeSelector(south, expr("topology.liqo.io/region", "NotIn", ["south"]))).toBe(false);
  });
  test("Exists and DoesNotExist (an empty value exists)", () => {
    expect(matchesNodeSelector(south, expr("staging", "Exists"))).toBe(true);
    expect(matchesNodeSelector(north, expr("staging", "Exists"))).toBe(false);
    expect(matchesNodeSelector(north, expr("staging", "DoesNotExist"))).toBe(true);
  });
  test("Gt and Lt compare integers; a non-integer label never matches", () => {
    expect(matchesNodeSelector(north, expr("cpus", "Gt", ["4"]))).toBe(true);
    expect(matchesNodeSelector(north, expr("cpus", "Lt", ["4"]))).toBe(false);
    expect(matchesNodeSelector(north, expr("topology.liqo.io/region", "Gt", ["1"]))).toBe(false);
  });
  test("requirements in a term are ANDed", () => {
    const s: NodeSelector = {
      nodeSelectorTerms: [
        {
          matchExpressions: [
            { key: "topology.liqo.io/region", operator: "In", values: ["north", "south"] },
            { key: "staging", operator: "DoesNotExist" },
          ],
        },
      ],
    };
    expect(matchesNodeSelector(north, s)).toBe(true);
    expect(matchesNodeSelector(south, s)).toBe(false);
  });
  test("terms are ORed", () => {
    const s: NodeSelector = {
      nodeSelectorTerms: [
        { matchExpressions: [{ key: "topology.liqo.io/region", operator: "In", values: ["west"] }] },
        { matchExpressions: [{ key: "staging", operator: "Exists" }] },
      ],
    };
    expect(matchesNodeSelector(north, s)).toBe(false);
    expect(matchesNodeSelector(south, s)).toBe(true);
  });
  test("matchFields selects by node name", () => {
    const s: NodeSelector = {
      nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: ["liqo-naples"] }] }],
    };
    expect(matchesNodeSelector(south, s)).toBe(true);
    expect(matchesNodeSelector(north, s)).toBe(false);
  });
});

describe("nodeSelectorProblems", () => {
  test("a valid selector has none", () => {
    expect(nodeSelectorProblems(expr("topology.liqo.io/region", "In", ["north"]))).toEqual([]);
    expect(nodeSelectorProblems(undefined)).toEqual([]);
  });
  test("an unknown operator is named with its path", () => {
    expect(nodeSelectorProblems(expr("region", "Like", ["x"]))).toEqual([
      'spec.clusterSelector.nodeSelectorTerms[0].matchExpressions[0]: operator "Like" is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt',
    ]);
  });
  test("In without values", () =>
    expect(nodeSelectorProblems(expr("region", "In", []))[0]).toContain("needs at least one value"));
  test("Exists with values", () =>
    expect(nodeSelectorProblems(expr("region", "Exists", ["a"]))[0]).toContain("takes no values"));
  test("Gt with a non-integer", () =>
    expect(nodeSelectorProblems(expr("cpus", "Gt", ["many"]))[0]).toContain("exactly one integer"));
  test("an invalid label key", () =>
    expect(nodeSelectorProblems(expr("bad key!", "Exists"))[0]).toContain("not a valid label key"));
  test("a field other than metadata.name", () => {
    const s: NodeSelector = {
      nodeSelectorTerms: [{ matchFields: [{ key: "spec.unschedulable", operator: "In", values: ["true"] }] }],
    };
    expect(nodeSelectorProblems(s)[0]).toContain("only metadata.name");
  });
});
