import { expect, test } from "bun:test";
import { trend } from "./stats.ts";

test("trend: a series that keeps rising grows; one that rose and stopped levels off; noise is flat", () => {
  const rising = Array.from({ length: 30 }, (_, i) => 100 + i * 2);
  expect(trend(rising, 4)).toBe("grows");
  const warmUp = [60, 80, 95, 100, 101, 100, 99, 100, 101, 100, 100, 101];
  expect(trend(warmUp, 4)).toBe("levels off");
  const noise = [100, 103, 98, 101, 99, 102, 100, 97, 103, 100, 99, 101];
  expect(trend(noise, 4)).toBe("flat");
});

test("trend: growth below the absolute or the relative floor is flat; too few samples say nothing", () => {
  const slow = Array.from({ length: 30 }, (_, i) => 100 + i * 0.1);
  expect(trend(slow, 4)).toBe("flat");
  const smallButSteep = Array.from({ length: 30 }, (_, i) => 2 + i * 0.5);
  expect(trend(smallButSteep, 10)).toBe("flat");
  expect(trend(smallButSteep, 1)).toBe("grows");
  expect(trend([1, 2, 3, 4, 5], 0)).toBeUndefined();
});
