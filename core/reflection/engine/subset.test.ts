import { expect, test } from "bun:test";
import { isSubset } from "./subset.ts";

test.each([
  [{ a: 1 }, { a: 1, b: 2 }, true],
  [{ a: 1 }, { a: 2 }, false],
  [{ a: { b: [1, { c: 2 }] } }, { a: { b: [1, { c: 2, d: 3 }] } }, true],
  [{ a: [1, 2] }, { a: [1, 2, 3] }, false],
  [{ a: [1] }, { a: { 0: 1 } }, false],
  [{ a: "x" }, {}, false],
  [{ a: undefined }, {}, true],
  [{ a: null }, { a: null }, true],
  [{ a: null }, {}, false],
  [{ labels: { x: "1" } }, { labels: { x: "1", y: "2" } }, true],
  // Empty lists and maps are stored as absent or null.
  [{ endpoints: [] }, { endpoints: null }, true],
  [{ endpoints: [] }, {}, true],
  [{ metadata: { annotations: {} } }, { metadata: {} }, true],
  [{ spec: { a: { b: [] } } }, { spec: {} }, true],
  [{ endpoints: [{ addresses: ["1.2.3.4"] }] }, { endpoints: null }, false],
  [{ spec: { a: { b: "x" } } }, { spec: {} }, false],
  [{ spec: { a: null } }, { spec: {} }, false],
  [{ endpoints: [] }, { endpoints: "" }, false],
])("isSubset(%j, %j) = %p", (d, a, expected) => {
  expect(isSubset(d, a)).toBe(expected);
});
