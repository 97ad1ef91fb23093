// The GitHub workflows (.github/workflows) cannot run here; actionlint checks them: syntax, the
// expressions and contexts they use, action inputs, and (through shellcheck) their run: scripts.
// actionlint is built by scripts/setup.sh at the version tests/rig/versions.env pins.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { rigVersions } from "../rig/binaries.ts";

const repo = resolve(import.meta.dir, "../..");

function actionlintBinary(): string {
  const version = rigVersions().ACTIONLINT_VERSION;
  if (!version) throw new Error("tests/rig/versions.env has no ACTIONLINT_VERSION");
  const bin = join(
    process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"),
    "liqo-bun",
    `actionlint-${version}`,
    "actionlint",
  );
  if (!existsSync(bin)) throw new Error(`actionlint ${version} is not built (no ${bin}): run bash scripts/setup.sh`);
  return bin;
}

/** actionlint over the workflow files under `dir`, as `file:line:col: message [rule]` lines. */
async function actionlint(dir: string, files: string[]): Promise<{ code: number; findings: string[]; err: string }> {
  const shellcheck = Bun.which("shellcheck");
  if (!shellcheck)
    throw new Error("shellcheck is not installed: run bash scripts/setup.sh (apt-get install shellcheck)");
  // -pyflakes= : no Python in the workflows; the format keeps one finding per line.
  const p = Bun.spawn(
    [
      actionlintBinary(),
      "-shellcheck",
      shellcheck,
      "-pyflakes=",
      "-format",
      "{{range $e := .}}{{$e.Filepath}}:{{$e.Line}}:{{$e.Column}}: {{$e.Message}} [{{$e.Kind}}]\n{{end}}",
      ...files,
    ],
    { cwd: dir, stdout: "pipe", stderr: "pipe" },
  );
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code: await p.exited, findings: out.split("\n").filter(Boolean), err };
}

describe(".github/workflows", () => {
  test("actionlint finds nothing in any workflow", async () => {
    const files = [...new Bun.Glob(".github/workflows/*.{yml,yaml}").scanSync({ cwd: repo, dot: true })].sort();
    expect(files).toContain(".github/workflows/release.yml");
    const r = await actionlint(repo, files);
    expect(r.findings).toEqual([]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
  });

  test("a broken workflow is reported, each mistake by line and rule (the check can fail)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "actionlint-test-"));
    try {
      mkdirSync(join(dir, ".github/workflows"), { recursive: true });
      await Bun.write(
        join(dir, ".github/workflows/broken.yml"),
        `name: broken
on:
  push:
    tags: ["v*"]
jobs:
  build:
    runs-on: ubuntu-24.04
    needs: [nowhere]
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-deph: 0
      - run: echo \${{ github.event.no_such_thing.title }} \${{ steps.missing.outputs.version }}
      - run: cd $DIR && ls
`,
      );
      const r = await actionlint(dir, [".github/workflows/broken.yml"]);
      expect(r.code).toBe(1);
      const at = (line: number, kind: string) =>
        r.findings.some((f) => f.startsWith(`.github/workflows/broken.yml:${line}:`) && f.endsWith(`[${kind}]`));
      expect({
        unknownJob: at(6, "job-needs"), // reported at the job
        unknownInput: at(12, "action"),
        unknownStep: at(13, "expression"),
        unquotedVariable: at(14, "shellcheck"),
      }).toEqual({ unknownJob: true, unknownInput: true, unknownStep: true, unquotedVariable: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
