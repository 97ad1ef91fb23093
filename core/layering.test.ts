// The import boundaries a newcomer relies on, kept by a scan of import specifiers (static, dynamic
// and re-exports): core/** never imports the CLI (cli/**), and core/peering and netfabric do not
// reach each other in a circle. Peering uses the network fabric (NetworkConfig roles, the
// translation watcher); the fabric never reaches up into peering (in-band peering's steps, which
// need tokens and ForeignClusters, live in core/peering/inband).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;

function sources(): string[] {
  const glob = new Bun.Glob("{core,cli,netfabric,reflectors,plugins}/**/*.ts");
  return [...glob.scanSync({ cwd: root })].filter((f) => !f.includes("node_modules") && !f.endsWith(".d.ts"));
}

/** Repository-relative paths a file imports (package imports are left out). */
function localImports(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[1]!;
    if (spec.startsWith(".")) out.push(relative(root, join(root, dirname(file), spec)));
  }
  return out;
}

const graph = new Map(sources().map((f) => [f, localImports(f, readFileSync(join(root, f), "utf8"))]));

/** The import path from one of `start` to a file `target` accepts, if any (test files are left out: they wire anything). */
function reaches(start: string[], target: (f: string) => boolean): string[] | undefined {
  const seen = new Set<string>();
  const parent = new Map<string, string>();
  const queue = [...start];
  for (const s of start) seen.add(s);
  while (queue.length) {
    const f = queue.shift()!;
    if (target(f)) {
      const path = [f];
      for (let p = parent.get(f); p; p = parent.get(p)) path.unshift(p);
      return path;
    }
    for (const next of graph.get(f) ?? []) {
      if (seen.has(next) || next.endsWith(".test.ts")) continue;
      seen.add(next);
      parent.set(next, f);
      queue.push(next);
    }
  }
  return undefined;
}

const production = (prefix: string) => [...graph.keys()].filter((f) => f.startsWith(prefix) && !f.endsWith(".test.ts"));

describe("import boundaries", () => {
  test("the scan sees imports (a broken regex would pass everything)", () => {
    expect(
      localImports(
        "core/roles/x.ts",
        `import { a } from "../cli-errors.ts";\nconst m = await import("../../cli/ui.ts");\nexport { b } from "./b.ts";`,
      ),
    ).toEqual(["core/cli-errors.ts", "cli/ui.ts", "core/roles/b.ts"]);
    expect(graph.get("core/roles/controller-manager.ts")).toContain("core/cli-errors.ts");
  });

  test("core/** imports nothing from cli/**", () => {
    const upward = [...graph].flatMap(([f, deps]) =>
      f.startsWith("core/") ? deps.filter((d) => d.startsWith("cli/")).map((d) => `${f} -> ${d}`) : [],
    );
    expect(upward).toEqual([]);
  });

  test("core/peering and netfabric do not import each other in a circle", () => {
    const down = reaches(production("core/peering/"), (f) => f.startsWith("netfabric/"));
    const up = reaches(production("netfabric/"), (f) => f.startsWith("core/peering/"));
    // Peering may use the fabric; then the fabric must not reach peering, even through another file.
    if (down) expect(up?.join(" -> ")).toBeUndefined();
  });
});
