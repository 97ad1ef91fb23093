// Compiles liqoctl into single-file executables: `bun run build:liqoctl [target...]`
//   targets: linux-x64 linux-arm64 darwin-x64 darwin-arm64 (default: all), written to dist/liqoctl-<target>;
//   dist/kubectl-liqo is the host's binary under the name kubectl looks for on PATH.
// The built-in reflectors' .wasm files are embedded: reflectors/build.ts (which compiles them from
// AssemblyScript at run time in a checkout) is swapped at bundle time for a module that returns
// the embedded files, so `liqoctl plugin test pods` works from the binary alone. The Helm chart is
// embedded the same way (cli/install/chart-source.ts), so `liqoctl install` needs no checkout, and
// so is the plugin SDK `liqoctl plugin init` writes into a project (cli/plugin-project/sdk-source.ts).
// The version and the source commit `liqoctl version` prints are compiled in (--define of
// LIQO_BUILD_VERSION and LIQO_BUILD_COMMIT, read by cli/version.ts): by default package.json's version
// and the checkout's commit, "-dirty" when tracked files differ from it; the release passes its own.
import { copyFileSync, existsSync, linkSync, mkdirSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { BunPlugin } from "bun";
import { sdkFiles } from "../cli/plugin-project/sdk-source.ts";
import type { BuildInfo } from "../cli/version.ts";
import { builtinNames, ensureBuilt, wasmPath } from "../reflectors/build.ts";

const root = resolve(import.meta.dir, "..");
export const allTargets = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64"] as const;
export type Target = (typeof allTargets)[number];

export function hostTarget(): Target {
  return `${process.platform}-${process.arch}` as Target;
}

const embedBuiltins: BunPlugin = {
  name: "embed-builtin-reflectors",
  setup(build) {
    build.onLoad({ filter: /[\\/]reflectors[\\/]build\.ts$/ }, () => {
      const imports = builtinNames.map(
        (n, i) => `import w${i} from ${JSON.stringify(wasmPath(n))} with { type: "file" };`,
      );
      const contents = `${imports.join("\n")}
export const builtinNames = ${JSON.stringify(builtinNames)};
const embedded = { ${builtinNames.map((n, i) => `${JSON.stringify(n)}: w${i}`).join(", ")} };
export async function ensureBuilt() { return []; }
export function wasmPath(name) {
  const p = embedded[name];
  if (!p) throw new Error("no built-in reflector named " + name + " in this binary; known: " + builtinNames.join(", "));
  return p;
}
`;
      return { loader: "js", contents };
    });
  },
};

/** The chart's files, embedded; at run time they are written to a temporary directory for helm. */
const embedChart: BunPlugin = {
  name: "embed-chart",
  setup(build) {
    build.onLoad({ filter: /[\\/]cli[\\/]install[\\/]chart-source\.ts$/ }, () => {
      const files = [...new Bun.Glob("**/*").scanSync({ cwd: join(root, "chart"), dot: true })]
        .filter((f) => !f.endsWith(".test.ts"))
        .sort();
      const imports = files.map(
        (f, i) => `import f${i} from ${JSON.stringify(join(root, "chart", f))} with { type: "file" };`,
      );
      const contents = `${imports.join("\n")}
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
const files = [${files.map((f, i) => `[${JSON.stringify(f)}, f${i}]`).join(", ")}];
export async function bundledChart() {
  const dir = join(mkdtempSync(join(tmpdir(), "liqoctl-chart-")), "liqo");
  for (const [rel, embedded] of files) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    await Bun.write(join(dir, rel), Bun.file(embedded));
  }
  return { dir, embedded: true, cleanup() { rmSync(dirname(dir), { recursive: true, force: true }); } };
}
`;
      return { loader: "js", contents };
    });
  },
};

/**
 * The plugin SDK `liqoctl plugin init` vendors into a project (cli/plugin-project/sdk-source.ts),
 * packed from plugins/sdk before the build (packing bundles its testing module: a Bun.build inside
 * this build's onLoad would never finish) and embedded as text.
 */
function embedPluginSdk(files: [string, string][]): BunPlugin {
  return {
    name: "embed-plugin-sdk",
    setup(build) {
      build.onLoad({ filter: /[\\/]cli[\\/]plugin-project[\\/]sdk-source\.ts$/ }, () => {
        const contents = `const files = ${JSON.stringify(files)};
export async function sdkFiles() { return new Map(files); }
export function sdkVersion(f) { return JSON.parse(f.get("package.json") ?? "{}").version ?? "unknown"; }
`;
        return { loader: "js", contents };
      });
    },
  };
}

async function git(args: string[]): Promise<string | undefined> {
  const p = Bun.spawn(["git", ...args], { cwd: root, stdout: "pipe", stderr: "ignore" });
  const out = await new Response(p.stdout).text();
  return (await p.exited) === 0 ? out.trim() : undefined;
}

/**
 * The commit the checkout is at, "-dirty" when tracked files have uncommitted changes (the build
 * then holds more than the commit), or "unknown" outside a git checkout.
 */
export async function sourceCommit(): Promise<string> {
  const head = await git(["rev-parse", "HEAD"]);
  if (!head) return "unknown";
  const changes = await git(["status", "--porcelain", "--untracked-files=no"]);
  return changes ? `${head}-dirty` : head;
}

/** What a build reports as its version and commit unless told otherwise. */
export async function defaultBuildInfo(): Promise<BuildInfo> {
  const pkg = JSON.parse(await Bun.file(join(root, "package.json")).text()) as { version: string };
  return { version: pkg.version, commit: await sourceCommit() };
}

export async function buildLiqoctl(
  target: Target,
  outDir = join(root, "dist"),
  o: { info?: BuildInfo; name?: string } = {},
): Promise<string> {
  const outfile = join(outDir, o.name ?? `liqoctl-${target}`);
  const info = o.info ?? (await defaultBuildInfo());
  const result = await Bun.build({
    // Drop-in plugins run in a Worker (core/reflection/worker.ts): a compiled program must carry
    // the worker as a second entry point, flattened to the root of the embedded file system where
    // worker-runner.ts's new URL("./worker.ts", import.meta.url) points in a compiled program.
    entrypoints: [join(root, "cli/main.ts"), join(root, "core/reflection/worker.ts")],
    naming: { entry: "[name].[ext]" },
    // Code splitting keeps each lazily imported command (and client-node's KubeConfig, loaded only
    // for an auth-provider user) in its own chunk, parsed only when used: without it `version
    // --client` parses the whole bundle.
    splitting: true,
    bytecode: true,
    format: "esm",
    compile: { target: `bun-${target}` as never, outfile },
    minify: true,
    sourcemap: "none",
    define: { LIQO_BUILD_VERSION: JSON.stringify(info.version), LIQO_BUILD_COMMIT: JSON.stringify(info.commit) },
    plugins: [embedBuiltins, embedChart, embedPluginSdk([...(await sdkFiles()).entries()])],
  });
  if (!result.success) throw new Error(`building liqoctl for ${target} failed:\n${result.logs.map(String).join("\n")}`);
  return outfile;
}

/** kubectl-liqo: a hard link (same inode, no extra space) or a copy where links are not possible. */
export function linkKubectlPlugin(binary: string, outDir = join(root, "dist")): string {
  const plugin = join(outDir, "kubectl-liqo");
  rmSync(plugin, { force: true });
  try {
    linkSync(binary, plugin);
  } catch {
    copyFileSync(binary, plugin);
  }
  return plugin;
}

if (import.meta.main) {
  const wanted = process.argv.slice(2);
  const bad = wanted.filter((t) => !(allTargets as readonly string[]).includes(t));
  if (bad.length) {
    console.error(`unknown target(s) ${bad.join(", ")}; use any of ${allTargets.join(", ")}`);
    process.exit(2);
  }
  const targets = (wanted.length ? wanted : allTargets) as Target[];
  await ensureBuilt([...builtinNames]);
  mkdirSync(join(root, "dist"), { recursive: true });
  const failed: string[] = [];
  const info = await defaultBuildInfo();
  for (const t of targets) {
    try {
      const out = await buildLiqoctl(t, undefined, { info });
      console.log(`${out} (${(statSync(out).size / 1e6).toFixed(1)} MB)`);
    } catch (err) {
      // Cross targets need Bun to fetch that platform's runtime; report and build the rest.
      failed.push(t);
      const detail = (err as AggregateError).errors?.map(String).join("\n") ?? "";
      console.error(`${t}: ${(err as Error).message}${detail ? `\n${detail}` : ""}`);
    }
  }
  const host = join(root, "dist", `liqoctl-${hostTarget()}`);
  if (existsSync(host)) console.log(linkKubectlPlugin(host));
  if (failed.length) process.exit(1);
}
