// Whether a destination object EQUALS a plugin's answer, and if not, what it takes to make it so.
// Containment is not enough: a key the answer dropped, or one another client added by hand, must
// go. The object's managedFields say who set each field:
// - fields nobody owns are the server's (defaults, allocated IPs, what admission added);
// - fields our field manager applied: the next apply removes those the answer no longer has;
// - fields another manager owns (kubectl edit, a client's update, or our own manager's old
//   create/update entries, which an apply never removes) that the answer does not have: an
//   apply cannot remove them, so the engine removes them with a JSON patch (see removals).
// The destination's own control plane is left alone: the PV controller binds a reflected PVC
// (spec.volumeName, bind annotations), the scheduler binds a pod, and taking those back would
// fight them forever. Status (a subresource) is not part of a main-resource write either.
import { CONTINUITY_FIELD_MANAGER } from "../../apis/labels.ts";
import { isSubset } from "./subset.ts";

/** What makes the destination equal to the answer: an apply, and/or JSON pointers to remove. */
export interface Convergence {
  /** A server-side apply of the answer is needed (a value differs, or we own a field it dropped). */
  apply: boolean;
  /** Fields other managers set that the answer does not have, as JSON pointers into the object, deepest and last items first. */
  removals: string[];
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  fieldsType?: string;
  fieldsV1?: FieldSet;
}
type FieldSet = { [key: string]: FieldSet };
type Json = Record<string, unknown>;

/**
 * Managers of the destination's control plane: their fields are part of the object's life there.
 * The provider's service continuity is one: its marks on a reflected EndpointSlice (annotations
 * saying what it changed) must outlive our rewrite, or it would mark the slice again at once.
 */
const DESTINATION_CONTROLLERS: ReadonlySet<string> = new Set([
  "kube-controller-manager",
  "kube-scheduler",
  "kubelet",
  CONTINUITY_FIELD_MANAGER,
]);

export function isEqual(c: Convergence): boolean {
  return !c.apply && c.removals.length === 0;
}

/**
 * How `actual` differs from `answer` for writes by `fieldManager`. `scope` "status" is a status
 * subresource write: only the status counts, and only our own status entry (the user's local
 * object may have other status writers).
 */
export function convergence(
  answer: Json,
  actual: Json,
  fieldManager: string,
  scope: "main" | "status" = "main",
): Convergence {
  const desired = scope === "status" ? { status: answer.status } : answer;
  const sub = scope === "status" ? "status" : "";
  const entries = ((actual.metadata as Json | undefined)?.managedFields ?? []) as ManagedFieldsEntry[];
  const out: Convergence = { apply: !isSubset(desired, actual), removals: [] };
  const ours = new Set<string>();
  for (const e of entries) {
    if (e.manager !== fieldManager || e.operation !== "Apply" || (e.subresource ?? "") !== sub || !e.fieldsV1) continue;
    walk(e.fieldsV1, actual, desired, "", "", (leaf) => {
      ours.add(leaf.id);
      // A field we applied that the answer dropped: the next apply removes it.
      if (absent(leaf.answer) && !absent(leaf.actual)) out.apply = true;
    });
  }
  if (scope === "status") return out;
  const removals = new Set<string>();
  for (const e of entries) {
    if ((e.manager === fieldManager && e.operation === "Apply") || e.subresource || !e.fieldsV1) continue;
    if (DESTINATION_CONTROLLERS.has(e.manager ?? "")) continue;
    walk(e.fieldsV1, actual, desired, "", "", (leaf) => {
      if (ours.has(leaf.id) || absent(leaf.actual)) return;
      if (absent(leaf.answer)) removals.add(leaf.pointer);
      // Set by someone else to a value of their own (an atomic map with an extra key, say):
      // a forced apply takes the field back.
      else if (!(isSubset(leaf.answer, leaf.actual) && isSubset(leaf.actual, leaf.answer))) out.apply = true;
    });
  }
  out.removals = outermostFirstLast([...removals]);
  return out;
}

interface Leaf {
  /** The field's path in managedFields terms: the same field has the same id in every entry. */
  id: string;
  /** Where it is in the destination object. */
  pointer: string;
  actual: unknown;
  /** The answer's value there; undefined when the answer does not have it. */
  answer: unknown;
}

/**
 * Visits the owned fields of one entry: leaves, and list items owned whole (with "."). A list
 * item is found by its key fields (k:), its value (v:) or its index (i:), in the object and in
 * the answer separately: the same item may sit at another index in each.
 */
function walk(
  set: FieldSet,
  actual: unknown,
  answer: unknown,
  id: string,
  pointer: string,
  visit: (leaf: Leaf) => void,
): void {
  for (const [key, child] of Object.entries(set)) {
    if (key === ".") continue;
    const kind = key.slice(0, 2);
    const arg = key.slice(2);
    let a: { value: unknown; at: string } | undefined;
    let d: unknown;
    let item = false;
    if (kind === "f:") {
      a = member(actual, arg);
      d = member(answer, arg)?.value;
    } else if (kind === "k:" || kind === "v:" || kind === "i:") {
      item = true;
      const match = itemMatcher(kind, arg, false);
      if (!match) continue;
      a = element(actual, match);
      // The server fills in key fields the answer may leave out (a port's protocol): an answer
      // item without them is the same item.
      d = (element(answer, match) ?? element(answer, itemMatcher(kind, arg, true)!))?.value;
    } else continue;
    const childId = `${id}\u0000${key}`;
    const childPointer = a ? `${pointer}/${a.at}` : "";
    const children = Object.keys(child ?? {}).filter((k) => k !== ".");
    if (!a) continue; // not in the object (any more): nothing to remove or compare
    // A leaf, or a list item that is in the object but not in the answer: the whole of it counts.
    if (children.length === 0 || (item && d === undefined && "." in (child ?? {}))) {
      visit({ id: childId, pointer: childPointer, actual: a.value, answer: d });
      continue;
    }
    walk(child!, a.value, d, childId, childPointer, visit);
  }
}

function member(obj: unknown, name: string): { value: unknown; at: string } | undefined {
  if (obj === null || typeof obj !== "object" || Array.isArray(obj) || !Object.hasOwn(obj, name)) return undefined;
  return { value: (obj as Json)[name], at: escapePointer(name) };
}

type Matcher = (item: unknown, index: number) => boolean;

function itemMatcher(kind: string, arg: string, defaulted: boolean): Matcher | undefined {
  if (kind === "i:") {
    const n = Number(arg);
    return Number.isInteger(n) ? (_item, i) => i === n : undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(arg);
  } catch {
    return undefined;
  }
  if (kind === "v:") return (item) => sameValue(item, parsed);
  if (parsed === null || typeof parsed !== "object") return undefined;
  const keys = Object.entries(parsed as Json);
  return (item) =>
    item !== null &&
    typeof item === "object" &&
    keys.every(([k, v]) => sameValue((item as Json)[k], v) || (defaulted && (item as Json)[k] === undefined));
}

function element(list: unknown, match: Matcher): { value: unknown; at: string } | undefined {
  if (!Array.isArray(list)) return undefined;
  const i = list.findIndex(match);
  return i < 0 ? undefined : { value: list[i], at: String(i) };
}

function sameValue(a: unknown, b: unknown): boolean {
  return (
    a === b ||
    (a !== null &&
      b !== null &&
      typeof a === "object" &&
      typeof b === "object" &&
      JSON.stringify(a) === JSON.stringify(b))
  );
}

/** The API server stores empty lists and maps as absent: an empty value is no value. */
function absent(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === "object" && isSubset(v, undefined));
}

function escapePointer(segment: string): string {
  return segment.replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * Pointers ready for one JSON patch: a pointer inside another one removed is dropped, and a
 * list's later items go first, so earlier removals do not shift the indices of later ones.
 */
export function outermostFirstLast(pointers: string[]): string[] {
  const set = new Set(pointers);
  const kept = pointers.filter((p) => {
    for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1)) if (set.has(p.slice(0, i))) return false;
    return true;
  });
  return kept.sort(comparePointersDescending);
}

function comparePointersDescending(x: string, y: string): number {
  const a = x.split("/");
  const b = y.split("/");
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] === b[i]) continue;
    const na = /^\d+$/.test(a[i]!) ? Number(a[i]) : NaN;
    const nb = /^\d+$/.test(b[i]!) ? Number(b[i]) : NaN;
    if (!Number.isNaN(na) && !Number.isNaN(nb)) return nb - na;
    return a[i]! < b[i]! ? 1 : -1;
  }
  return b.length - a.length;
}
