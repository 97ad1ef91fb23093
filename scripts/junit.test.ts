import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hookTimes, junitFailures, junitFiles, junitTests } from "./junit.ts";

// The report is bun's own, written by a real `bun test` run of files that fail in the ways the suite can:
// a top-level hook (which bun names only "(unnamed)"), a hook in a describe block, and a test.
test("a real bun JUnit report: each failure named by its file, with its message; each file with its time", () => {
  const dir = mkdtempSync(join(tmpdir(), "junit-"));
  try {
    writeFileSync(
      join(dir, "hook.test.ts"),
      `import { beforeAll, expect, test } from "bun:test";
beforeAll(() => { throw new Error("rig did not start: <milan> & \\"rome\\""); });
test("never runs", () => { expect(1).toBe(1); });`,
    );
    writeFileSync(
      join(dir, "nested.test.ts"),
      `import { afterAll, describe, expect, test } from "bun:test";
describe("outer", () => {
  afterAll(() => { throw new Error("cleanup failed"); });
  test("passes", () => { expect(1).toBe(1); });
  test("fails", () => { expect(1).toBe(2); });
});`,
    );
    const out = join(dir, "report.xml");
    const run = Bun.spawnSync([process.execPath, "test", "--reporter=junit", `--reporter-outfile=${out}`], {
      cwd: dir,
    });
    expect(run.exitCode).toBe(1);
    const report = readFileSync(out, "utf8");

    const failures = junitFailures(report);
    const byFile = failures.map((f) => `${f.file} | ${f.name}`).sort();
    expect(byFile).toEqual([
      "hook.test.ts | (unnamed)",
      "nested.test.ts | outer > (unnamed)",
      "nested.test.ts | outer > fails",
    ]);
    expect(failures.find((f) => f.file === "hook.test.ts")?.text).toContain('rig did not start: <milan> & "rome"');
    expect(failures.find((f) => f.name === "outer > (unnamed)")?.text).toContain("cleanup failed");
    expect(failures.find((f) => f.name === "outer > fails")?.text).toContain("toBe");

    expect(
      junitFiles(report)
        .map((f) => f.file)
        .sort(),
    ).toEqual(["hook.test.ts", "nested.test.ts"]);
    expect(junitFiles(report).every((f) => Number.isFinite(f.seconds) && f.seconds >= 0)).toBe(true);
    // Every test that ran, by file and full name; the failed hooks bun lists as "(unnamed)" are not tests.
    const tests = junitTests(report);
    expect(tests.map((t) => `${t.file} | ${t.name}`).sort()).toEqual([
      "nested.test.ts | outer > fails",
      "nested.test.ts | outer > passes",
    ]);
    expect(tests.every((t) => Number.isFinite(t.seconds) && t.seconds >= 0)).toBe(true);
    expect(
      hookTimes(report)
        .map((h) => h.file)
        .sort(),
    ).toEqual(["hook.test.ts", "nested.test.ts"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a report without failures has none", () => {
  expect(
    junitFailures(
      '<testsuites><testsuite name="a" file="a.test.ts"><testcase name="t" classname="" time="0.1" file="a.test.ts" /></testsuite></testsuites>',
    ),
  ).toEqual([]);
});

test("hook time: a file's time less its tests', the files spending most outside their tests first", () => {
  const report = [
    "<testsuites>",
    '  <testsuite name="a.test.ts" file="a.test.ts" tests="2" time="10">',
    '    <testcase name="one" classname="" time="1" file="a.test.ts" />',
    '    <testcase name="two &amp; more" classname="block" time="2" file="a.test.ts" />',
    "  </testsuite>",
    '  <testsuite name="b.test.ts" file="b.test.ts" tests="1" time="30">',
    '    <testcase name="only" classname="" time="29.5" file="b.test.ts" />',
    '    <testcase name="(unnamed)" classname="" time="0" file="b.test.ts"><failure>hook</failure></testcase>',
    "  </testsuite>",
    '  <testsuite name="c.test.ts" file="c.test.ts" tests="0" time="4">',
    "  </testsuite>",
    "</testsuites>",
  ].join("\n");
  expect(junitTests(report).map((t) => t.name)).toEqual(["one", "block > two & more", "only"]);
  expect(hookTimes(report)).toEqual([
    { file: "a.test.ts", seconds: 10, tests: 3, hooks: 7 },
    { file: "c.test.ts", seconds: 4, tests: 0, hooks: 4 },
    { file: "b.test.ts", seconds: 30, tests: 29.5, hooks: 0.5 },
  ]);
});
