// Validation of a drop-in .wasm before the engine starts reflecting with it: it must load,
// speak ABI v1, have a coherent manifest, and answer a trial call per declared resource
// without trapping, timing out or breaking the rules. The engine calls this on every file
// it finds in the plugin directory or the cluster's plugin store, and again when one changes.
// Everything the plugin runs, from its start function on, runs in a worker under a deadline.
import { apiVersionOf, type KubeObject, type Manifest, type ReflectionContext } from "./abi.ts";
import { PluginError } from "./errors.ts";
import { loadPlugin, type LoadOptions } from "./host.ts";

export type Validation = { ok: true; manifest: Manifest } | { ok: false; manifest?: Manifest; problems: string[] };

const trialCtx: ReflectionContext = {
  localClusterId: "validation-local",
  remoteClusterId: "validation-remote",
  localNamespace: "validation",
  remoteNamespace: "validation-remote",
  virtualNodeName: "liqo-validation-remote",
  virtualKubeletIp: "10.0.0.1",
  storageClass: "standard",
};

export async function validatePlugin(wasm: Uint8Array, options: LoadOptions = {}): Promise<Validation> {
  let plugin;
  try {
    // The trial runs on a cold instance (compilation, first-call tiering): allow it time.
    plugin = await loadPlugin(wasm, { trust: "dropin", budgetMs: 2_000, startTimeoutMs: 5_000, ...options });
  } catch (err) {
    return { ok: false, problems: [(err as Error).message] };
  }
  const problems: string[] = [];
  try {
    for (const r of plugin.manifest.resources) {
      const namespaced = r.namespaced !== false;
      const sample: KubeObject = {
        apiVersion: apiVersionOf(r),
        kind: r.kind,
        metadata: { name: "trial", namespace: namespaced ? trialCtx.localNamespace : undefined },
        spec: {},
      };
      const calls: Array<[string, () => Promise<unknown>]> = [];
      if (r.direction !== "backward") calls.push(["forward", () => plugin.forward(sample, null, trialCtx)]);
      if (r.direction !== "forward")
        calls.push([
          "backward",
          () =>
            plugin.backward(
              { ...sample, metadata: { name: "trial", namespace: namespaced ? trialCtx.remoteNamespace : undefined } },
              null,
              trialCtx,
            ),
        ]);
      for (const [dir, call] of calls) {
        try {
          await call();
        } catch (err) {
          // An input error on a bare sample is acceptable; anything that quarantines is not.
          if (!(err instanceof PluginError) || err.quarantines || err.code === "quarantined")
            problems.push(`trial ${dir} call for ${r.kind}: ${(err as Error).message}`);
        }
      }
    }
    return problems.length
      ? { ok: false, manifest: plugin.manifest, problems }
      : { ok: true, manifest: plugin.manifest };
  } finally {
    await plugin.close();
  }
}
