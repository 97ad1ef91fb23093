// The cluster's plugin store: each drop-in reflector plugin a user installs (liqoctl plugin
// install, or the chart's reflection.plugins) is a ConfigMap in the liqo namespace, labelled
// liqo.io/reflector-plugin=true, holding the module in binaryData. The controller manager watches
// them and hot-loads each into every peering's virtual kubelet (watch.ts, sync.ts).
import type { KubeClient } from "../../kube/client.ts";
import { Resources, type KubeObject } from "../../kube/resources.ts";
import type { Manifest } from "../abi.ts";

export const PLUGIN_LABEL = "liqo.io/reflector-plugin";
/** The store name a plugin was installed under (liqoctl plugin remove <name>). */
const PLUGIN_NAME_LABEL = "liqo.io/reflector-plugin-name";
/** The manifest as liqoctl read it at install time (JSON), for listing without loading the module. */
const MANIFEST_ANNOTATION = "liqo.io/reflector-plugin-manifest";
const PLUGIN_KEY = "plugin.wasm";
/**
 * Kubernetes refuses a ConfigMap whose data exceeds 1 MiB (and etcd a request past 1.5 MiB; the
 * base64 of binaryData is a third larger on the wire). A module is stored whole or not at all.
 */
export const MAX_PLUGIN_BYTES = 1024 * 1024;

export const pluginConfigMapName = (name: string) => `liqo-plugin-${name}`;

export interface StoredPlugin {
  /** The store name (liqoctl plugin install --name; by default the manifest's name). */
  name: string;
  configMap: string;
  namespace: string;
  bytes: Uint8Array;
  /** The manifest recorded at install (absent for ConfigMaps made by the chart or by hand). */
  manifest?: Manifest;
  uid?: string;
  createdAt?: string;
}

export function pluginConfigMap(namespace: string, name: string, bytes: Uint8Array, manifest: Manifest): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: pluginConfigMapName(name),
      namespace,
      labels: { [PLUGIN_LABEL]: "true", [PLUGIN_NAME_LABEL]: name, "app.kubernetes.io/managed-by": "liqoctl" },
      annotations: { [MANIFEST_ANNOTATION]: JSON.stringify(manifest) },
    },
    binaryData: { [PLUGIN_KEY]: Buffer.from(bytes).toString("base64") },
  };
}

/** The plugin a ConfigMap holds: its plugin.wasm, or else its one *.wasm key (the chart's). */
export function storedPlugin(cm: KubeObject): StoredPlugin | { configMap: string; error: string } {
  const bin = (cm as { binaryData?: Record<string, string> }).binaryData ?? {};
  const keys = Object.keys(bin).filter((k) => k.endsWith(".wasm"));
  const key = PLUGIN_KEY in bin ? PLUGIN_KEY : keys.length === 1 ? keys[0]! : undefined;
  const configMap = cm.metadata.name!;
  if (!key)
    return {
      configMap,
      error: `ConfigMap ${cm.metadata.namespace}/${configMap} is labelled ${PLUGIN_LABEL}=true but has no binaryData key ${PLUGIN_KEY} (or one *.wasm key)`,
    };
  let manifest: Manifest | undefined;
  try {
    manifest = cm.metadata.annotations?.[MANIFEST_ANNOTATION]
      ? JSON.parse(cm.metadata.annotations[MANIFEST_ANNOTATION])
      : undefined;
  } catch {
    manifest = undefined;
  }
  return {
    name: cm.metadata.labels?.[PLUGIN_NAME_LABEL] ?? configMap.replace(/^liqo-plugin-/, ""),
    configMap,
    namespace: cm.metadata.namespace!,
    bytes: new Uint8Array(Buffer.from(bin[key]!, "base64")),
    manifest,
    uid: cm.metadata.uid,
    createdAt: cm.metadata.creationTimestamp,
  };
}

export async function listStoredPlugins(
  client: KubeClient,
  namespace: string,
): Promise<Array<StoredPlugin | { configMap: string; error: string }>> {
  const list = await client.list(Resources.configMaps, { namespace, labelSelector: `${PLUGIN_LABEL}=true` });
  return list.items.sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!)).map(storedPlugin);
}

export const kindsOf = (m: Manifest) =>
  m.resources.map((r) => `${r.kind}.${r.group || "core"}/${r.version} (${r.direction})`);
