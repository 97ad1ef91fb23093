// Cache transforms (an informer's `transform` option): a controller keeps only what it reads, so
// caches of thousands of pods stay small. managedFields alone is often half of an object.
import type { KubeObject } from "./resources.ts";

export function withoutManagedFields<T extends KubeObject>(obj: T): T {
  if (!obj.metadata?.managedFields) return obj;
  const { managedFields: _, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

export function metadataOnly<T extends KubeObject>(obj: T): T {
  return { apiVersion: obj.apiVersion, kind: obj.kind, metadata: withoutManagedFields(obj).metadata } as T;
}

/** Returns the one kept copy of a part equal to the one given (by its JSON), frozen; anything not an object as it is. */
export type Interner = <T>(part: T) => T;

/**
 * Keeps one copy of the parts cached objects share. The pods of one workload carry equal labels,
 * owner references, tolerations, affinity, token-volume projection and container settings: at
 * 10,000 pods, each part held once per pod costs megabytes (tests/bench/offloading.ts measures it).
 * The part's JSON is its key. At most `max` parts are kept; when full, the table starts over,
 * so parts that are unique to each object (a StatefulSet pod's labels) cost a bounded table.
 * Kept parts are frozen, because other objects share them: code that wrote into a cached object
 * would throw, where it would otherwise change every pod sharing the part.
 */
export function createInterner(max = 2048): Interner {
  const kept = new Map<string, unknown>();
  return <T>(part: T): T => {
    if (part === null || typeof part !== "object") return part;
    const key = JSON.stringify(part);
    const have = kept.get(key);
    if (have !== undefined) return have as T;
    if (kept.size >= max) kept.clear();
    kept.set(key, deepFreeze(part));
    return part;
  };
}

function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}

/** A copy of `obj` whose object-valued fields are the interner's kept copies (one level), but those named in `unique`. */
export function internFields<T extends object>(obj: T, intern: Interner, unique: readonly string[] = []): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = unique.includes(k) ? v : intern(v);
  return out as T;
}

interface SlimmableSpec {
  containers?: object[];
  initContainers?: object[];
  volumes?: object[];
  [k: string]: unknown;
}

// Parts that differ from pod to pod, so that keeping them would only fill the table: lists whose
// elements are looked at one by one, and a container's volume mounts (the token volume's name).
const PER_ELEMENT = ["containers", "initContainers", "ephemeralContainers", "volumes"];
const PER_POD_CONTAINER = ["volumeMounts"];

/** A pod spec whose parts replicas share are the interner's: each field (tolerations, affinity...), each container's and volume's fields. */
function slimPodSpec<S extends SlimmableSpec>(spec: S, intern: Interner): S {
  const s = internFields(spec, intern, PER_ELEMENT);
  if (spec.containers) s.containers = spec.containers.map((c) => internFields(c, intern, PER_POD_CONTAINER));
  if (spec.initContainers)
    s.initContainers = spec.initContainers.map((c) => internFields(c, intern, PER_POD_CONTAINER));
  if (spec.volumes) s.volumes = spec.volumes.map((v) => internFields(v, intern));
  return s;
}

/**
 * The cache transform of pods that keeps their whole spec (the offloader's local pods): no
 * managedFields, and the parts replicas share kept once: metadata's labels, annotations and owner
 * references, and those of the spec (slimPodSpec).
 */
export function podSlimmer(
  intern: Interner = createInterner(),
): <T extends KubeObject & { spec?: SlimmableSpec }>(pod: T) => T {
  return <T extends KubeObject & { spec?: SlimmableSpec }>(pod: T): T => {
    const p = withoutManagedFields(pod);
    const out = { ...p, metadata: internFields(p.metadata, intern) };
    if (p.spec) out.spec = slimPodSpec(p.spec, intern);
    return out;
  };
}

/** Metadata only (as metadataOnly), its shared parts kept once; owner references are each object's own. */
export function slimMetadata(intern: Interner = createInterner()): <T extends KubeObject>(obj: T) => T {
  return <T extends KubeObject>(obj: T): T => {
    const m = metadataOnly(obj);
    return { ...m, metadata: internFields(m.metadata, intern, ["ownerReferences"]) };
  };
}
