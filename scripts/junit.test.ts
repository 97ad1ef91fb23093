import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { junitFailures, junitFiles } from "./junit.ts";

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
