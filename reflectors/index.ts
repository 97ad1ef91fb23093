// The built-in reflectors: where each one's wasm is built, and its plain-TypeScript twins.
import { loadPlugin, type LoadOptions, type ReflectorPlugin } from "../core/reflection/host.ts";
import { ensureBuilt, wasmPath, builtinNames, type BuiltinName } from "./build.ts";
import type { KubeObject } from "../core/kube/resources.ts";
import type { Twin } from "./twin-helpers.ts";
import { remoteConfigMap } from "./configmaps/twin.ts";
import { remoteEndpointSlice } from "./endpointslices/twin.ts";
import { remoteIngress } from "./ingresses/twin.ts";
import { localPodStatus, remotePodWith } from "./pods/twin.ts";
import { remoteSecret } from "./secrets/twin.ts";
import { remoteService } from "./services/twin.ts";
import { remotePvc } from "./storage/twin.ts";

export { builtinNames, type BuiltinName };

/** Twins by kind: forward and backward, as the wasm plugin of the same name does them. */
export const twins: Record<
  string,
  { forward?: Twin | ((lookup: (sa: string) => KubeObject | null) => Twin); backward?: Twin }
> = {
  Service: { forward: remoteService },
  Ingress: { forward: remoteIngress },
  ConfigMap: { forward: remoteConfigMap },
  Secret: { forward: remoteSecret },
  EndpointSlice: { forward: remoteEndpointSlice },
  PersistentVolumeClaim: { forward: remotePvc },
  Pod: { forward: remotePodWith, backward: localPodStatus },
};

export function isBuiltinName(name: string): name is BuiltinName {
  return (builtinNames as readonly string[]).includes(name);
}

/** The compiled bytes of a built-in, building it first when the .wasm is missing or stale. */
export async function builtinWasm(name: BuiltinName): Promise<Uint8Array> {
  await ensureBuilt([name]);
  return Bun.file(wasmPath(name)).bytes();
}

export async function loadBuiltin(name: BuiltinName, options: LoadOptions = {}): Promise<ReflectorPlugin> {
  return loadPlugin(await builtinWasm(name), { trust: "builtin", ...options });
}
