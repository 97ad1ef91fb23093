import { describe, expect, test } from "bun:test";
import { LabelSelectorError, matchesLabels, parseLabelSelector } from "./label-selector.ts";

describe("matchesLabels", () => {
  const m = (selector: string, labels?: Record<string, string>) => matchesLabels(labels, parseLabelSelector(selector));
  test.each([
    ["app=web", { app: "web" }, true],
    ["app=web", { app: "db" }, false],
    ["app=web", undefined, false],
    ["app!=web", { app: "db" }, true],
    ["app!=web", {}, true],
    ["app!=web", { app: "web" }, false],
    ["tier in (a,b)", { tier: "b" }, true],
    ["tier in (a,b)", { tier: "c" }, false],
    ["tier notin (a,b)", {}, true],
    ["tier notin (a,b)", { tier: "a" }, false],
    ["app", { app: "" }, true],
    ["app", {}, false],
    ["!legacy", {}, true],
    ["!legacy", { legacy: "yes" }, false],
    ["app=web,!legacy", { app: "web" }, true],
    ["app=web,!legacy", { app: "web", legacy: "" }, false],
  ] as const)("%s on %j: %p", (selector, labels, expected) =>
    expect(m(selector, labels as Record<string, string> | undefined)).toBe(expected),
  );
});

test("an unparsable selector is a LabelSelectorError naming the part", () => {
  expect(() => parseLabelSelector("app in ()")).toThrow(LabelSelectorError);
  expect(() => parseLabelSelector("app in ()")).toThrow('"app in ()" lists no values');
  expect(() => parseLabelSelector("a,,b")).toThrow("empty requirement");
});
