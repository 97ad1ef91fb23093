import { describe, expect, test } from "bun:test";
import { createTokenBuckets } from "./buckets.ts";

describe("token buckets", () => {
  test("a burst, then one token per refill period, never more than the burst", () => {
    let t = 1_000_000;
    const b = createTokenBuckets({ burst: 3, refillMs: 1000, now: () => t });
    expect([b.take("a"), b.take("a"), b.take("a"), b.take("a")]).toEqual([true, true, true, false]);
    expect(b.wait("a")).toBe(1000);
    t += 999;
    expect(b.take("a")).toBe(false);
    expect(b.wait("a")).toBe(1);
    t += 1;
    expect([b.take("a"), b.take("a")]).toEqual([true, false]);
    t += 60_000;
    expect([b.take("a"), b.take("a"), b.take("a"), b.take("a")]).toEqual([true, true, true, false]);
  });

  test("keys are independent", () => {
    const b = createTokenBuckets({ burst: 1, refillMs: 1000, now: () => 0 });
    expect([b.take("a"), b.take("b"), b.take("a")]).toEqual([true, true, false]);
    expect(b.wait("b")).toBe(1000);
    expect(b.wait("c")).toBe(0);
  });

  test("many keys: full buckets are forgotten, empty ones kept", () => {
    let t = 0;
    const b = createTokenBuckets({ burst: 1, refillMs: 1000, now: () => t, maxKeys: 10 });
    b.take("empty");
    t = 500;
    for (let i = 0; i < 20; i++) b.take(`k${i}`);
    expect(b.take("empty")).toBe(false);
  });
});
