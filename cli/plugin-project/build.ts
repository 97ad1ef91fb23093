// `liqoctl plugin build [dir]`: compiles a plugin project (what `liqoctl plugin init` writes) with
// the project's own compiler and the SDK's settings, then checks the module the way a cluster
// will. The mistakes authors make are turned into messages naming the fix (explainBuild).
import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import type { Manifest } from "../../core/reflection/abi.ts";
import { MAX_PLUGIN_BYTES } from "../../core/reflection/store/configmap.ts";
import { validatePlugin } from "../../core/reflection/validate.ts";
import { CliError, ExitCode } from "../errors.ts";
import { SDK_PACKAGE } from "./scaffold.ts";

export interface Project {
  dir: string;
  /** The module asconfig.json builds (options.outFile), absolute. */
  wasm: string;
}

export async function readProject(dirArg: string): Promise<Project> {
  const dir = resolve(dirArg);
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new CliError(
      `${dirArg}: no such directory; pass a plugin project's folder (liqoctl plugin init <name> makes one)`,
    );
  const configPath = join(dir, "asconfig.json");
  if (!existsSync(configPath)) {
    throw new CliError(
      `${dirArg} is not a plugin project: it has no asconfig.json. Make one with liqoctl plugin init <name>, or pass the project's folder`,
    );
  }
  let config: { extends?: string; options?: { outFile?: string } };
  try {
    config = JSON.parse(await Bun.file(configPath).text());
  } catch (err) {
    throw new CliError(`${configPath}: not valid JSON (${(err as Error).message})`);
  }
  if (!String(config.extends ?? "").endsWith(`${SDK_PACKAGE}/asconfig.json`)) {
    throw new CliError(
      `${configPath}: "extends" must be "./node_modules/${SDK_PACKAGE}/asconfig.json": the SDK's settings (its runtime, the abort handler, no shadow stack) are what the host expects; add only "entries" and "options.outFile"`,
    );
  }
  const out = config.options?.outFile;
  if (!out?.endsWith(".wasm"))
    throw new CliError(`${configPath}: set "options": { "outFile": "build/<name>.wasm" }, the module to build`);
  return { dir, wasm: join(dir, out) };
}

/** Hints for asc's output: each known mistake once, with its fix. */
export function explainBuild(output: string): string[] {
  const hints: string[] = [];
  if (/~lib\/\//.test(output)) {
    hints.push(
      `an import uses an absolute path, which AssemblyScript refuses: import the SDK as "${SDK_PACKAGE}" (and "${SDK_PACKAGE}/exports"), your own files by a relative path ("./util")`,
    );
  }
  if (/AS111: Element '[^']*abort[^']*' not found/.test(output)) {
    hints.push(
      `a "--use abort=..." names an element that is not there: drop it; the SDK's asconfig.json links its own (abort=liqoSdkAbort)`,
    );
  }
  if (
    new RegExp(`File '~lib/${SDK_PACKAGE}[^']*' not found`).test(output) ||
    /Runtime '[^']*arena\.ts' is not found/.test(output)
  ) {
    hints.push(
      `the SDK is not in node_modules: run "bun install" in the project's folder (package.json lists ${SDK_PACKAGE} as file:./vendor/plugin-sdk)`,
    );
  }
  if (/Duplicate identifier 'liqoSdkAbort'|Duplicate (function|identifier).*plugin-sdk/.test(output)) {
    hints.push(`the SDK is compiled twice: import it only as "${SDK_PACKAGE}", never by a path into its folder`);
  }
  return hints;
}

/** Hints for a module asc built but the host refuses (validatePlugin's problems). */
export function explainModule(problems: string[]): string[] {
  const text = problems.join("\n");
  const hints: string[] = [];
  if (/liqo_abi_version|liqo_manifest|liqo_forward|export/.test(text)) {
    hints.push(`the entry file must re-export the ABI: export * from "${SDK_PACKAGE}/exports";`);
  }
  if (/manifest/i.test(text) && !/export/.test(text)) {
    hints.push(
      "call reflector(MANIFEST, forward) once, at the end of the entry file, with a manifest the host accepts (see docs/plugin-abi.md)",
    );
  }
  return hints;
}

function bunExecutable(): string {
  // Bun on PATH, else the Bun running this (npm installs it as bun.exe); a compiled liqoctl is no Bun.
  const self = /^bun(\.exe)?$/.test(basename(process.execPath)) ? process.execPath : null;
  const bun = Bun.which("bun") ?? self;
  if (!bun) throw new CliError("bun is not on PATH: a plugin project builds and tests with Bun (https://bun.sh)");
  return bun;
}

export interface Built {
  wasm: string;
  bytes: Uint8Array;
  manifest: Manifest;
}

/** The newest modification time under path (a file or a folder). */
function newest(path: string): number {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return readdirSync(path).reduce((max, e) => Math.max(max, newest(join(path, e))), st.mtimeMs);
}

/** Whether the module is older than what it is built from (sources, settings, the installed SDK). */
export function isStale(project: Project): boolean {
  if (!existsSync(project.wasm)) return true;
  const built = statSync(project.wasm).mtimeMs;
  const inputs = ["assembly", "asconfig.json", "package.json", join("node_modules", SDK_PACKAGE)];
  return inputs.some((p) => newest(join(project.dir, p)) > built);
}

/** Builds the project (with ifStale, only when a source is newer than the module), then checks the module. */
export async function buildProject(dirArg: string, options: { ifStale?: boolean } = {}): Promise<Built> {
  const project = await readProject(dirArg);
  if (options.ifStale && !isStale(project)) return checked(project);
  const { dir } = project;
  const asc = join(dir, "node_modules/assemblyscript/bin/asc.js");
  const sdkPkg = join(dir, "node_modules", SDK_PACKAGE, "package.json");
  if (!existsSync(asc) || !existsSync(sdkPkg)) {
    throw new CliError(
      `${dir}: the compiler or the SDK is not installed: run "bun install" there (assemblyscript from npm, ${SDK_PACKAGE} from vendor/plugin-sdk)`,
    );
  }
  const wanted = (await Bun.file(sdkPkg).json()).peerDependencies?.assemblyscript;
  const have = (await Bun.file(join(dir, "node_modules/assemblyscript/package.json")).json()).version;
  if (wanted && have !== wanted) {
    throw new CliError(
      `${dir}: assemblyscript ${have} is installed, the SDK is built and tested with ${wanted}: pin "assemblyscript": "${wanted}" in package.json, then bun install`,
    );
  }
  // Absolute paths: under Bun, asc finds the SDK's transform only from an absolute config folder.
  const proc = Bun.spawn([bunExecutable(), asc, "--config", join(dir, "asconfig.json"), "--baseDir", dir], {
    cwd: dir,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  const output = `${stdout}${stderr}`.trim();
  if (code !== 0) {
    const hints = explainBuild(output);
    throw new CliError(
      `building ${dir} failed:\n${output}${hints.map((h) => `\n\nhint: ${h}`).join("")}`,
      ExitCode.Failure,
    );
  }
  if (!existsSync(project.wasm)) {
    throw new CliError(
      `${dir}: asc succeeded but wrote no ${project.wasm}; check "entries" and "options.outFile" in asconfig.json`,
    );
  }
  return checked(project);
}

/** The module as a cluster would judge it: its size, then validatePlugin (ABI, manifest, imports, trial calls). */
async function checked(project: Project): Promise<Built> {
  const bytes = await Bun.file(project.wasm).bytes();
  if (bytes.length > MAX_PLUGIN_BYTES) {
    throw new CliError(
      `${project.wasm} is ${bytes.length} bytes; a plugin is stored in a ConfigMap, at most ${MAX_PLUGIN_BYTES}: keep "noAssert" and drop "debug" in asconfig.json, or trim the plugin`,
      ExitCode.Failure,
    );
  }
  const v = await validatePlugin(bytes, { label: project.wasm });
  if (!v.ok) {
    const hints = explainModule(v.problems);
    throw new CliError(
      `${project.wasm} built, but the host refuses it:\n  ${v.problems.join("\n  ")}${hints.map((h) => `\nhint: ${h}`).join("")}`,
      ExitCode.Failure,
    );
  }
  return { wasm: project.wasm, bytes, manifest: v.manifest };
}
