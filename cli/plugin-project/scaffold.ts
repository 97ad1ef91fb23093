// What `liqoctl plugin init` writes: a plugin project (AssemblyScript source, the SDK's build
// settings, a sample object, a test with the conformance kit in drop-in mode, a README), as pure
// functions of the plugin's name and kind so they are tested without a file system.
import { DENIED } from "../../core/peering/auth/plugin-rbac.ts";
import { CliError } from "../errors.ts";

/** The AssemblyScript compiler a project pins: the one the SDK is built and tested with. */
export const ASSEMBLYSCRIPT_VERSION = "0.28.20";
export const SDK_PACKAGE = "@liqo-bun/plugin-sdk";
/** Where a project keeps its copy of the SDK (package.json: "file:./vendor/plugin-sdk"). */
export const SDK_VENDOR_DIR = "vendor/plugin-sdk";

export interface KindRef {
  group: string;
  version: string;
  kind: string;
}

export interface ProjectSpec extends KindRef {
  name: string;
  sdkVersion: string;
}

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const DEFAULT_KIND = "policy/v1/PodDisruptionBudget";

export function checkPluginName(name: string): void {
  if (!DNS_LABEL.test(name)) {
    throw new CliError(
      `plugin name ${JSON.stringify(name)} is not a DNS label: use lowercase letters, digits and '-', at most 63 (e.g. poddisruptionbudgets)`,
    );
  }
}

/** The plural the API server most likely serves for a kind (a guess, for the deny list only). */
function guessPlural(kind: string): string {
  const k = kind.toLowerCase();
  if (k.endsWith("s")) return `${k}es`;
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  return `${k}s`;
}

/** `group/version/Kind`, or `version/Kind` for the core group (`v1/Foo`). */
export function parseKind(text: string): KindRef {
  const parts = text.split("/");
  const fix = "pass --kind group/version/Kind, e.g. policy/v1/PodDisruptionBudget (or v1/Kind for the core group)";
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => p === "")) throw new CliError(`--kind ${text}: ${fix}`);
  const [group, version, kind] = parts.length === 3 ? (parts as [string, string, string]) : ["", parts[0]!, parts[1]!];
  if (group && !/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(group))
    throw new CliError(`--kind ${text}: group ${JSON.stringify(group)} is not a DNS name; ${fix}`);
  if (!/^v[0-9]+((alpha|beta)[0-9]+)?$/.test(version))
    throw new CliError(
      `--kind ${text}: version ${JSON.stringify(version)} is not an API version such as v1 or v1beta1; ${fix}`,
    );
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind))
    throw new CliError(
      `--kind ${text}: kind ${JSON.stringify(kind)} must be CamelCase, as in the object's "kind" field; ${fix}`,
    );
  const denied = DENIED[`${group}/${guessPlural(kind)}`];
  if (denied)
    throw new CliError(`--kind ${text}: ${kind} ${denied}; providers refuse a plugin for it. Choose another kind`);
  return { group, version, kind };
}

export const apiVersionOf = (k: KindRef) => (k.group ? `${k.group}/${k.version}` : k.version);

/** A sample object of the kind; a PodDisruptionBudget gets a realistic spec, other kinds an empty one. */
export function sampleObject(k: KindRef): Record<string, unknown> {
  const spec = k.kind === "PodDisruptionBudget" ? { minAvailable: 1, selector: { matchLabels: { app: "web" } } } : {};
  return {
    apiVersion: apiVersionOf(k),
    kind: k.kind,
    metadata: { name: "example", namespace: "default", labels: { app: "web" } },
    spec,
  };
}

function manifestJson(p: ProjectSpec): string {
  const resource = { group: p.group, version: p.version, kind: p.kind, direction: "forward", fields: ["/spec"] };
  return JSON.stringify({ abiVersion: 1, name: p.name, version: "0.1.0", resources: [resource], hostFunctions: [] });
}

function entrySource(p: ProjectSpec): string {
  return `// ${p.name}: reflects ${apiVersionOf(p)} ${p.kind} objects of an offloaded namespace to the peer.
// A reflector is a pure function: it gets the local object (only the fields the manifest declares)
// and answers what the remote copy must be. The engine does the rest (see the README).
import { reflector, Input, Result, Value, forwardGuards, ptr } from "${SDK_PACKAGE}";
export * from "${SDK_PACKAGE}/exports"; // the ABI v1 exports the host calls: keep this line

// "fields" are the JSON pointers this plugin reads: only they are sent to it. They limit what it
// reads, not what is forwarded: the remote copy starts from the whole local object (its metadata
// trimmed to name, labels and annotations) and your edits change that copy.
const MANIFEST = \`${manifestJson(p)}\`;

function remote${p.kind}(input: Input): Result {
  // A remote object we do not own → skip (conflict); a deleted or skip-annotated source → delete.
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  // The remote copy: the local object as it is, plus a label saying who reflected it. Add your
  // edits here: .set(pointer, value) and .remove(pointer) (JSON pointers; escape "/" in a key
  // with ptr()).
  return Result.apply().set("/metadata/labels/" + ptr("${p.name}.liqo.io/reflected"), Value.str("true"));
}

// Register last: module constants above must be initialised first.
reflector(MANIFEST, remote${p.kind});
`;
}

function testSource(p: ProjectSpec, sampleFile: string): string {
  return `// Run with \`bun run test\` (builds first) or \`liqoctl plugin test\`.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type KubeObject, loadPlugin, type ReflectorPlugin, testReflectorPlugin } from "${SDK_PACKAGE}/testing";

const wasm = await Bun.file(new URL("../build/${p.name}.wasm", import.meta.url)).bytes();
const sample = Bun.YAML.parse(await Bun.file(new URL("../${sampleFile}", import.meta.url)).text()) as KubeObject;
const ctx = { localClusterId: "home", remoteClusterId: "far", localNamespace: "default", remoteNamespace: "default-home" };

// The checks every reflector must pass, run the way a peering runs your plugin: as a drop-in, in a worker.
await testReflectorPlugin(wasm, { samples: [sample], trust: "dropin" });

// Your own table tests: one input, one assertion per field.
let plugin: ReflectorPlugin;
beforeAll(async () => {
  plugin = await loadPlugin(wasm, { trust: "dropin" });
});
afterAll(() => plugin.close());

test("the remote copy keeps the spec, in the remote namespace, labelled", async () => {
  const d = await plugin.forward(sample, null, ctx);
  if (d.decision !== "apply") throw new Error(\`expected apply, got \${d.decision}: \${d.reason}\`);
  expect(d.object.spec).toEqual(sample.spec);
  expect(d.object.metadata?.namespace).toBe("default-home");
  expect(d.object.metadata?.labels?.["${p.name}.liqo.io/reflected"]).toBe("true");
});

test("a deleted local object deletes the remote copy", async () => {
  const applied = await plugin.forward(sample, null, ctx);
  if (applied.decision !== "apply") throw new Error(\`expected apply, got \${applied.decision}\`);
  expect((await plugin.forward(null, applied.object, ctx)).decision).toBe("delete");
});
`;
}

function readme(p: ProjectSpec, sampleFile: string): string {
  const kind = `${apiVersionOf(p)} ${p.kind}`;
  return `# ${p.name}: a liqo on Bun reflector plugin

Reflects ${kind} objects from offloaded namespaces to the peered cluster. Written in
AssemblyScript with the plugin SDK (\`${SDK_PACKAGE}\` ${p.sdkVersion}, in \`${SDK_VENDOR_DIR}\`:
there is no registry of ours, \`liqoctl plugin init\` copies the SDK of its own version there).
The compiler, \`assemblyscript\` ${ASSEMBLYSCRIPT_VERSION}, comes from npm (pinned in \`package.json\`).

\`\`\`sh
bun install                     # assemblyscript from npm, the SDK from ${SDK_VENDOR_DIR}
bun run build                   # → build/${p.name}.wasm   (or: liqoctl plugin build)
bun run test                    # build, then the conformance kit and your tests (or: liqoctl plugin test)
liqoctl plugin test . --input ${sampleFile}             # what the plugin answers for one object
liqoctl plugin test . --input ${sampleFile} --deleted   # ... and once that object is deleted
\`\`\`

- \`assembly/index.ts\`: the manifest and the transform. Change the copy with
  \`Result.apply().set(pointer, value)\` / \`.remove(pointer)\`; read the local object with
  \`input.local.get("spec").get("minAvailable")\`.
- \`asconfig.json\` extends the SDK's build settings (its runtime, optimisation, abort handler):
  build with \`--config asconfig.json\` and no other flags.
- \`${sampleFile}\`: the object the tests feed the plugin; \`test/\`: the tests.

Install it on the consumer cluster (the one that offloads namespaces), then check each
provider's answer:

\`\`\`sh
liqoctl plugin allow ${p.group ? `${p.kind}.${p.group}` : p.kind}   # once: liqo may read the kind
liqoctl plugin install build/${p.name}.wasm
liqoctl plugin list
\`\`\`

A provider grants it once it serves ${kind} and ran
\`liqoctl plugin allow ${p.group ? `${p.kind}.${p.group}` : p.kind} --grant\` (chart values
\`reflection.pluginRules\` and \`reflection.grantPeerPlugins\`). Upgrade: bump \`version\` in the manifest, build, and \`liqoctl plugin install\` again
(the running peerings reload it). Remove: \`liqoctl plugin remove ${p.name}\` (the provider then
deletes the copies it made).
`;
}

/** Every file of a new project, by path relative to its folder (the SDK copy excepted). */
export function scaffoldFiles(p: ProjectSpec): Record<string, string> {
  checkPluginName(p.name);
  const sampleFile = `samples/${p.kind.toLowerCase()}.yaml`;
  const pkg = {
    name: p.name,
    version: "0.1.0",
    private: true,
    type: "module",
    // "$PWD/": asc resolves the SDK's transform from the config's folder, which must be absolute
    // when asc runs on Bun (bun --bun, or no node installed).
    scripts: { build: 'asc --config "$PWD/asconfig.json"', test: 'asc --config "$PWD/asconfig.json" && bun test' },
    devDependencies: { [SDK_PACKAGE]: `file:./${SDK_VENDOR_DIR}`, assemblyscript: ASSEMBLYSCRIPT_VERSION },
  };
  const asconfig = {
    extends: `./node_modules/${SDK_PACKAGE}/asconfig.json`,
    entries: ["assembly/index.ts"],
    options: { outFile: `build/${p.name}.wasm` },
  };
  const tsconfig = { extends: "assemblyscript/std/assembly.json", include: ["./**/*.ts"] };
  return {
    "package.json": `${JSON.stringify(pkg, null, 2)}\n`,
    "asconfig.json": `${JSON.stringify(asconfig, null, 2)}\n`,
    "assembly/tsconfig.json": `${JSON.stringify(tsconfig, null, 2)}\n`,
    "assembly/index.ts": entrySource(p),
    [sampleFile]: Bun.YAML.stringify(sampleObject(p), null, 2),
    [`test/${p.name}.test.ts`]: testSource(p, sampleFile),
    "README.md": readme(p, sampleFile),
    ".gitignore": "node_modules/\nbuild/\n",
  };
}
