// liqoctl plugin init|build: write a plugin project outside any checkout, and build it.
//   liqoctl plugin init <name> [--kind group/version/Kind] [--dir <folder>]
//   liqoctl plugin build [dir]
// (`liqoctl plugin test [dir]`, in plugin.ts, builds a project and runs the conformance kit.)
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { defineCommand } from "citty";
import { CliError } from "../errors.ts";
import { buildProject } from "../plugin-project/build.ts";
import { checkPluginName, DEFAULT_KIND, parseKind, SDK_VENDOR_DIR, scaffoldFiles } from "../plugin-project/scaffold.ts";
import { sdkFiles, sdkVersion } from "../plugin-project/sdk-source.ts";

export const init = defineCommand({
  meta: {
    name: "init",
    description:
      "Start a reflector plugin project in a new folder: the SDK, a pinned compiler, a sample, a test, a README",
  },
  args: {
    name: {
      type: "positional",
      description: "the plugin's name (a DNS label, e.g. poddisruptionbudgets)",
      required: true,
    },
    kind: {
      type: "string",
      description: `the kind it reflects, group/version/Kind (default ${DEFAULT_KIND}; v1/Kind for the core group)`,
    },
    dir: { type: "string", description: "the folder to create (default: ./<name>); it must not exist or be empty" },
  },
  async run({ args }) {
    checkPluginName(args.name);
    const kind = parseKind(args.kind ?? DEFAULT_KIND);
    const dir = resolve(args.dir ?? args.name);
    if (existsSync(dir) && readdirSync(dir).length > 0) {
      throw new CliError(`${dir} exists and is not empty: pass another --dir, or remove it first; nothing was written`);
    }
    const sdk = await sdkFiles();
    const files = scaffoldFiles({ name: args.name, ...kind, sdkVersion: sdkVersion(sdk) });
    for (const [path, content] of sdk) await write(join(dir, SDK_VENDOR_DIR, path), content);
    for (const [path, content] of Object.entries(files)) await write(join(dir, path), content);
    const shown = relative(process.cwd(), dir) || ".";
    console.log(`Created ${shown}: plugin ${args.name} for ${kind.group ? `${kind.group}/` : ""}${kind.version} ${kind.kind}, SDK ${sdkVersion(sdk)} in ${SDK_VENDOR_DIR}.
Next:
  cd ${shown}
  bun install          # assemblyscript from npm, the SDK from ${SDK_VENDOR_DIR}
  bun run test         # build, then the conformance kit and the sample's tests
  liqoctl plugin install build/${args.name}.wasm   # into the cluster that offloads namespaces`);
  },
});

async function write(path: string, content: string): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  await Bun.write(path, content);
}

export const build = defineCommand({
  meta: {
    name: "build",
    description:
      "Build a plugin project (liqoctl plugin init) with its compiler and the SDK's settings, then check the module",
  },
  args: {
    dir: { type: "positional", description: "the project's folder (default: .)", required: false },
  },
  async run({ args }) {
    const built = await buildProject(args.dir ?? ".");
    const kinds = built.manifest.resources.map((r) => `${r.kind} (${r.direction})`).join(", ");
    console.log(
      `built ${relative(process.cwd(), built.wasm)} (${built.bytes.length} bytes): ${built.manifest.name} ${built.manifest.version}, reflects ${kinds}`,
    );
  },
});
