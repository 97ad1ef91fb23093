// The import boundaries a newcomer relies on, kept by a scan of import specifiers (static, dynamic
// and re-exports): core/** never imports the CLI (cli/**), and core/peering and netfabric do not
// reach each other in a circle. Peering uses the network fabric (NetworkConfig roles, the
// translation watcher); the fabric never reaches up into peering (in-band peering's steps, which
// need tokens and ForeignClusters, live in core/peering/inband). Shared pieces live in the lowest
// layer that needs them (events and quantities in core/kube, labels in core/apis and
// netfabric/shared), and the folders of core and netfabric, and the files of cli, import each
// other without a circle.
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

/** Every import from a production file `from` accepts to a file `to` accepts, as "a -> b". */
function edges(from: (f: string) => boolean, to: (f: string) => boolean): string[] {
  return [...graph].flatMap(([f, deps]) =>
    from(f) && !f.endsWith(".test.ts")
      ? deps.filter((d) => to(d) && !d.endsWith(".test.ts")).map((d) => `${f} -> ${d}`)
      : [],
  );
}

const under =
  (...prefixes: string[]) =>
  (f: string) =>
    prefixes.some((p) => f.startsWith(p));

/** A circle of imports between the groups `groupOf` puts files in (undefined: left out), as "a -> b -> a". */
function circle(groupOf: (f: string) => string | undefined): string | undefined {
  const next = new Map<string, Set<string>>();
  for (const e of edges(
    (f) => groupOf(f) !== undefined,
    (f) => groupOf(f) !== undefined,
  )) {
    const [a, b] = e.split(" -> ").map((f) => groupOf(f)!) as [string, string];
    if (a === b) continue;
    if (!next.has(a)) next.set(a, new Set());
    next.get(a)!.add(b);
  }
  const done = new Set<string>();
  const visit = (g: string, path: string[]): string | undefined => {
    const at = path.indexOf(g);
    if (at >= 0) return [...path.slice(at), g].join(" -> ");
    if (done.has(g)) return undefined;
    for (const n of next.get(g) ?? []) {
      const found = visit(n, [...path, g]);
      if (found) return found;
    }
    done.add(g);
    return undefined;
  };
  for (const g of next.keys()) {
    const found = visit(g, []);
    if (found) return found;
  }
  return undefined;
}

/** The folder right below `top` a file is in (files directly in `top` are left out). */
const folderBelow = (top: string) => (f: string) => {
  const parts = f.split("/");
  return f.startsWith(`${top}/`) && parts.length > 2 ? `${top}/${parts[1]}` : undefined;
};

describe("shared pieces live in the lowest layer that needs them", () => {
  test("core/kube (events, quantities, label selectors) imports nothing above it but the logger", () => {
    expect(edges(under("core/kube/"), (d) => !d.startsWith("core/kube/") && d !== "core/log.ts")).toEqual([]);
  });

  test("the event recorder is core/kube's: nothing imports one from the reflection engine", () => {
    expect(edges(() => true, under("core/reflection/engine/events"))).toEqual([]);
    expect(edges(under("netfabric/"), under("core/reflection/engine/"))).toEqual([]);
  });

  test("core/virtualkubelet and core/storage do not import core/peering (quantities are core/kube's)", () => {
    expect(edges(under("core/virtualkubelet/", "core/storage/"), under("core/peering/"))).toEqual([]);
  });

  test("core/virtualkubelet imports neither the ShadowPod controller nor the webhook (their constants are core/apis')", () => {
    expect(edges(under("core/virtualkubelet/"), under("core/shadowpod/", "core/webhook/"))).toEqual([]);
  });

  test("the folders of core import each other without a circle", () => {
    expect(circle(folderBelow("core"))).toBeUndefined();
  });

  test("the folders of netfabric import each other without a circle (the loop and labels are netfabric/shared's)", () => {
    expect(circle(folderBelow("netfabric"))).toBeUndefined();
  });

  test("a role's module imports no other role's (what two roles share is in shared.ts and the *-flags.ts files)", () => {
    const roleFile = (f: string) =>
      f.startsWith("core/roles/") &&
      !/\/(shared|[a-z-]+-flags|admin-views[a-z-]*)\.ts$/.test(f) &&
      !f.endsWith(".test.ts");
    const across = [...graph].flatMap(([f, deps]) =>
      roleFile(f) ? deps.filter((d) => roleFile(d) && d !== f).map((d) => `${f} -> ${d}`) : [],
    );
    expect(across).toEqual([]);
  });

  test("no file of cli imports itself through others (what peer and peer in-band share is in cli/peering.ts)", () => {
    expect(circle((f) => (f.startsWith("cli/") ? f : undefined))).toBeUndefined();
  });
});

/** Specifiers of @kubernetes/client-node a file loads when it is loaded: static value imports (not `import type`) and re-exports. */
function eagerClientNode(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(
    /^\s*(import|export)\s+(type\s+)?[^;]*?\bfrom\s*["'](@kubernetes\/client-node[^"']*)["']/gm,
  )) {
    if (!m[2]) out.push(m[3]!);
  }
  for (const m of text.matchAll(/^\s*import\s*["'](@kubernetes\/client-node[^"']*)["']/gm)) out.push(m[1]!);
  return out;
}

describe("@kubernetes/client-node stays light", () => {
  test("the scan sees a value import and leaves a type import out", () => {
    expect(
      eagerClientNode(
        `import type { KubeConfig } from "@kubernetes/client-node";\nimport {\n  KubeConfig,\n} from "@kubernetes/client-node";\nimport "@kubernetes/client-node/dist/gen/index.js";`,
      ),
    ).toEqual(["@kubernetes/client-node", "@kubernetes/client-node/dist/gen/index.js"]);
  });

  test("no product file loads its KubeConfig module (every generated API class, ~30 MiB per process): only config_types", () => {
    const eager = sources()
      .filter((f) => !f.endsWith(".test.ts"))
      .flatMap((f) =>
        eagerClientNode(readFileSync(join(root, f), "utf8"))
          .filter((spec) => spec !== "@kubernetes/client-node/dist/config_types.js")
          .map((spec) => `${f} -> ${spec}`),
      );
    expect(eager).toEqual([]);
  });
});
