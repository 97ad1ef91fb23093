// scripts/release.ts's checks before anything is built, and its artifact names; the whole release
// runs in tests/e2e/release.test.ts.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { liqoctlArtifact, versionProblem } from "./release.ts";

const repo = resolve(import.meta.dir, "..");

describe("versionProblem", () => {
  test("package.json's version and pre-releases of it are accepted", () => {
    for (const v of ["0.1.0", "0.1.0-rc.1", "0.1.0-alpha", "0.1.0-0.3.7", "0.1.0-x.7.z.92"])
      expect(versionProblem(v, "0.1.0")).toBeUndefined();
  });

  test("anything else is refused with what to do instead", () => {
    expect(versionProblem("", "0.1.0")).toBe("give the version to release: bash scripts/release.sh 0.1.0");
    expect(versionProblem("v0.1.0", "0.1.0")).toBe(
      `v0.1.0: give the version without the tag's "v": bash scripts/release.sh 0.1.0`,
    );
    expect(versionProblem("0.1.0+build.5", "0.1.0")).toContain("cannot be part of an image tag");
    for (const v of ["0.1", "01.1.0", "0.1.0-", "0.1.0-01", "latest", "0.1.0 ", "1.2.3.4", "0.1.0-rc..1"])
      expect(versionProblem(v, "0.1.0")).toBe(
        `${v} is not a semantic version (MAJOR.MINOR.PATCH, optionally -PRERELEASE, e.g. 0.1.0 or 0.2.0-rc.1)`,
      );
    expect(versionProblem("0.2.0", "0.1.0")).toBe(
      "0.2.0: package.json's version is 0.1.0; release 0.1.0 (or a pre-release of it, 0.1.0-rc.1), or set package.json's version to 0.2.0 and commit it first",
    );
    expect(versionProblem("0.1.1-rc.1", "0.1.0")).toContain("package.json's version is 0.1.0");
  });
});

test("liqoctl's artifacts are named as Go programs' are (amd64, not x64)", () => {
  expect(liqoctlArtifact("0.1.0", "linux-x64")).toBe("liqoctl-0.1.0-linux-amd64.tar.gz");
  expect(liqoctlArtifact("0.1.0", "darwin-arm64")).toBe("liqoctl-0.1.0-darwin-arm64.tar.gz");
});

test("release.sh refuses a version that is not semver before it builds anything", async () => {
  const out = join(repo, "dist", "release-not-a-version-test");
  const p = Bun.spawn(["bash", join(repo, "scripts/release.sh"), "1.0", "--out", out], {
    cwd: repo,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  expect(await p.exited).toBe(1);
  expect(stdout).toBe("");
  expect(stderr).toBe(
    "release: 1.0 is not a semantic version (MAJOR.MINOR.PATCH, optionally -PRERELEASE, e.g. 0.1.0 or 0.2.0-rc.1)\n",
  );
  expect(existsSync(out)).toBe(false);
});

test("release.sh names its usage on a bad flag", async () => {
  const p = Bun.spawn(["bash", join(repo, "scripts/release.sh"), "0.1.0", "--bogus"], {
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(await p.exited).toBe(2);
  expect(await new Response(p.stderr).text()).toBe(
    "usage: bash scripts/release.sh VERSION [--out DIR] [--allow-dirty]\n",
  );
});

test("CHANGELOG.md has a section for package.json's version (the tag workflow's release notes)", () => {
  const version = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).version as string;
  const changelog = readFileSync(join(repo, "CHANGELOG.md"), "utf8");
  // Between releases main carries the next version with -dev, and its section is "unreleased".
  const when = version.endsWith("-dev") ? "unreleased" : "\\d{4}-\\d{2}-\\d{2}";
  const heading = changelog.match(new RegExp(`^## ${version.replace(/\./g, "\\.")} — (${when})$`, "m"));
  expect(heading?.[0]).toBeDefined();
});
