// liqoctl plugin: try reflector plugins without a cluster (test, validate), and install, list and
// remove them in a cluster (plugin-store.ts).
//   liqoctl plugin test <file.wasm|builtin> --input obj.json [--remote obj.json] [--context ctx.json]
//                       [--cache objs.yaml] [--direction forward|backward] [--output yaml|json]
//   liqoctl plugin validate <file.wasm>
import { defineCommand } from "citty";
import { CliError, ExitCode } from "../errors.ts";
import type { CacheLookup, KubeObject, ReflectionContext } from "../../core/reflection/abi.ts";
import { PluginError } from "../../core/reflection/errors.ts";
import { loadPlugin } from "../../core/reflection/host.ts";
import { validatePlugin } from "../../core/reflection/validate.ts";
import { builtinNames, builtinWasm, isBuiltinName } from "../../reflectors/index.ts";

async function readObject(path: string, flag: string): Promise<unknown> {
  const file = Bun.file(path);
  if (!(await file.exists())) throw new CliError(`--${flag} ${path}: no such file; pass a JSON or YAML file (e.g. from kubectl get -o yaml)`);
  const text = await file.text();
  try {
    return text.trimStart().startsWith("{") || text.trimStart().startsWith("[") ? JSON.parse(text) : Bun.YAML.parse(text);
  } catch (err) {
    throw new CliError(`--${flag} ${path}: not valid JSON or YAML: ${(err as Error).message}`);
  }
}

async function readKubeObject(path: string, flag: string): Promise<KubeObject> {
  const obj = (await readObject(path, flag)) as KubeObject;
  if (!obj || typeof obj !== "object" || typeof obj.kind !== "string" || typeof obj.metadata?.name !== "string") {
    throw new CliError(`--${flag} ${path}: expected one Kubernetes object with apiVersion, kind and metadata.name`);
  }
  return obj;
}

async function pluginBytes(ref: string): Promise<{ bytes: Uint8Array; builtin: boolean }> {
  if (isBuiltinName(ref)) return { bytes: await builtinWasm(ref), builtin: true };
  const file = Bun.file(ref);
  if (!(await file.exists())) {
    throw new CliError(`${ref}: not a built-in reflector (${builtinNames.join(", ")}) and no such .wasm file`);
  }
  return { bytes: await file.bytes(), builtin: false };
}

/** A read-only cache built from a file of objects (a list, a v1 List, or a YAML stream of one). */
function cacheFrom(objects: unknown): CacheLookup {
  const list = (Array.isArray(objects) ? objects : (objects as { items?: unknown[] })?.items ?? [objects]) as KubeObject[];
  return (req) => list.find((o) => o.kind === req.kind && o.apiVersion === req.apiVersion && o.metadata?.name === req.name
    && (o.metadata?.namespace ?? "") === req.namespace) ?? null;
}

const print = (value: unknown, output: string) =>
  console.log(output === "json" ? JSON.stringify(value, null, 2) : Bun.YAML.stringify(value, null, 2).trimEnd());

const test = defineCommand({
  meta: { name: "test", description: "Show what a reflector plugin would do with an object (no cluster needed)" },
  args: {
    plugin: { type: "positional", description: `a .wasm file or a built-in reflector (${builtinNames.join(", ")})`, required: true },
    input: { type: "string", description: "the source object: local for forward, remote for backward (JSON or YAML)", required: true },
    remote: { type: "string", description: "the current target object, if any (the remote copy for forward, the local object for backward)" },
    context: { type: "string", description: "reflection context (JSON or YAML): localClusterId, remoteClusterId, localNamespace, remoteNamespace, ..." },
    cache: { type: "string", description: "objects the plugin may look up (JSON or YAML list)" },
    direction: { type: "string", description: "forward (default) or backward" },
    output: { type: "string", alias: "o", description: "yaml (default) or json" },
  },
  async run({ args }) {
    const direction = args.direction ?? "forward";
    if (direction !== "forward" && direction !== "backward") throw new CliError(`--direction ${direction}: use forward or backward`);
    const output = args.output ?? "yaml";
    if (output !== "yaml" && output !== "json") throw new CliError(`--output ${output}: use yaml or json`);
    const input = await readKubeObject(args.input, "input");
    const target = args.remote ? await readKubeObject(args.remote, "remote") : null;
    const ns = input.metadata?.namespace ?? "default";
    const ctx: ReflectionContext = {
      localClusterId: "local-cluster", remoteClusterId: "remote-cluster", localNamespace: ns, remoteNamespace: `${ns}-remote`,
      ...((args.context ? await readObject(args.context, "context") : {}) as Partial<ReflectionContext>),
    };
    const { bytes, builtin } = await pluginBytes(args.plugin);
    const logs: string[] = [];
    let plugin;
    try {
      plugin = await loadPlugin(bytes, {
        trust: builtin ? "builtin" : "dropin",
        label: args.plugin,
        lookup: args.cache ? cacheFrom(await readObject(args.cache, "cache")) : undefined,
        logger: { debug: (m) => logs.push(m), info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m), child() { return this; } },
      });
    } catch (err) {
      if (err instanceof PluginError) throw new CliError(err.message, ExitCode.Failure);
      throw err;
    }
    try {
      const decision = direction === "forward" ? await plugin.forward(input, target, ctx) : await plugin.backward(input, target, ctx);
      print(decision, output);
    } catch (err) {
      if (err instanceof PluginError) throw new CliError(`${err.message}${plugin.state === "quarantined" ? " (the engine would quarantine this plugin)" : ""}`, ExitCode.Failure);
      throw err;
    } finally {
      await plugin.close();
    }
  },
});

const validate = defineCommand({
  meta: { name: "validate", description: "Check a drop-in .wasm the way the engine does before loading it" },
  args: {
    plugin: { type: "positional", description: "the .wasm file", required: true },
  },
  async run({ args }) {
    const { bytes } = await pluginBytes(args.plugin);
    const v = await validatePlugin(bytes, { label: args.plugin });
    if (!v.ok) throw new CliError(`${args.plugin} is not a valid reflector plugin:\n  ${v.problems.join("\n  ")}`, ExitCode.Failure);
    const kinds = v.manifest.resources.map((r) => `${r.kind} (${r.direction})`).join(", ");
    console.log(`${args.plugin}: ${v.manifest.name} ${v.manifest.version}, ABI v${v.manifest.abiVersion}, reflects ${kinds}`);
  },
});

export default defineCommand({
  meta: { name: "plugin", description: "Work with reflector plugins (WebAssembly)" },
  subCommands: {
    test, validate,
    // In the cluster (plugin-store.ts), loaded only when used: they need a Kubernetes client.
    install: () => import("./plugin-store.ts").then((m) => m.storeCommands.install),
    list: () => import("./plugin-store.ts").then((m) => m.storeCommands.list),
    remove: () => import("./plugin-store.ts").then((m) => m.storeCommands.remove),
  },
});
