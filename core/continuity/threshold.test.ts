import { describe, expect, test } from "bun:test";
import { crossesAt, parseThreshold, pastThreshold } from "./threshold.ts";

describe("parseThreshold", () => {
  test("seconds", () => expect(parseThreshold("15s", "--x")).toBe(15_000));
  test("a bare number is seconds", () => expect(parseThreshold("20", "--x")).toBe(20_000));
  test("minutes and seconds", () => expect(parseThreshold("1m30s", "--x")).toBe(90_000));
  test("milliseconds", () => expect(parseThreshold("1500ms", "--x")).toBe(1500));
  test("nonsense names the option and the form", () =>
    expect(() => parseThreshold("soon", "--service-continuity-threshold")).toThrow(
      '--service-continuity-threshold "soon" is not a duration; write it like 15s, 500ms or 1m',
    ));
  test("a negative value is not a duration", () =>
    expect(() => parseThreshold("-5s", "--x")).toThrow("not a duration"));
  test("zero is refused", () => expect(() => parseThreshold("0s", "--x")).toThrow("shorter than 1s"));
  test("under a second is refused", () => expect(() => parseThreshold("200ms", "--x")).toThrow("shorter than 1s"));
});

describe("pastThreshold", () => {
  test("reachable is never past", () => expect(pastThreshold(undefined, 100_000, 15_000)).toBe(false));
  test("within the threshold", () => expect(pastThreshold(90_000, 100_000, 15_000)).toBe(false));
  test("at the threshold", () => expect(pastThreshold(85_000, 100_000, 15_000)).toBe(true));
});

describe("crossesAt", () => {
  test("when an outage will cross", () => expect(crossesAt(90_000, 100_000, 15_000)).toBe(105_000));
  test("nothing once crossed", () => expect(crossesAt(80_000, 100_000, 15_000)).toBeUndefined());
  test("nothing while reachable", () => expect(crossesAt(undefined, 100_000, 15_000)).toBeUndefined());
});
