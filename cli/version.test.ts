// cli/version.ts: the commit a checkout reports, read from .git's files (a branch, packed refs, a
// detached HEAD, a worktree), and the version output with it; a compiled program's comes from the
// build (tests/e2e/release.test.ts, tests/e2e/cli.test.ts).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { clientVersion, clientVersionOutput, gitCommit } from "./version.ts";

const tmp = mkdtempSync(join(tmpdir(), "liqo-version-test-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function git(cwd: string, ...args: string[]): string {
  const p = Bun.spawnSync(["git", ...args], {
    cwd,
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
    },
  });
  if (p.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${p.stderr.toString()}`);
  return p.stdout.toString().trim();
}

describe("gitCommit", () => {
  const repo = join(tmp, "repo");
  git(tmp, "init", "-q", "-b", "main", repo);
  git(repo, "commit", "-q", "--allow-empty", "-m", "one");
  const first = git(repo, "rev-parse", "HEAD");
  git(repo, "commit", "-q", "--allow-empty", "-m", "two");
  const second = git(repo, "rev-parse", "HEAD");

  test("a branch's loose ref, then the same after git pack-refs", () => {
    expect(gitCommit(repo)).toBe(second);
    git(repo, "pack-refs", "--all");
    expect(gitCommit(repo)).toBe(second);
  });

  test("a detached HEAD", () => {
    git(repo, "checkout", "-q", "--detach", first);
    expect(gitCommit(repo)).toBe(first);
    git(repo, "checkout", "-q", "main");
  });

  test("a worktree (its .git is a file; the branch is in the common directory)", () => {
    const wt = join(tmp, "wt");
    git(repo, "worktree", "add", "-q", "-b", "side", wt, first);
    expect(gitCommit(wt)).toBe(first);
  });

  test("no checkout: undefined", () => {
    expect(gitCommit(tmp)).toBeUndefined();
  });
});

describe("the version output", () => {
  test("names the version and this checkout's commit, in text and JSON", () => {
    const head = git(resolve(import.meta.dir, ".."), "rev-parse", "HEAD");
    const c = clientVersion();
    expect(c.commit).toBe(head);
    expect(clientVersionOutput("text")).toBe(
      `Client version: ${c.version} (commit ${head}, bun ${Bun.version}, ${c.platform})`,
    );
    expect(JSON.parse(clientVersionOutput("json"))).toEqual({
      client: { version: c.version, commit: head, runtime: `bun ${Bun.version}`, platform: c.platform },
    });
  });
});
