// Compiles every built-in reflector, the example plugin and the host's test fixtures from
// AssemblyScript to .wasm next to their sources (`bun run build:wasm`). .wasm files are not
// committed, so setup runs this; tests call ensureBuilt() so a stale checkout rebuilds itself.
// Usage: bun reflectors/build.ts [--force] [name...]
import { existsSync, lstatSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
// What every plugin is built from besides its own sources: the SDK and its build settings.
const sdkSources = ["assembly", "asconfig.json", "index.ts", "exports.ts"].map((f) => join(root, "plugins/sdk", f));

export interface Target {
  name: string;
  entry: string;
  out: string;
  sources: string[];
}

function dirTarget(name: string, dir: string): Target {
  return {
    name,
    entry: join(dir, "assembly/index.ts"),
    out: join(dir, `${name}.wasm`),
    sources: [join(dir, "assembly"), ...sdkSources],
  };
}

/** Built-in reflector names, one folder each under reflectors/. */
export const builtinNames = [
  "pods",
  "services",
  "endpointslices",
  "ingresses",
  "storage",
  "configmaps",
  "secrets",
] as const;
export type BuiltinName = (typeof builtinNames)[number];

export function targets(): Target[] {
  const list = builtinNames.map((n) => dirTarget(n, join(root, "reflectors", n)));
  list.push(dirTarget("networkpolicy", join(root, "plugins/examples/networkpolicy")));
  // Misbehaving plugins the host's quarantine tests load (kept outside core/: not TypeScript).
  const fixtures = join(root, "plugins/sdk/test-plugins");
  for (const f of readdirSync(fixtures).filter((f) => f.endsWith(".ts"))) {
    const name = f.slice(0, -3);
    list.push({
      name: `fixture-${name}`,
      entry: join(fixtures, f),
      out: join(fixtures, `${name}.wasm`),
      sources: [join(fixtures, f), ...sdkSources],
    });
  }
  return list;
}

function newest(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const e of readdirSync(path)) max = Math.max(max, newest(join(path, e)));
  return max;
}

export function isStale(t: Target): boolean {
  if (!existsSync(t.out)) return true;
  const built = statSync(t.out).mtimeMs;
  return t.sources.some((s) => newest(s) > built);
}

/**
 * Every plugin is built with the SDK's own asconfig.json (arena runtime, -O3 --noAssert, the
 * abort that reports through liqo:log, SIMD, no shadow stack: see docs/plugin-abi.md), the same
 * file an author's project extends. Built-ins import the SDK as "@liqo-bun/plugin-sdk" too, from
 * node_modules, where ensureSdkLink puts this checkout's copy (what a workspace would do).
 */
export const ascFlags = ["--config", "plugins/sdk/asconfig.json"];

/** node_modules/@liqo-bun/plugin-sdk → plugins/sdk, made when missing (npm ci removes it). */
export function ensureSdkLink(): void {
  const link = join(root, "node_modules/@liqo-bun/plugin-sdk");
  try {
    if (lstatSync(link).isSymbolicLink() && existsSync(join(link, "package.json"))) return;
    rmSync(link, { recursive: true, force: true });
  } catch {
    // missing: made below
  }
  mkdirSync(dirname(link), { recursive: true });
  symlinkSync("../../plugins/sdk", link);
}

export async function buildTarget(t: Target): Promise<void> {
  ensureSdkLink();
  const asc = await import("assemblyscript/asc");
  const { error, stderr } = await asc.main([t.entry, "-o", t.out, "--baseDir", root, ...ascFlags], {
    stdout: asc.createMemoryStream(),
    stderr: asc.createMemoryStream(),
  });
  if (error) throw new Error(`building ${t.name} (${t.entry}) failed: ${error.message}\n${stderr.toString()}`);
}

/** Builds the named targets (or all) that are older than their sources. */
export async function ensureBuilt(names?: string[], force = false): Promise<Target[]> {
  const all = targets();
  const chosen = names?.length ? all.filter((t) => names.includes(t.name)) : all;
  const unknown = names?.filter((n) => !all.some((t) => t.name === n)) ?? [];
  if (unknown.length)
    throw new Error(`unknown plugin target(s) ${unknown.join(", ")}; known: ${all.map((t) => t.name).join(", ")}`);
  const built: Target[] = [];
  // One at a time: the machine is shared, and asc is CPU-bound.
  for (const t of chosen)
    if (force || isStale(t)) {
      await buildTarget(t);
      built.push(t);
    }
  return built;
}

export function wasmPath(name: string): string {
  const t = targets().find((x) => x.name === name);
  if (!t) throw new Error(`no plugin target named ${name}`);
  return t.out;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const force = args.includes("--force");
  const started = performance.now();
  const built = await ensureBuilt(
    args.filter((a) => a !== "--force"),
    force,
  );
  for (const t of built) console.log(`built ${t.out.slice(root.length + 1)} (${statSync(t.out).size} bytes)`);
  console.log(`${built.length} plugin(s) built in ${Math.round(performance.now() - started)} ms; others up to date`);
}
