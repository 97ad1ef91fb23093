// What a plugin sees of an object, as a tree: the containers the projection of its declared
// fields makes (objects.ts project) and, under them, the members it copies from the object.
// The live memo's generated replays (replay-jit.ts) read the cached object itself through this
// tree instead of a projection made for every call: a member of a made container is the
// object's own member when the tree has it as a leaf, a made container when it is a node (there
// when any leaf under it is), and absent otherwise, which is exactly what the projection holds.
import { parsePointer } from "./objects.ts";

/** A container the projection makes. `kids` maps a member to its node, or to null for a leaf
 *  (copied from the object as it is). `always`: made whatever the object holds (the root, metadata). */
export interface ViewNode { kids: Map<string, ViewNode | null>; always: boolean; leaves: string[][] }

/** The members baseProjection (objects.ts) always sends. */
const BASE: ReadonlyArray<readonly string[]> = [["apiVersion"], ["kind"], ["metadata", "name"], ["metadata", "namespace"], ["metadata", "labels"], ["metadata", "annotations"]];

/**
 * Member names read the same way on the object and on its projection. The projection walks
 * with plain member reads (objects.ts), which also find what objects and arrays inherit
 * (`constructor`, `length`): a field naming one of those is left to the projection. Functions are
 * never walked through (they are no objects), so what they inherit does not matter.
 */
const plain = (seg: string) => seg !== "__proto__" && !(seg in Object.prototype) && !(seg in Array.prototype);

const node = (always: boolean): ViewNode => ({ kids: new Map(), always, leaves: [] });

/**
 * The tree of `fields` (undefined: the whole object, no tree needed) or null when the fields are
 * ones this reading does not model (a field inside or over another, or over metadata, or with a
 * name objects inherit): replays of those plugins keep reading projections.
 */
export function viewTree(fields: readonly string[] | undefined): ViewNode | null | undefined {
  if (fields === undefined) return undefined;
  const root = node(true);
  const add = (segs: readonly string[], base: boolean): boolean => {
    if (!segs.every(plain)) return false;
    let cur = root;
    for (let i = 0; i < segs.length - 1; i++) {
      const seg = segs[i]!;
      const next = cur.kids.get(seg);
      if (next === null) return false; // inside a leaf
      if (next === undefined) {
        const made = node(base); // metadata is made by baseProjection whatever it holds
        cur.kids.set(seg, made);
        cur = made;
      } else cur = next;
    }
    const last = segs[segs.length - 1]!;
    const at = cur.kids.get(last);
    if (at !== undefined && at !== null) return false; // over a made container
    cur.kids.set(last, null);
    return true;
  };
  for (const b of BASE) add(b, true);
  for (const f of fields) if (!add(parsePointer(f), false)) return null;
  const collect = (n: ViewNode): string[][] => {
    for (const [k, kid] of n.kids) {
      if (kid === null) n.leaves.push([k]);
      else for (const p of collect(kid)) n.leaves.push([k, ...p]);
    }
    return n.leaves;
  };
  collect(root);
  return root;
}

/** How one resource's objects are shown to a plugin in one direction, built once per resource. */
export interface LiveView {
  fields: readonly string[] | undefined;
  /** Undefined: the target is not shown (the plugin still gets its state). */
  targetFields: readonly string[] | undefined;
  /** The trees generated replays read the objects through; null when a side's fields are not modelled. */
  trees: { source: ViewNode | null; target: ViewNode | null } | null;
}

export function liveView(fields: readonly string[] | undefined, targetFields: readonly string[] | undefined): LiveView {
  const source = viewTree(fields);
  const target = viewTree(targetFields);
  return { fields, targetFields, trees: source === null || target === null ? null : { source: source ?? null, target: target ?? null } };
}
