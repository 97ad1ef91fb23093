// Object plumbing shared by the host and the plain-TypeScript twins: the base copy a
// reflected object starts from, JSON-pointer edits applied copy-on-write (cached objects
// are never mutated, and untouched subtrees are shared instead of deep-copied), and the
// projection of the fields a plugin declared it reads.
import { LABEL_MANAGED_BY, LABEL_ORIGIN, MANAGED_BY_REFLECTION, type Edit, type KubeObject, type ReflectionContext } from "./abi.ts";

type Json = Record<string, unknown>;

/**
 * The object a reflected copy starts from: identity, labels and annotations of the source,
 * in the target namespace, with ownership labels; server-managed metadata (uid,
 * resourceVersion, creationTimestamp, managedFields, ownerReferences, generation,
 * finalizers...) is dropped by construction, since only these four fields are kept.
 */
export function baseCopy(source: KubeObject, targetNamespace: string | undefined, originClusterId: string, keepStatus: boolean): KubeObject {
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

export function baseLocal(remote: KubeObject, ctx: ReflectionContext, namespaced = true): KubeObject {
  return baseCopy(remote, namespaced ? ctx.localNamespace : undefined, ctx.remoteClusterId, true);
}

const pointerCache = new Map<string, string[]>();

/** Splits an RFC 6901 pointer ("/metadata/labels/liqo.io~1x") into unescaped segments. */
export function parsePointer(pointer: string): string[] {
  let segs = pointerCache.get(pointer);
  if (segs) return segs;
  if (!pointer.startsWith("/")) throw new Error(`"${pointer}" is not a JSON pointer: it must start with "/"`);
  segs = pointer.slice(1).split("/").map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
  if (pointerCache.size < 10_000) pointerCache.set(pointer, segs);
  return segs;
}

export function getPointer(obj: unknown, pointer: string): unknown {
  let cur = obj;
  for (const seg of parsePointer(pointer)) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Json)[seg];
  }
  return cur;
}

/** Containers already copied for one answer: usually a handful, where an array beats a Set; a Set past 16. */
class Fresh {
  #list: object[];
  #set: Set<object> | null = null;
  constructor(first: object[]) { this.#list = first; }
  has(o: object): boolean { return this.#set ? this.#set.has(o) : this.#list.includes(o); }
  add(o: object): void {
    if (this.#set) { this.#set.add(o); return; }
    this.#list.push(o);
    if (this.#list.length > 16) this.#set = new Set(this.#list);
  }
}

function copyOf(x: object): object {
  return Array.isArray(x) ? x.slice() : { ...(x as Json) };
}

/** A copy of `obj` without `keys`: deleting from an object turns it into a dictionary, which every later read and JSON.stringify pay for. */
function copyWithout(obj: Json, keys: string[]): Json {
  const out: Json = {};
  if (keys.length === 1) {
    const key = keys[0]!;
    for (const k in obj) if (k !== key) out[k] = obj[k];
  } else for (const k in obj) if (!keys.includes(k)) out[k] = obj[k];
  return out;
}

/** The pointer of the container an edit's last segment lives in ("/spec/a" → "/spec"). */
const parentOf = (path: string) => path.slice(0, path.lastIndexOf("/"));

/**
 * Applies edits in order. Containers along each path are copied once (tracked in `fresh`),
 * so the caller's source objects stay untouched. Removing an absent path is a no-op;
 * setting under a missing parent creates it. Throws on a malformed edit. Returns the result,
 * which is `base` itself unless a top-level member was removed.
 */
export function applyEdits(base: KubeObject, edits: readonly Edit[]): KubeObject {
  if (edits.length === 0) return base;
  const m = base.metadata ?? {};
  const fresh = new Fresh([base, m, m.labels ?? m, m.annotations ?? m]);
  let root = base as Json;
  for (let e = 0; e < edits.length; e++) {
    const edit = edits[e]!;
    const path = edit[0];
    const remove = edit.length === 1;
    const segs = parsePointer(path);
    let cur = root;
    let holder: Json | null = null; // the container holding `cur`, and under which key
    let held = "";
    let ok = true;
    for (let i = 0; i < segs.length - 1; i++) {
      const seg = segs[i]!;
      let child = cur[seg];
      if (child === null || typeof child !== "object") {
        if (remove) { ok = false; break; }
        child = {};
        cur[seg] = child;
        fresh.add(child as object);
      } else if (!fresh.has(child as object)) {
        child = copyOf(child as object);
        cur[seg] = child;
        fresh.add(child as object);
      }
      holder = cur;
      held = seg;
      cur = child as Json;
    }
    if (!ok) continue;
    const last = segs[segs.length - 1]!;
    if (Array.isArray(cur)) {
      const idx = last === "-" ? cur.length : Number(last);
      if (!Number.isInteger(idx) || idx < 0) throw new Error(`edit path ${path}: "${last}" is not an array index`);
      if (remove) { if (idx < cur.length) cur.splice(idx, 1); }
      else cur[idx] = edit[1];
    } else if (remove) {
      // Removals from one object in a row (a plugin dropping several fields) make one copy.
      const keys = Object.hasOwn(cur, last) ? [last] : [];
      const parent = parentOf(path);
      while (e + 1 < edits.length && edits[e + 1]!.length === 1 && parentOf(edits[e + 1]![0]) === parent) {
        const next = parsePointer(edits[++e]![0]);
        const key = next[next.length - 1]!;
        if (Object.hasOwn(cur, key)) keys.push(key);
      }
      if (keys.length === 0) continue;
      const without = copyWithout(cur, keys);
      fresh.add(without);
      if (holder === null) root = without;
      else holder[held] = without;
    } else cur[last] = edit[1];
  }
  return root as KubeObject;
}

/** Metadata every plugin always receives, so guards (ownership, skip annotation) need no declaration. */
function baseProjection(obj: KubeObject): Json {
  const m = obj.metadata ?? {};
  return { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name: m.name, namespace: m.namespace, labels: m.labels, annotations: m.annotations } };
}

/** The part of `obj` a plugin declared it reads; undefined fields mean the whole object. */
export function project(obj: KubeObject | null, fields: readonly string[] | undefined): unknown {
  if (obj === null || fields === undefined) return obj;
  const out = baseProjection(obj);
  const made = new Set<unknown>([out, out.metadata]);
  for (const f of fields) {
    const value = getPointer(obj, f);
    if (value === undefined) continue;
    const segs = parsePointer(f);
    let cur = out;
    for (let i = 0; i < segs.length - 1; i++) {
      const seg = segs[i]!;
      let next = cur[seg];
      // Never write into a subtree shared with the source object: copy it first.
      if (!made.has(next)) {
        next = next !== null && typeof next === "object" && !Array.isArray(next) ? { ...(next as Json) } : {};
        cur[seg] = next;
        made.add(next);
      }
      cur = next as Json;
    }
    cur[segs[segs.length - 1]!] = value;
  }
  return out;
}
