// Object plumbing shared by the host and the plain-TypeScript twins: the base copy a
// reflected object starts from, JSON-pointer edits applied copy-on-write (cached objects
// are never mutated, and untouched subtrees are shared instead of deep-copied), and the
// projection of the fields a plugin declared it reads.
import {
  LABEL_MANAGED_BY,
  LABEL_ORIGIN,
  MANAGED_BY_REFLECTION,
  type Edit,
  type KubeObject,
  type ReflectionContext,
} from "./abi.ts";

type Json = Record<string, unknown>;

/**
 * The object a reflected copy starts from: identity, labels and annotations of the source,
 * in the target namespace, with ownership labels; server-managed metadata (uid,
 * resourceVersion, creationTimestamp, managedFields, ownerReferences, generation,
 * finalizers...) is dropped by construction, since only these four fields are kept.
 */
export function baseCopy(
  source: KubeObject,
  targetNamespace: string | undefined,
  originClusterId: string,
  keepStatus: boolean,
): KubeObject {
  const m = source.metadata ?? {};
  const metadata: NonNullable<KubeObject["metadata"]> = { name: m.name };
  if (targetNamespace !== undefined) metadata.namespace = targetNamespace;
  metadata.labels = { ...m.labels, [LABEL_MANAGED_BY]: MANAGED_BY_REFLECTION, [LABEL_ORIGIN]: originClusterId };
  if (m.annotations) metadata.annotations = { ...m.annotations };
  const out: KubeObject = { ...source, metadata };
  if (!keepStatus) delete out.status;
  return out;
}

export function baseRemote(local: KubeObject, ctx: ReflectionContext, namespaced = true): KubeObject {
  return baseCopy(local, namespaced ? ctx.remoteNamespace : undefined, ctx.localClusterId, false);
}

/** Splits an RFC 6901 pointer ("/metadata/labels/liqo.io~1x") into unescaped segments. */
export function parsePointer(pointer: string): string[] {
  if (!pointer.startsWith("/")) throw new Error(`"${pointer}" is not a JSON pointer: it must start with "/"`);
  const segs = pointer.slice(1).split("/");
  return pointer.includes("~") ? segs.map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~")) : segs;
}

function copyOf(x: object): object {
  return Array.isArray(x) ? x.slice() : { ...(x as Json) };
}

/** A copy of `obj` without `keys`. */
function copyWithout(obj: Json, keys: string[]): Json {
  const out: Json = { ...obj };
  for (let i = 0; i < keys.length; i++) delete out[keys[i]!];
  return out;
}

/**
 * One step of a compiled edit list: the container's path, then a set, or the removal of one
 * or more members (consecutive removals under one parent are grouped, so that an object
 * loses them all in one copy).
 */
export interface Step {
  parent: ReadonlyArray<string | number>;
  last: string;
  path: string;
  value: unknown;
  remove: boolean;
  more: Array<{ last: string; path: string }> | null;
  /** A removal's member names: `last` and those of `more`. */
  keys: string[];
}

/** An edit list as steps: pointers split, consecutive removals under one parent grouped. */
export function compile(edits: readonly Edit[]): Step[] {
  const steps: Step[] = [];
  let prev: Step | null = null;
  let prevParent = "";
  for (const edit of edits) {
    const path = edit[0];
    const segs = parsePointer(path);
    const remove = edit.length === 1;
    const parentPath = path.slice(0, path.lastIndexOf("/"));
    const last = segs[segs.length - 1]!;
    if (remove && prev !== null && prev.remove && parentPath === prevParent) {
      (prev.more ??= []).push({ last, path });
      prev.keys.push(last);
      continue;
    }
    // Array positions as numbers: obj["0"] and obj[0] are the same member, but a string key on
    // an array takes the engines' slow path (parse the string, then index).
    const parent = segs.slice(0, -1).map((seg) => (/^(0|[1-9][0-9]{0,8})$/.test(seg) ? Number(seg) : seg));
    prev = { parent, last, path, value: edit[1], remove, more: null, keys: [last] };
    prevParent = parentPath;
    steps.push(prev);
  }
  return steps;
}

/**
 * An edit that does not fit the object: a member set on what is an array in this object.
 * The object's shape is the problem (a user can write `spec: []`), not the plugin's answer.
 */
export class EditShapeError extends Error {}

function arrayIndex(cur: unknown[], last: string, path: string): number {
  const idx = last === "-" ? cur.length : Number(last);
  if (!Number.isInteger(idx) || idx < 0)
    throw new EditShapeError(`edit path ${path}: "${last}" is not an index, and the object has an array there`);
  return idx;
}

/** Position of a removal in an array; -1 when the segment is no index (no such member: nothing to remove). */
function removalIndex(last: string): number {
  const idx = Number(last);
  return last !== "" && Number.isInteger(idx) && idx >= 0 ? idx : -1;
}

/**
 * Applies edits in order to `base`, a base copy: its root, metadata, labels and annotations are
 * its own, everything under them is shared with the cached object. Containers along each path
 * are copied once (tracked in `fresh`), so the caller's source objects stay untouched. Removing
 * an absent path is a no-op; setting under a missing parent creates it. Throws on a malformed
 * edit. Returns the result, which is `base` itself unless a top-level member was removed.
 */
export function applyEdits(base: KubeObject, edits: readonly Edit[]): KubeObject {
  if (edits.length === 0) return base;
  const steps = compile(edits);
  const m = base.metadata ?? {};
  // Containers already copied for this answer: a handful, so an array.
  const fresh: object[] = [base, m, m.labels ?? m, m.annotations ?? m];
  let root = base as Json;
  for (let e = 0; e < steps.length; e++) {
    const step = steps[e]!;
    const segs = step.parent;
    const remove = step.remove;
    // Walk to the container's holder, copying what is shared; the container itself is copied
    // below, and only when it changes (a removal copies it once, without the removed members).
    let holder: Record<string | number, unknown> | null = null;
    let cur = root as Record<string | number, unknown>;
    let ok = true;
    const n = segs.length;
    for (let i = 0; i < n; i++) {
      const seg = segs[i]!;
      let child = cur[seg];
      if (child === null || typeof child !== "object") {
        if (remove) {
          ok = false;
          break;
        }
        child = {};
        cur[seg] = child;
        fresh.push(child as object);
      } else if (i < n - 1 || !remove || Array.isArray(child)) {
        if (!fresh.includes(child as object)) {
          child = copyOf(child as object);
          cur[seg] = child;
          fresh.push(child as object);
        }
      }
      holder = cur;
      cur = child as Json;
    }
    if (!ok) continue;
    if (Array.isArray(cur)) arrayTail(cur, step);
    else if (remove) {
      // Present means defined: JSON has no undefined members, and an undefined one is not sent anyway.
      const keys = step.keys;
      let present = false;
      for (let k = 0; k < keys.length && !present; k++) present = cur[keys[k]!] !== undefined;
      if (!present) continue; // nothing to remove: the container stays shared
      const without = copyWithout(cur, keys);
      fresh.push(without);
      if (holder === null) root = without;
      else holder[segs[n - 1]!] = without;
    } else cur[step.last] = step.value;
  }
  return root as KubeObject;
}

/** A step's set or removal at an array index. */
function arrayTail(cur: unknown[], step: Step): void {
  if (!step.remove) {
    cur[arrayIndex(cur, step.last, step.path)] = step.value;
    return;
  }
  const idx = removalIndex(step.last);
  if (idx >= 0 && idx < cur.length) cur.splice(idx, 1);
  if (step.more)
    for (const r of step.more) {
      const i = removalIndex(r.last);
      if (i >= 0 && i < cur.length) cur.splice(i, 1);
    }
}

/** Metadata every plugin always receives, so guards (ownership, skip annotation) need no declaration. */
function baseProjection(obj: KubeObject): Json {
  const m = obj.metadata ?? {};
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: { name: m.name, namespace: m.namespace, labels: m.labels, annotations: m.annotations },
  };
}

/** The part of `obj` a plugin declared it reads; undefined fields mean the whole object. */
export function project(obj: KubeObject | null, fields: readonly string[] | undefined): unknown {
  if (obj === null || fields === undefined) return obj;
  const out = baseProjection(obj);
  if (fields.length === 0) return out;
  // Containers this projection made (so writable): a handful, so an array.
  const made: unknown[] = [out, out.metadata];
  for (let f = 0; f < fields.length; f++) {
    const segs = parsePointer(fields[f]!);
    let value: unknown = obj;
    for (let i = 0; i < segs.length && value !== undefined; i++) {
      value = value !== null && typeof value === "object" ? (value as Json)[segs[i]!] : undefined;
    }
    if (value === undefined) continue;
    let cur = out;
    for (let i = 0; i < segs.length - 1; i++) {
      const seg = segs[i]!;
      let next = cur[seg];
      // Never write into a subtree shared with the source object: copy it first.
      if (!made.includes(next)) {
        next = next !== null && typeof next === "object" && !Array.isArray(next) ? { ...(next as Json) } : {};
        cur[seg] = next;
        made.push(next);
      }
      cur = next as Json;
    }
    cur[segs[segs.length - 1]!] = value;
  }
  return out;
}
