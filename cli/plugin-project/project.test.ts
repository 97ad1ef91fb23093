// A plugin project as an author makes one, in a temporary folder outside this checkout:
// `liqoctl plugin init`, `bun install` (assemblyscript from the npm registry, the SDK from the copy
// liqoctl wrote), the project's own `bun run test`, then `liqoctl plugin build` and `test`, and the
// mistakes authors make, each answered with its fix.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { pluginCli, run } from "../../tests/support/plugin-project.ts";

const repo = resolve(import.meta.dir, "../..");
let tmp: string;
let project: string;
const liqoctl = pluginCli;

/** Runs fn with the entry file changed by edit, then puts the original back. */
async function withEntry<T>(edit: (src: string) => string, fn: () => Promise<T>): Promise<T> {
  const path = join(project, "assembly/index.ts");
  const original = readFileSync(path, "utf8");
  writeFileSync(path, edit(original));
  try {
    return await fn();
  } finally {
    writeFileSync(path, original);
  }
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "liqo-plugin-project-"));
  project = join(tmp, "pdbs");
  expect(relative(repo, project).startsWith("..")).toBe(true); // outside the checkout, as an author's
  const init = await liqoctl(tmp, "init", "pdbs", "--kind", "policy/v1/PodDisruptionBudget");
  expect(init.err).toBe("");
  expect(init.out).toContain(
    "Created pdbs: plugin pdbs for policy/v1 PodDisruptionBudget, SDK 0.1.0 in vendor/plugin-sdk.",
  );
  expect(init.code).toBe(0);
}, 120_000);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("a scaffolded plugin project, outside the repository", () => {
  test("before bun install, build says what to run", async () => {
    const r = await liqoctl(project, "build");
    expect(r.err).toContain('the compiler or the SDK is not installed: run "bun install" there');
    expect(r.code).toBe(2);
  });

  test("bun install, then the project's own test script builds it and passes as generated", async () => {
    const install = await run(project, process.execPath, "install");
    expect(install.err + install.out).toContain("assemblyscript@0.28.20");
    expect(install.code).toBe(0);
    const t = await run(project, process.execPath, "run", "test");
    expect(t.err).toContain(
      "reflector plugin conformance: pdbs 0.1.0 > policy/v1/PodDisruptionBudget forward: deterministic",
    );
    expect(t.err).toMatch(/\b9 pass\b/);
    expect(t.err).toMatch(/\b0 fail\b/);
    expect(t.err).not.toContain("AS210"); // the SDK's own files compile without notices
    expect(t.code).toBe(0);
  }, 180_000);

  test("liqoctl plugin build and test (the conformance kit, as a drop-in)", async () => {
    const b = await liqoctl(project, "build");
    expect(b.out).toMatch(
      /^built build\/pdbs\.wasm \(\d+ bytes\): pdbs 0\.1\.0, reflects PodDisruptionBudget \(forward\)$/m,
    );
    expect(b.code).toBe(0);
    const t = await liqoctl(project, "test");
    expect(t.out).toContain("reflector plugin conformance: pdbs 0.1.0 (drop-in, in a worker, 1 sample(s))");
    expect(t.out).toContain("7 passed, 0 failed");
    expect(t.code).toBe(0);
  }, 120_000);

  test("liqoctl plugin test --input shows the copy; --deleted what happens once the source is gone", async () => {
    const sample = "samples/poddisruptionbudget.yaml";
    const copy = JSON.parse((await liqoctl(project, "test", ".", "--input", sample, "-o", "json")).out);
    expect(copy.decision).toBe("apply");
    expect(copy.object.spec).toEqual({ minAvailable: 1, selector: { matchLabels: { app: "web" } } });
    expect(copy.object.metadata.labels["pdbs.liqo.io/reflected"]).toBe("true");
    const gone = await liqoctl(project, "test", ".", "--input", sample, "--deleted", "-o", "json");
    expect(JSON.parse(gone.out)).toEqual({ decision: "delete", reason: "local object deleted" });
    expect(gone.code).toBe(0);
    const alone = await liqoctl(project, "test", "--deleted");
    expect(alone.err).toContain("--deleted needs --input: the object whose deletion to simulate");
    expect(alone.code).toBe(2);
  }, 120_000);

  test("an absolute import of the SDK: the build fails with the fix", async () => {
    const r = await withEntry(
      (src) => src.replace('from "@liqo-bun/plugin-sdk";', `from "${join(project, "vendor/plugin-sdk/index")}";`),
      () => liqoctl(project, "build"),
    );
    expect(r.err).toContain("TS6054");
    expect(r.err).toContain(
      'hint: an import uses an absolute path, which AssemblyScript refuses: import the SDK as "@liqo-bun/plugin-sdk"',
    );
    expect(r.code).toBe(1);
  }, 60_000);

  test("no ABI re-export: the host refuses the module and says which line is missing", async () => {
    const r = await withEntry(
      (src) => src.replace(/^export \* from "@liqo-bun\/plugin-sdk\/exports";.*$/m, ""),
      () => liqoctl(project, "build"),
    );
    expect(r.err).toContain("built, but the host refuses it");
    expect(r.err).toContain(
      'hint: the entry file must re-export the ABI: export * from "@liqo-bun/plugin-sdk/exports";',
    );
    expect(r.code).toBe(1);
  }, 60_000);

  test("a transform that forgets the guards fails the conformance kit, naming the rule", async () => {
    const r = await withEntry(
      (src) => src.replace("if (guard != null) return guard;", ""),
      () => liqoctl(project, "test"),
    );
    expect(r.out).toContain(
      "FAIL policy/v1/PodDisruptionBudget forward: a remote object it does not own is left alone (conflict)",
    );
    expect(r.out).toContain(
      'decided apply over an object it does not own (no liqo.io/managed-by=reflection, liqo.io/origin-cluster-id=conformance-local); the answer must be skip with reason "conflict"',
    );
    expect(r.out).toContain(
      "a source annotated liqo.io/skip-reflection answered apply, must be delete (forwardGuards does it)",
    );
    expect(r.out).toContain("4 passed, 3 failed");
    expect(r.err).toContain("conformance check(s) failed");
    expect(r.code).toBe(1);
  }, 60_000);

  test("init refuses an existing folder and a kind providers refuse, writing nothing", async () => {
    const again = await liqoctl(tmp, "init", "pdbs");
    expect(again.err).toContain(
      `${project} exists and is not empty: pass another --dir, or remove it first; nothing was written`,
    );
    expect(again.code).toBe(2);
    const pods = await liqoctl(tmp, "init", "podcopier", "--kind", "v1/Pod");
    expect(pods.err).toContain("--kind v1/Pod: Pod Pods are offloaded through ShadowPods");
    expect(pods.code).toBe(2);
    expect(await Bun.file(join(tmp, "podcopier/package.json")).exists()).toBe(false);
  });
});
