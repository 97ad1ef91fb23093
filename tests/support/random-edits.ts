// Seeded random objects and edit lists for the differential tests of generated edit code
// (core/reflection objects.test.ts, finish-jit.test.ts): the same lists every run, so that a
// failure replays. Keys include ones that need escaping in a pointer and ones that look like
// array positions; half the pointers follow members that exist, so edits reach shared
// containers deep down.
import type { Edit } from "../../core/reflection/abi.ts";

export function randomEdits(seed: number) {
  const rand = (n: number) => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return (seed >>> 16) % n; };
  const keys = ["a", "b", "c", "x y", "lab/el", "~t", "0", "ports"];
  const tree = (depth: number): unknown => {
    const kind = depth === 0 ? 3 : rand(4);
    if (kind === 0) return Array.from({ length: rand(4) }, () => tree(depth - 1));
    if (kind === 1 || kind === 2) {
      const o: Record<string, unknown> = {};
      for (let i = rand(5); i > 0; i--) o[keys[rand(keys.length)]!] = tree(depth - 1);
      return o;
    }
    return [1, "s", null, true][rand(4)];
  };
  const seg = (k: string) => k.replaceAll("~", "~0").replaceAll("/", "~1");
  /** A pointer into `obj`, `prefix` (escaped segments) first. */
  const pointer = (obj: unknown, prefix = "") => {
    let p = prefix;
    let cur = obj;
    for (const s of prefix.split("/").slice(1)) cur = cur !== null && typeof cur === "object" ? (cur as Record<string, unknown>)[s] : undefined;
    for (let i = 1 + rand(3); i > 0; i--) {
      const members = cur !== null && typeof cur === "object" ? Object.keys(cur) : [];
      const k = members.length > 0 && rand(2) === 0 ? members[rand(members.length)]! : rand(3) === 0 ? String(rand(3)) : keys[rand(keys.length)]!;
      p += "/" + seg(k);
      cur = cur !== null && typeof cur === "object" ? (cur as Record<string, unknown>)[k] : undefined;
    }
    return p;
  };
  /** One to five edits (removals and sets) of `obj`, under `prefix` when given. */
  const list = (obj: unknown, prefix = ""): Edit[] => Array.from({ length: 1 + rand(5) }, () => (rand(2) === 0 ? [pointer(obj, prefix)] : [pointer(obj, prefix), tree(1)]) as Edit);
  return { rand, tree, list };
}
