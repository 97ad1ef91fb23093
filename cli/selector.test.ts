import { describe, expect, test } from "bun:test";
import { parseSelector, selectorTerms } from "./selector.ts";
import { CliError } from "./errors.ts";

describe("parseSelector", () => {
  test.each([
    ["topology.liqo.io/region=south", [{ key: "topology.liqo.io/region", operator: "In", values: ["south"] }]],
    ["region==south", [{ key: "region", operator: "In", values: ["south"] }]],
    ["region!=south", [{ key: "region", operator: "NotIn", values: ["south"] }]],
    ["region in (europe,us-west)", [{ key: "region", operator: "In", values: ["europe", "us-west"] }]],
    ["region notin (a, b)", [{ key: "region", operator: "NotIn", values: ["a", "b"] }]],
    ["staging", [{ key: "staging", operator: "Exists" }]],
    ["!staging", [{ key: "staging", operator: "DoesNotExist" }]],
    [
      "region in (europe,us-west), !staging",
      [
        { key: "region", operator: "In", values: ["europe", "us-west"] },
        { key: "staging", operator: "DoesNotExist" },
      ],
    ],
  ] as const)("%s", (input, expected) => {
    expect(parseSelector(input)).toEqual(expected as never);
  });

  test.each([
    ["", /omit --selector/],
    ["a,,b", /empty requirement/],
    ["region in ()", /lists no values/],
    ["bad key!=x", /cannot parse/],
    ["-bad=x", /not a valid label key/],
    ["region=in valid", /cannot parse/],
    ["region=-x", /not a valid label value/],
  ])("'%s' is refused", (input, message) => {
    expect(() => parseSelector(input)).toThrow(CliError);
    expect(() => parseSelector(input)).toThrow(message);
  });
});

test("each --selector is one ORed term", () => {
  expect(selectorTerms(["region in (europe,us-west)", "!staging"])).toEqual([
    { matchExpressions: [{ key: "region", operator: "In", values: ["europe", "us-west"] }] },
    { matchExpressions: [{ key: "staging", operator: "DoesNotExist" }] },
  ]);
});
