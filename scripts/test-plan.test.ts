import { expect, test } from "bun:test";
import { planShards, testFiles } from "./test-plan.ts";

test("the longest files go to different shards; the short ones fill the gaps to about equal time", () => {
  const durations = { "a.test.ts": 400, "b.test.ts": 300, "c.test.ts": 200, "d.test.ts": 100, "e.test.ts": 100 };
  const shards = planShards(Object.keys(durations), durations, 2);
  expect(shards.map((s) => s.seconds)).toEqual([600, 500]);
  expect(shards[0]!.files).toEqual(["a.test.ts", "d.test.ts", "e.test.ts"]);
  expect(shards[1]!.files).toEqual(["b.test.ts", "c.test.ts"]);
});

test("every file lands in exactly one shard; an unmeasured file counts 60 s", () => {
  const files = ["new.test.ts", "old.test.ts", "x.test.ts"];
  const shards = planShards(files, { "old.test.ts": 10, "x.test.ts": 1 }, 3);
  expect(shards.flatMap((s) => s.files).sort()).toEqual(files);
  expect(shards.find((s) => s.files.includes("new.test.ts"))!.seconds).toBe(60);
});

test("more shards than files leaves some empty; a shard count that is not a whole number ≥ 1 is refused", () => {
  expect(planShards(["a.test.ts"], {}, 3).filter((s) => s.files.length).length).toBe(1);
  expect(() => planShards(["a.test.ts"], {}, 0)).toThrow(/whole number ≥ 1, got 0/);
  expect(() => planShards(["a.test.ts"], {}, 1.5)).toThrow(/got 1.5/);
});

test("the repository's test files: this one among them, none under node_modules", () => {
  const files = testFiles();
  expect(files).toContain("scripts/test-plan.test.ts");
  expect(files.some((f) => f.includes("node_modules"))).toBe(false);
});
