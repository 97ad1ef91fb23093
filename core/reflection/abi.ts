// The reflector plugin ABI, version 1: the manifest, the call context, the decisions.
// docs/plugin-abi.md is the user-facing description of the same contract; change both together.
import * as v from "valibot";
import type { KubeObject } from "../kube/resources.ts";

export const ABI_VERSION = 1;

/** Labels every reflected object carries; the engine never touches objects without them. */
export const LABEL_MANAGED_BY = "liqo.io/managed-by";
export const MANAGED_BY_REFLECTION = "reflection";
export const LABEL_ORIGIN = "liqo.io/origin-cluster-id";
export const ANNOTATION_SKIP = "liqo.io/skip-reflection";

/** Host functions by their ABI name, and the wasm import (namespace, name) each one is. */
export const HOST_FUNCTIONS = {
  log: ["liqo:log", "log"],
  translateIp: ["liqo:net", "translate_ip"],
  lookup: ["liqo:cache", "lookup"],
} as const;
export type HostFunctionName = keyof typeof HOST_FUNCTIONS;

const pointer = v.pipe(v.string(), v.regex(/^(\/[^/]*)+$/, "a JSON pointer such as /spec/ports"));

export const ResourceSchema = v.object({
  group: v.string(),
  version: v.pipe(v.string(), v.minLength(1)),
  kind: v.pipe(v.string(), v.regex(/^[A-Z][A-Za-z0-9]*$/, "a Kind such as ConfigMap")),
  direction: v.picklist(["forward", "backward", "both"]),
  /** Cluster-scoped kinds (PersistentVolume) set this to false. */
  namespaced: v.optional(v.boolean(), true),
  /** Fields the forward transform reads, beyond the always-sent metadata; omitted = whole object. */
  fields: v.optional(v.array(pointer)),
  /** Same, for the backward transform (read from the remote object). */
  backwardFields: v.optional(v.array(pointer)),
  /** Fields of the target (the object a decision writes) the plugin reads; omitted = not sent
   *  (the plugin still gets the target's state: absent, owned or foreign). */
  targetFields: v.optional(v.array(pointer)),
});
export type Resource = v.InferOutput<typeof ResourceSchema>;

export const ManifestSchema = v.object({
  abiVersion: v.number(),
  name: v.pipe(v.string(), v.regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, "a DNS label such as my-reflector")),
  version: v.pipe(v.string(), v.minLength(1)),
  resources: v.pipe(v.array(ResourceSchema), v.minLength(1, "at least one resource")),
  hostFunctions: v.array(v.picklist(Object.keys(HOST_FUNCTIONS) as HostFunctionName[])),
});
export type Manifest = v.InferOutput<typeof ManifestSchema>;

/** What the engine knows about one call; plugins read it, never change it. */
export interface ReflectionContext {
  localClusterId: string;
  remoteClusterId: string;
  localNamespace: string;
  remoteNamespace: string;
  /** Name of the virtual node standing for the remote cluster (EndpointSlices, PVs). */
  virtualNodeName?: string;
  /** Address of the virtual kubelet, reported as the hostIP of offloaded pods. */
  virtualKubeletIp?: string;
  /** Storage class negotiated with the remote cluster during peering (PVCs). */
  storageClass?: string;
  /** How many times the remote pod was re-created by its ShadowPod (pod status). */
  remoteRestarts?: number;
  [extra: string]: unknown;
}

/** The objects plugins exchange are the client's (core/kube/resources.ts): one type for both. */
export type { KubeObject };

export type Direction = "forward" | "backward";

export type Decision =
  | { decision: "apply"; object: KubeObject; reason: string }
  | { decision: "delete"; reason: string }
  | { decision: "skip"; reason: string };

/**
 * One edit a plugin answers with, as a compact tuple: [path] removes, [path, value] sets.
 * Paths are RFC 6901 JSON pointers into the base object.
 */
export type Edit = [path: string] | [path: string, value: unknown];

/** The raw answer of a plugin call, before the host checks and completes it. */
export interface RawOutput {
  decision?: unknown;
  reason?: unknown;
  edits?: unknown;
  object?: unknown;
  error?: unknown;
}

export type IpTranslator = (ip: string, direction: Direction) => string;
export type CacheLookup = (req: {
  cluster: "local" | "remote";
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}) => KubeObject | null;

/** The identity translator: what a peering without overlapping CIDRs configures. */
export const identityTranslator: IpTranslator = (ip) => ip;

export function apiVersionOf(r: Pick<Resource, "group" | "version">): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}
