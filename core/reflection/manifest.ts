// Reading and checking a plugin's manifest: the ABI version first (a plugin of another ABI
// may not even have the same exports), then the schema, then that the module's imports and
// exports agree with what the manifest declares.
import * as v from "valibot";
import { ABI_VERSION, HOST_FUNCTIONS, ManifestSchema, type Manifest } from "./abi.ts";
import { PluginError } from "./errors.ts";
import { InstanceRunner } from "./instance.ts";

const REQUIRED_EXPORTS = [
  "memory",
  "liqo_abi_version",
  "liqo_context",
  "liqo_begin",
  "liqo_alloc",
  "liqo_output_len",
  "liqo_manifest",
  "liqo_forward",
  "liqo_backward",
];
/** Imports every SDK-built plugin may have without declaring them. */
const ALWAYS_ALLOWED = new Set([
  "liqo:log/abort",
  "env/abort",
  "liqo:obj/get",
  "liqo:obj/at",
  "liqo:obj/len",
  "liqo:obj/eq",
  "liqo:obj/text",
  "liqo:obj/key",
  "liqo:obj/json",
]);
/** The live-call twin of a host function is covered by declaring the function itself. */
const LIVE_TWINS: Record<string, string> = {
  "liqo:net/translate_ip_value": "liqo:net/translate_ip",
  "liqo:cache/lookup_value": "liqo:cache/lookup",
};

const noHost = { log() {}, abort() {}, translateIp: (ip: string) => ip, lookup: () => null };

/** Static checks that need no code of the module to run: it must export the ABI v1 functions. */
export function checkExports(module: WebAssembly.Module, label = "(unnamed)"): void {
  const exports = new Set(WebAssembly.Module.exports(module).map((e) => e.name));
  const missing = REQUIRED_EXPORTS.filter((e) => !exports.has(e));
  if (missing.length) {
    throw new PluginError(
      "invalid-manifest",
      label,
      `is not a liqo reflector plugin: it does not export ${missing.join(", ")}; build it with the plugin SDK, whose entry file re-exports "@liqo-bun/plugin-sdk/exports" (liqoctl plugin init; docs/plugins.md)`,
    );
  }
}

/**
 * Reads the manifest by instantiating the module on this thread: the module's start function and
 * liqo_manifest run here and cannot be interrupted. Only for built-ins; drop-ins are read in a
 * worker with a deadline (WorkerRunner.manifest, see host.ts).
 */
export async function readManifest(
  module: WebAssembly.Module,
  label = "(unnamed)",
): Promise<{ manifest: Manifest; name: string }> {
  checkExports(module, label);
  const probe = await InstanceRunner.create(module, noHost, {});
  let raw: string;
  let abi: number;
  try {
    abi = probe.callNumber("liqo_abi_version");
    raw = abi === ABI_VERSION ? probe.callNoInput("liqo_manifest") : "";
  } catch (err) {
    throw new PluginError("trap", label, `trapped while reporting its manifest: ${(err as Error).message}`, {
      cause: err,
    });
  } finally {
    await probe.close();
  }
  return checkManifest(module, abi, raw, label);
}

/** The checks on what the module reported (its ABI version and manifest text), wherever it ran. */
export function checkManifest(
  module: WebAssembly.Module,
  abi: number,
  raw: string,
  label = "(unnamed)",
): { manifest: Manifest; name: string } {
  if (abi !== ABI_VERSION) {
    throw new PluginError(
      "abi-mismatch",
      label,
      `speaks reflector ABI version ${abi}, this host speaks ${ABI_VERSION}; rebuild it against the current SDK`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new PluginError("invalid-manifest", label, `returned a manifest that is not JSON: ${(err as Error).message}`);
  }
  const parsed = v.safeParse(ManifestSchema, json);
  if (!parsed.success) {
    const issues = parsed.issues.map((i) => `${v.getDotPath(i) ?? "(root)"}: ${i.message}`).join("; ");
    throw new PluginError("invalid-manifest", label, `has an invalid manifest: ${issues}`);
  }
  const manifest = parsed.output;
  const name = manifest.name;
  if (manifest.abiVersion !== ABI_VERSION) {
    throw new PluginError(
      "abi-mismatch",
      name,
      `declares abiVersion ${manifest.abiVersion} in its manifest, this host speaks ${ABI_VERSION}`,
    );
  }
  const declared = new Set(manifest.hostFunctions.map((f) => HOST_FUNCTIONS[f].join("/")));
  for (const imp of WebAssembly.Module.imports(module)) {
    const id = `${imp.module}/${imp.name}`;
    if (ALWAYS_ALLOWED.has(id) || declared.has(id) || declared.has(LIVE_TWINS[id] ?? "")) continue;
    const known = Object.entries(HOST_FUNCTIONS).find(([, pair]) => pair.join("/") === (LIVE_TWINS[id] ?? id))?.[0];
    throw new PluginError(
      "invalid-manifest",
      name,
      known
        ? `imports host function ${known} (${id}) without declaring it; add "${known}" to hostFunctions in its manifest`
        : `imports ${id}, which is not an ABI v1 host function (WASI is not available; build without it)`,
    );
  }
  return { manifest, name };
}
