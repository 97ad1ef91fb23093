// liqoctl plugin: write, build and try reflector plugins without a cluster (init and build in
// plugin-project.ts; test, validate here), and install, list and remove them in a cluster
// (plugin-store.ts).
//   liqoctl plugin test [dir|file.wasm|builtin]   the conformance kit (a project is built first)
//   liqoctl plugin test [dir|file.wasm|builtin] --input obj.yaml [--remote obj.yaml] [--deleted]
//                       [--context ctx.yaml] [--cache objs.yaml] [--direction forward|backward] [--output yaml|json]
//   liqoctl plugin validate <file.wasm>
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { defineCommand } from "citty";
import {
  type CacheLookup,
  type KubeObject,
  LABEL_MANAGED_BY,
  LABEL_ORIGIN,
  MANAGED_BY_REFLECTION,
  type ReflectionContext,
} from "../../core/reflection/abi.ts";
import { PluginError } from "../../core/reflection/errors.ts";
import { loadPlugin, type ReflectorPlugin } from "../../core/reflection/host.ts";
import { validatePlugin } from "../../core/reflection/validate.ts";
import { type ConformanceOptions, runConformance } from "../../plugins/conformance-suite.ts";
import { builtinNames, builtinWasm, isBuiltinName } from "../../reflectors/index.ts";
import { CliError, ExitCode } from "../errors.ts";
import { buildProject } from "../plugin-project/build.ts";

async function readObject(path: string, flag: string): Promise<unknown> {
  const file = Bun.file(path);
  if (!(await file.exists()))
    throw new CliError(`--${flag} ${path}: no such file; pass a JSON or YAML file (e.g. from kubectl get -o yaml)`);
  const text = await file.text();
  try {
    return text.trimStart().startsWith("{") || text.trimStart().startsWith("[")
      ? JSON.parse(text)
      : Bun.YAML.parse(text);
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
  const list = (
    Array.isArray(objects) ? objects : ((objects as { items?: unknown[] })?.items ?? [objects])
  ) as KubeObject[];
  return (req) =>
    list.find(
      (o) =>
        o.kind === req.kind &&
        o.apiVersion === req.apiVersion &&
        o.metadata?.name === req.name &&
        (o.metadata?.namespace ?? "") === req.namespace,
    ) ?? null;
}

const print = (value: unknown, output: string) =>
  console.log(output === "json" ? JSON.stringify(value, null, 2) : Bun.YAML.stringify(value, null, 2).trimEnd());

/** The objects in a project's samples/ folder (YAML or JSON, one object or a list per file). */
async function projectSamples(dir: string): Promise<KubeObject[]> {
  const folder = join(dir, "samples");
  if (!existsSync(folder)) return [];
  const out: KubeObject[] = [];
  for (const f of readdirSync(folder)
    .filter((f) => /\.(ya?ml|json)$/.test(f))
    .sort()) {
    const parsed = await readObject(join(folder, f), "samples");
    for (const o of (Array.isArray(parsed) ? parsed : [parsed]) as KubeObject[]) {
      if (typeof o?.kind !== "string" || typeof o.metadata?.name !== "string")
        throw new CliError(`${join(folder, f)}: expected Kubernetes objects with apiVersion, kind and metadata.name`);
      out.push(o);
    }
  }
  return out;
}

const owned = (obj: KubeObject, origin: string, namespace: string): KubeObject => ({
  ...obj,
  metadata: {
    name: obj.metadata?.name,
    namespace,
    labels: { ...obj.metadata?.labels, [LABEL_MANAGED_BY]: MANAGED_BY_REFLECTION, [LABEL_ORIGIN]: origin },
  },
});

const test = defineCommand({
  meta: {
    name: "test",
    description:
      "Run the conformance kit on a plugin project (rebuilt if its sources changed) or a .wasm, or show what it does with one object (--input); no cluster needed",
  },
  args: {
    plugin: {
      type: "positional",
      description: `a plugin project's folder (default: .), a .wasm file or a built-in reflector (${builtinNames.join(", ")})`,
      required: false,
    },
    input: {
      type: "string",
      description:
        "the source object: local for forward, remote for backward (JSON or YAML); without it, the conformance kit runs",
    },
    remote: {
      type: "string",
      description: "the current target object, if any (the remote copy for forward, the local object for backward)",
    },
    deleted: {
      type: "boolean",
      description:
        "simulate the source's deletion: the target is --remote, or else the copy the plugin makes of --input",
    },
    context: {
      type: "string",
      description:
        "reflection context (JSON or YAML): localClusterId, remoteClusterId, localNamespace, remoteNamespace, ...",
    },
    cache: { type: "string", description: "objects the plugin may look up (JSON or YAML list)" },
    direction: { type: "string", description: "forward (default) or backward" },
    output: { type: "string", alias: "o", description: "yaml (default) or json" },
  },
  async run({ args }) {
    const direction = args.direction ?? "forward";
    if (direction !== "forward" && direction !== "backward")
      throw new CliError(`--direction ${direction}: use forward or backward`);
    const output = args.output ?? "yaml";
    if (output !== "yaml" && output !== "json") throw new CliError(`--output ${output}: use yaml or json`);
    if (!args.input && (args.deleted || args.remote)) {
      throw new CliError(
        `--${args.deleted ? "deleted" : "remote"} needs --input: the object whose ${args.deleted ? "deletion" : "target"} to simulate`,
      );
    }
    const ref = args.plugin ?? ".";
    const isProject = existsSync(ref) && statSync(ref).isDirectory();
    const { bytes, builtin } = isProject
      ? { bytes: (await buildProject(ref, { ifStale: true })).bytes, builtin: false }
      : await pluginBytes(ref);
    const context = (args.context ? await readObject(args.context, "context") : {}) as Partial<ReflectionContext>;
    const lookup = args.cache ? cacheFrom(await readObject(args.cache, "cache")) : undefined;
    if (!args.input)
      return conformance(ref, bytes, builtin, { context, lookup, samples: isProject ? await projectSamples(ref) : [] });

    const input = await readKubeObject(args.input, "input");
    const target = args.remote ? await readKubeObject(args.remote, "remote") : null;
    const ns = input.metadata?.namespace ?? "default";
    const ctx: ReflectionContext = {
      localClusterId: "local-cluster",
      remoteClusterId: "remote-cluster",
      localNamespace: ns,
      remoteNamespace: `${ns}-remote`,
      ...context,
    };
    const logs: string[] = [];
    let plugin: ReflectorPlugin;
    try {
      plugin = await loadPlugin(bytes, {
        trust: builtin ? "builtin" : "dropin",
        label: ref,
        lookup,
        logger: {
          debug: (m) => logs.push(m),
          info: (m) => logs.push(m),
          warn: (m) => logs.push(m),
          error: (m) => logs.push(m),
          child() {
            return this;
          },
        },
      });
    } catch (err) {
      if (err instanceof PluginError) throw new CliError(err.message, ExitCode.Failure);
      throw err;
    }
    const call = (source: KubeObject | null, t: KubeObject | null) =>
      direction === "forward" ? plugin.forward(source, t, ctx) : plugin.backward(source, t, ctx);
    try {
      if (!args.deleted) return print(await call(input, target), output);
      // A deleted source: what the plugin answers for the copy it made (or the --remote given).
      let copy = target;
      if (!copy) {
        const made = await call(input, null);
        const [origin, targetNs] =
          direction === "forward"
            ? [ctx.localClusterId, ctx.remoteNamespace]
            : [ctx.remoteClusterId, ctx.localNamespace];
        copy = made.decision === "apply" ? made.object : owned(input, origin, targetNs);
      }
      print(await call(null, copy), output);
    } catch (err) {
      if (err instanceof PluginError)
        throw new CliError(
          `${err.message}${plugin.state === "quarantined" ? " (the engine would quarantine this plugin)" : ""}`,
          ExitCode.Failure,
        );
      throw err;
    } finally {
      await plugin.close();
    }
  },
});

/** The conformance kit, as the engine runs the plugin (a drop-in in a worker; built-ins on this thread). */
async function conformance(
  ref: string,
  bytes: Uint8Array,
  builtin: boolean,
  options: ConformanceOptions,
): Promise<void> {
  const trust = builtin ? "builtin" : "dropin";
  const { title, results } = await runConformance(bytes, { ...options, trust });
  console.log(
    `${title} (${trust === "dropin" ? "drop-in, in a worker" : "built-in"}${options.samples?.length ? `, ${options.samples.length} sample(s)` : ""})`,
  );
  for (const r of results)
    console.log(
      `  ${r.ok ? "ok  " : "FAIL"} ${r.name}${r.error ? `\n         ${r.error.replaceAll("\n", "\n         ")}` : ""}`,
    );
  const failed = results.filter((r) => !r.ok).length;
  console.log(`${results.length - failed} passed, ${failed} failed`);
  if (failed) throw new CliError(`${ref}: ${failed} conformance check(s) failed`, ExitCode.Failure);
}

const validate = defineCommand({
  meta: { name: "validate", description: "Check a drop-in .wasm the way the engine does before loading it" },
  args: {
    plugin: { type: "positional", description: "the .wasm file", required: true },
  },
  async run({ args }) {
    const { bytes } = await pluginBytes(args.plugin);
    const v = await validatePlugin(bytes, { label: args.plugin });
    if (!v.ok)
      throw new CliError(
        `${args.plugin} is not a valid reflector plugin:\n  ${v.problems.join("\n  ")}`,
        ExitCode.Failure,
      );
    const kinds = v.manifest.resources.map((r) => `${r.kind} (${r.direction})`).join(", ");
    console.log(
      `${args.plugin}: ${v.manifest.name} ${v.manifest.version}, ABI v${v.manifest.abiVersion}, reflects ${kinds}`,
    );
  },
});

export default defineCommand({
  meta: { name: "plugin", description: "Write, build, test and install reflector plugins (WebAssembly)" },
  subCommands: {
    init: () => import("./plugin-project.ts").then((m) => m.init),
    build: () => import("./plugin-project.ts").then((m) => m.build),
    test,
    validate,
    // In the cluster (plugin-store.ts), loaded only when used: they need a Kubernetes client.
    install: () => import("./plugin-store.ts").then((m) => m.storeCommands.install),
    list: () => import("./plugin-store.ts").then((m) => m.storeCommands.list),
    remove: () => import("./plugin-store.ts").then((m) => m.storeCommands.remove),
    allow: () => import("./plugin-allow.ts").then((m) => m.allow),
    disallow: () => import("./plugin-allow.ts").then((m) => m.disallow),
  },
});
