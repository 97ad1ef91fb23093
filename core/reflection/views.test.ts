// The view trees (views.ts) and the generated replays that read cached objects through them
// (replay-jit.ts): a raw replay must answer, for every object, what the same log replayed on the
// object's projection (objects.ts project) answers. Differential, over seeded random objects,
// field lists and read logs recorded the way instance.ts records a live call.
import { describe, expect, test } from "bun:test";
import type { KubeObject } from "./abi.ts";
import { project } from "./objects.ts";
import { codeOf, generateReplay, replayReaders } from "./replay-jit.ts";
import { liveView, viewTree } from "./views.ts";

const readers = replayReaders({ identityIp: true, translateIp: (ip) => ip, lookup: () => null });

describe("viewTree", () => {
  test("no field list: the whole object, no tree", () => expect(viewTree(undefined)).toBeUndefined());
  test("the base projection: apiVersion, kind and metadata's name, namespace, labels, annotations", () => {
    const t = viewTree([])!;
    expect([...t.kids.keys()]).toEqual(["apiVersion", "kind", "metadata"]);
    expect(t.kids.get("apiVersion")).toBeNull();
    const m = t.kids.get("metadata")!;
    expect(m.always).toBe(true);
    expect([...m.kids.keys()]).toEqual(["name", "namespace", "labels", "annotations"]);
  });
  test("a declared field adds a node that is there only when a leaf under it is", () => {
    const spec = viewTree(["/spec/ports", "/spec/template/spec/volumes"])!.kids.get("spec")!;
    expect(spec.always).toBe(false);
    expect(spec.leaves).toEqual([["ports"], ["template", "spec", "volumes"]]);
  });
  test("escaped pointers are member names", () => {
    expect(viewTree(["/metadata/a~1b"])!.kids.get("metadata")!.kids.get("a/b")).toBeNull();
  });
  test("fields it does not model leave the replays on projections", () => {
    for (const fields of [["/metadata"], ["/spec", "/spec/ports"], ["/spec/ports", "/spec"], ["/metadata/labels/app"], ["/kind/x"], ["/spec/constructor"], ["/status/length"], ["/__proto__/x"], ["/spec/toString"]]) {
      expect(viewTree(fields)).toBeNull();
      expect(liveView(fields, undefined).trees).toBeNull();
    }
  });
  test("liveView: no tree is needed for a side sent whole", () => {
    expect(liveView(undefined, undefined).trees).toEqual({ source: null, target: null });
  });
});

// Seeded, so that a failure replays the same way.
let seed = 7;
const rand = (n: number) => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return (seed >>> 16) % n; };
const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;

const KEYS = ["spec", "ports", "status", "podIP", "name", "labels", "annotations", "metadata", "items", "0", "1", "x", "constructor", "__proto__", "length", "toString"];
const FIELD_SETS: string[][] = [[], ["/spec/ports"], ["/spec/ports", "/spec/x"], ["/status"], ["/spec/items", "/status/podIP"], ["/x/y/z"], ["/metadata/x"], ["/spec/ports/0"]];

function value(depth: number): unknown {
  const k = rand(depth > 2 ? 5 : 8);
  if (k === 0) return pick(["a", "10.0.0.1", "", "true"]);
  if (k === 1) return pick([0, 1, 30080, -3, 2.5]);
  if (k === 2) return pick([null, true, false]);
  if (k === 3 || k === 4) return undefined;
  if (k === 5) return Array.from({ length: rand(3) }, () => value(depth + 1));
  return obj(depth + 1);
}
function obj(depth: number): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = rand(4); i > 0; i--) { const k = pick(KEYS.filter((x) => x !== "__proto__")); const v = value(depth); if (v !== undefined) o[k] = v; }
  return o;
}
/** The object with one change somewhere: a member replaced, dropped or added; half the time on the way to a declared field. */
function changed(o: KubeObject, fields: string[]): KubeObject {
  const out = JSON.parse(JSON.stringify(o)) as Record<string, unknown>;
  if (fields.length > 0 && rand(4) === 0) {
    // Every declared leaf dropped, the containers on the way kept: the projection has none of them.
    for (const f of fields) {
      const segs = f.slice(1).split("/");
      let at: unknown = out;
      for (let i = 0; i < segs.length - 1 && at !== null && typeof at === "object"; i++) at = (at as Record<string, unknown>)[segs[i]!];
      if (at !== null && typeof at === "object" && !(segs.length === 2 && segs[0] === "metadata")) delete (at as Record<string, unknown>)[segs[segs.length - 1]!];
    }
    return out as KubeObject;
  }
  if (fields.length > 0 && rand(2) === 0) {
    const segs = pick(fields).slice(1).split("/");
    let at = out;
    const stop = rand(segs.length);
    for (let i = 0; i < stop && at[segs[i]!] !== null && typeof at[segs[i]!] === "object"; i++) at = at[segs[i]!] as Record<string, unknown>;
    let k = segs[Math.min(stop, segs.length - 1)]!;
    // metadata stays an object: the host refuses anything else before a call (tested below).
    if (at === out && k === "metadata") { at = out.metadata as Record<string, unknown>; k = "x"; }
    const c = rand(4);
    if (c === 0) delete at[k];
    else if (c === 1) at[k] = pick(["text", 3, null, [], {}]);
    else if (c === 2) at[k] = { [segs[segs.length - 1]!]: value(3) ?? 1 };
    else at[`${k}-other`] = 1;
    return out as KubeObject;
  }
  let cur = out;
  for (let depth = 0; depth < 4; depth++) {
    const keys = Object.keys(cur);
    if (keys.length === 0) break;
    const k = pick(keys);
    const v = cur[k];
    if (rand(3) > 0 && v !== null && typeof v === "object" && !Array.isArray(v)) { cur = v as Record<string, unknown>; continue; }
    const c = rand(3);
    if (c === 0 && k !== "metadata") delete cur[k];
    else if (c === 1) cur[pick(KEYS.filter((x) => x !== "__proto__" && x !== "metadata"))] = value(2) ?? null;
    else if (k !== "metadata") cur[k] = value(2) ?? "x";
    break;
  }
  return out as KubeObject;
}

function object(): KubeObject {
  const o = obj(1) as KubeObject;
  o.apiVersion = "v1";
  o.kind = "Thing";
  o.metadata = { name: "n", ...(rand(2) ? { labels: { a: "b" } } : {}), ...(rand(2) ? { x: value(2) } : {}) } as KubeObject["metadata"];
  return o;
}

/**
 * Reads an object the way a plugin does through the live host calls and records them in
 * instance.ts's log format ([op, handle, argument, answer] after the two root codes): values
 * get handles in order when their code is 4 or more (numbers, strings, arrays, objects).
 */
function recordReads(root: unknown): unknown[] {
  const vals: unknown[] = [undefined];
  const hand = (v: unknown) => { const c = codeOf(v); if (c >= 4) vals.push(v); return c; };
  const log: unknown[] = [hand(root), 0];
  for (let n = rand(12); n > 0; n--) {
    const h = 1 + rand(vals.length - 1);
    const v = vals[h];
    const op = rand(10);
    if (op < 6) {
      // Mostly members the value has (reads that find something), sometimes any name.
      const own = v !== null && typeof v === "object" ? Object.keys(v) : [];
      const k = own.length > 0 && rand(4) > 0 ? pick(own) : pick(KEYS);
      const r = readers.member(v as Record<string, unknown>, k);
      log.push(1, h, k, hand(r));
    }
    else if (op === 6) log.push(3, h, 0, readers.len(v));
    else if (op === 7) log.push(5, h, 0, readers.text(v));
    else if (op === 8) log.push(4, h, "a", v === "a" ? 1 : 0);
    else if (Array.isArray(v)) { const i = rand(3); const r = i < v.length ? v[i] : undefined; log.push(2, h, i, hand(r)); }
  }
  return log;
}

describe("raw replays answer what replays on projections answer", () => {
  test("random objects, field lists and read logs", () => {
    let generated = 0;
    let compared = 0;
    let hits = 0;
    for (let round = 0; round < 400; round++) {
      const fields = pick(FIELD_SETS);
      const trees = liveView(fields, undefined).trees!;
      const recordedOn = object();
      const log = recordReads(project(recordedOn, fields));
      const raw = generateReplay(log, readers, trees);
      const projected = generateReplay(log, readers)!;
      if (raw === null) continue; // the log read a made container whole: no raw replay
      generated++;
      // The object it was recorded on, and others: some share what was read, most do not.
      for (let i = 0; i < 30; i++) {
        const o = i === 0 ? recordedOn : i % 3 === 0 ? object() : changed(recordedOn, fields);
        const want = projected(project(o, fields), null);
        expect(raw(o, null)).toBe(want);
        compared++;
        if (want) hits++;
      }
    }
    // The comparison saw both answers, from many generated raw replays.
    expect(generated).toBeGreaterThan(100);
    expect(hits).toBeGreaterThan(500);
    expect(compared - hits).toBeGreaterThan(500);
  });
  test("a made container is there exactly when a declared leaf under it is", () => {
    const trees = liveView(["/spec/ports", "/spec/template/volumes"], undefined).trees!;
    const base = { apiVersion: "v1", kind: "X", metadata: { name: "n" } };
    const present = generateReplay([7, 0, 1, 1, "spec", 7], readers, trees)!;
    const absent = generateReplay([7, 0, 1, 1, "spec", 0], readers, trees)!;
    const cases: Array<[unknown, boolean]> = [
      [{ ports: [] }, true], [{ ports: null }, true], [{ template: { volumes: 0 } }, true],
      [{}, false], [{ other: 1 }, false], [{ template: {} }, false], [{ template: "x" }, false], ["text", false], [[], false], [null, false], [undefined, false],
    ];
    for (const [spec, there] of cases) {
      const o = { ...base, spec };
      expect(present(o, null)).toBe(there);
      expect(absent(o, null)).toBe(!there);
      // ...as the projection says.
      expect((project(o, ["/spec/ports", "/spec/template/volumes"]) as Record<string, unknown>).spec !== undefined).toBe(there);
    }
  });
  test("an object whose metadata is no object (the host refuses it before any call) is a miss, never a throw", () => {
    const log = [7, 0, 1, 1, "metadata", 7, 1, 2, "name", 5];
    const raw = generateReplay(log, readers, liveView([], undefined).trees!)!;
    expect(raw({ apiVersion: "v1", kind: "X", metadata: { name: "n" } }, null)).toBe(true);
    for (const metadata of [null, "text", 5, undefined]) expect(raw({ apiVersion: "v1", kind: "X", metadata }, null)).toBe(false);
  });
});
