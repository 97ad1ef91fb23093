// The plugin SDK as liqoctl hands it to a project (`liqoctl plugin init` writes it into
// vendor/plugin-sdk): the package's AssemblyScript sources and build settings, plus its testing
// module bundled with the plugin host (testing.js, and the drop-in worker as worker.ts, next to
// it, where the host's `new URL("./worker.ts", import.meta.url)` looks), so a project needs only
// Bun and npm's assemblyscript. In a checkout the files are packed from plugins/sdk on demand;
// scripts/build-liqoctl.ts swaps this module for one returning the files packed at build time.
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "../..");
const sdkDir = join(root, "plugins/sdk");

/** The package's files: path inside the package → content. */
export type SdkFiles = Map<string, string>;

export async function sdkFiles(): Promise<SdkFiles> {
  const files: SdkFiles = new Map();
  const copied = ["index.ts", "exports.ts", "asconfig.json", "README.md"];
  for (const f of new Bun.Glob("assembly/**/*").scanSync({ cwd: sdkDir }))
    if (!f.endsWith("tsconfig.json")) copied.push(f);
  for (const f of copied.sort()) files.set(f, await Bun.file(join(sdkDir, f)).text());
  const pkg = await Bun.file(join(sdkDir, "package.json")).json();
  pkg.files = [...pkg.files.filter((f: string) => f !== "testing.ts"), "testing.js", "worker.ts"];
  files.set("package.json", `${JSON.stringify(pkg, null, 2)}\n`);
  files.set("testing.js", await bundle(join(sdkDir, "testing.ts"), ["bun:test"]));
  files.set("worker.ts", await bundle(join(root, "core/reflection/worker.ts"), []));
  return files;
}

async function bundle(entry: string, external: string[]): Promise<string> {
  const out = await Bun.build({ entrypoints: [entry], target: "bun", format: "esm", external });
  if (!out.success || !out.outputs[0]) throw new Error(`bundling ${entry} failed:\n${out.logs.map(String).join("\n")}`);
  return `// Bundled by liqoctl from liqo on Bun's plugin host; do not edit.\n${await out.outputs[0].text()}`;
}

export function sdkVersion(files: SdkFiles): string {
  return JSON.parse(files.get("package.json") ?? "{}").version ?? "unknown";
}
