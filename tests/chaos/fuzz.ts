// Hostile variants of valid objects, as a peer could write them within its rights: random fields
// replaced by wrong types, huge strings, deep nesting or unicode, removed, or added where the schema
// has none. Seeded, so a failing case can be replayed; each variant says what was done to it.

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function nested(depth: number): Json {
  let v: Json = "bottom";
  for (let i = 0; i < depth; i++) v = { deeper: v };
  return v;
}

/** The hostile values, each with the name a failure report uses. */
export const HOSTILE_VALUES: [string, () => Json][] = [
  ["a 100 KB string", () => "x".repeat(100_000)],
  ["unicode with a NUL and a right-to-left override", () => "名前😀\u202e\u0000ñ"],
  ["a number", () => 1e308],
  ["a negative number", () => -1],
  ["a boolean", () => true],
  ["null", () => null],
  ["an empty list", () => []],
  ["a list of 1,000 strings", () => Array.from({ length: 1000 }, (_, i) => `item-${i}`)],
  ["an object nested 60 deep", () => nested(60)],
  ["an empty object", () => ({})],
  ["a cluster ID of someone else", () => "00000000-0000-0000-0000-000000000000"],
];

/** Every path (list of keys) to a value under `root`, objects and lists included. */
export function paths(root: Json, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [];
  if (root && typeof root === "object") {
    const entries: [string | number, Json][] = Array.isArray(root) ? root.map((v, i) => [i, v]) : Object.entries(root);
    for (const [k, v] of entries) {
      out.push([...prefix, k]);
      out.push(...paths(v, [...prefix, k]));
    }
  }
  return out;
}

function parentOf(root: Json, path: (string | number)[]): Record<string | number, Json> {
  let cur = root as Record<string | number, Json>;
  for (const k of path.slice(0, -1)) cur = cur[k] as Record<string | number, Json>;
  return cur;
}

/**
 * 1–4 mutations of `spec` (and of the labels), on a copy. Returns the variant and what was done,
 * for instance `set spec.clusterIdentity.clusterID to a number`.
 */
export function mutate<T extends { spec?: unknown; metadata: { labels?: Record<string, string> } }>(
  base: T,
  rand: () => number,
): { object: T; done: string[] } {
  const object = structuredClone(base) as T & { spec: Json };
  const done: string[] = [];
  const n = 1 + Math.floor(rand() * 4);
  for (let i = 0; i < n; i++) {
    const all = paths(object.spec).map((p) => ["spec", ...p]);
    const pick = <V>(xs: V[]) => xs[Math.floor(rand() * xs.length)]!;
    const op = rand();
    if (op < 0.6 && all.length) {
      const path = pick(all);
      const [name, value] = pick(HOSTILE_VALUES);
      parentOf(object as unknown as Json, path)[path.at(-1)!] = value();
      done.push(`set ${path.join(".")} to ${name}`);
    } else if (op < 0.8 && all.length) {
      const path = pick(all);
      const parent = parentOf(object as unknown as Json, path);
      if (Array.isArray(parent)) parent.splice(Number(path.at(-1)), 1);
      else delete parent[path.at(-1)!];
      done.push(`removed ${path.join(".")}`);
    } else if (op < 0.9) {
      const [name, value] = pick(HOSTILE_VALUES);
      (object.spec as Record<string, Json>)[`unknown${i}`] = value();
      done.push(`added spec.unknown${i} as ${name}`);
    } else {
      object.metadata.labels = { ...object.metadata.labels, "liqo.io/fuzz": "名前" };
      done.push("a label value that is not a label value");
    }
  }
  return { object, done };
}
