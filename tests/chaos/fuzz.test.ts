// The hostile variants: seeded (a seed replays a run), never touching the base object, each
// mutation said in words.
import { describe, expect, test } from "bun:test";
import { sampleShadowPod } from "../../core/apis/samples.ts";
import { HOSTILE_VALUES, mutate, paths } from "./fuzz.ts";
import { seeded } from "./random.ts";

describe("fuzz variants", () => {
  test("paths reach every value, through objects and lists", () => {
    expect(paths({ a: { b: [1, { c: 2 }] } })).toEqual([
      ["a"],
      ["a", "b"],
      ["a", "b", 0],
      ["a", "b", 1],
      ["a", "b", 1, "c"],
    ]);
  });

  test("the same seed gives the same variants; another seed other ones", () => {
    const run = (seed: number) => {
      const rand = seeded(seed);
      return Array.from({ length: 20 }, () => mutate(sampleShadowPod(), rand));
    };
    expect(JSON.stringify(run(7))).toBe(JSON.stringify(run(7)));
    expect(JSON.stringify(run(7))).not.toBe(JSON.stringify(run(8)));
  });

  test("1 to 4 mutations, each described; the base is left as it was", () => {
    const rand = seeded(42);
    const base = sampleShadowPod();
    const before = JSON.stringify(base);
    for (let i = 0; i < 200; i++) {
      const { object, done } = mutate(base, rand);
      expect(done.length).toBeGreaterThanOrEqual(1);
      expect(done.length).toBeLessThanOrEqual(4);
      for (const d of done) expect(d).toMatch(/^(set spec\.|removed spec\.|added spec\.unknown|a label value)/);
      expect(JSON.stringify(object)).not.toBe(before);
    }
    expect(JSON.stringify(base)).toBe(before);
  });

  test("every hostile value is JSON a client can send", () => {
    for (const [name, make] of HOSTILE_VALUES) expect(() => JSON.stringify(make()), name).not.toThrow();
  });
});
