// Generated finishers (finish-jit.ts) against finishPlan (finish.ts): for every plan a finisher is
// made for, the same Decision (or both refuse), and the cached source object never changes.
// Differential over seeded random objects and edit lists, for a whole copy and a status write.
import { describe, expect, test } from "bun:test";
import { randomEdits } from "../../tests/support/random-edits.ts";
import type { Edit, KubeObject, Resource } from "./abi.ts";
import { generateFinisher } from "./finish-jit.ts";
import { finishPlan, planOf, type CallFacts } from "./finish.ts";

const ctx = { localClusterId: "home", remoteClusterId: "away", localNamespace: "a", remoteNamespace: "a-home" } as CallFacts["ctx"];
const configMaps: Resource = { group: "", version: "v1", kind: "ConfigMap", direction: "forward", namespaced: true };
const pods: Resource = { group: "", version: "v1", kind: "Pod", direction: "both", namespaced: true };
const volumes: Resource = { group: "", version: "v1", kind: "PersistentVolume", direction: "backward", namespaced: false };

const outcome = (f: () => unknown): unknown => {
  try { return f(); } catch (err) { return "refused"; }
};

describe("generateFinisher", () => {
  const facts: CallFacts = { plugin: "t", direction: "forward", resource: configMaps, source: null, target: null, ctx };
  const shape = { statusOnly: false, keepStatus: false, namespace: "a-home", origin: "home" };
  test("skip and delete answer the decision and its reason", () => {
    const fin = generateFinisher(planOf({ decision: "delete", reason: "gone" }), shape)!;
    expect(fin({ metadata: { name: "x" } })).toEqual({ decision: "delete", reason: "gone" });
  });
  test("answers finishPlan checks each time get none: errors, whole objects, edits at the identity, status writes with other edits", () => {
    for (const answer of [{ error: "bad" }, { decision: "maybe" }, { decision: "apply", object: { kind: "ConfigMap" } }, { decision: "apply", edits: [["/metadata/name", "y"]] }, { decision: "apply", edits: "no" }]) {
      expect(generateFinisher(planOf(answer), shape)).toBeNull();
    }
    expect(generateFinisher(planOf({ decision: "apply", edits: [["/spec/x", 1]] }), { ...shape, statusOnly: true, keepStatus: true })).toBeNull();
  });
  test("a finisher's values are arguments, not code", () => {
    const evil = `"; globalThis.pwnedFinisher = 1; "`;
    const fin = generateFinisher(planOf({ decision: "apply", reason: evil, edits: [[`/data/${evil}`, evil]] }), { ...shape, namespace: evil, origin: evil })!;
    const d = fin({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" }, data: {} });
    expect((globalThis as Record<string, unknown>).pwnedFinisher).toBeUndefined();
    expect(d).toEqual({ decision: "apply", reason: evil, object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: evil, labels: { "liqo.io/managed-by": "reflection", "liqo.io/origin-cluster-id": evil } }, data: { [evil]: evil } } });
  });
});

describe("generated finishers: what is shared is copied before it is changed", () => {
  const shape = { statusOnly: false, keepStatus: false, namespace: "a-home", origin: "home" };
  const facts = (source: KubeObject): CallFacts => ({ plugin: "t", direction: "forward", resource: configMaps, source, target: null, ctx });
  const check = (spec: unknown, edits: Edit[]) => {
    const src = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "t" }, spec } as KubeObject;
    const before = JSON.stringify(src);
    const answer = JSON.stringify(edits);
    const plan = planOf({ decision: "apply", edits });
    const want = finishPlan(plan, facts(src));
    const fin = generateFinisher(plan, shape)!;
    for (let i = 0; i < 3; i++) expect(fin(src)).toEqual(want);
    expect(JSON.stringify(src)).toBe(before);
    expect(JSON.stringify(edits)).toBe(answer);
  };
  test("a set under a value the answer set: the answer's value is copied", () => check({ a: { w: 0 } }, [["/spec/a/z", 0], ["/spec/a", { x: 1 }], ["/spec/a/y", 2]]));
  test("a removal shifts an array: the element now at a copied position is copied too", () => {
    check({ arr: [{ n: 0 }, { n: 1 }, { n: 2 }] }, [["/spec/arr/0/y", 1], ["/spec/arr/0"], ["/spec/arr/0/z", 2]]);
  });
  test("an element appended from the answer, then changed: copied", () => check({ arr: [{ n: 0 }, { n: 1 }] }, [["/spec/arr/1/y", 1], ["/spec/arr/-", { n: 9 }], ["/spec/arr/2/z", 1]]));
  test("a member removed from an object, then the object changed again", () => check({ o: { p: { q: 1 }, r: { s: 1 } } }, [["/spec/o/r/t", 1], ["/spec/o/p"], ["/spec/o/r/u", 2]]));
});

describe("generated finishers answer what finishPlan answers", () => {
  const { tree, list } = randomEdits(23);
  const cases: Array<{ label: string; resource: Resource; direction: "forward" | "backward"; prefix: string }> = [
    { label: "a whole copy, forward", resource: configMaps, direction: "forward", prefix: "" },
    { label: "a cluster-scoped copy, backward (status kept)", resource: volumes, direction: "backward", prefix: "" },
    { label: "a status write (Pod, backward)", resource: pods, direction: "backward", prefix: "/status" },
  ];
  for (const c of cases) {
    test(`${c.label}: 300 random objects and edit lists, the source untouched`, () => {
      let made = 0;
      for (let n = 0; n < 300; n++) {
        const src = { apiVersion: "v1", kind: c.resource.kind, metadata: { name: "t", labels: { app: "x" }, ...(n % 2 ? { annotations: { note: "y" } } : {}) }, ...(tree(3) as object), status: tree(3) } as KubeObject;
        const before = JSON.stringify(src);
        const edits: Edit[] = list(src, c.prefix);
        const plan = planOf({ decision: "apply", reason: "r", edits });
        const facts: CallFacts = { plugin: "t", direction: c.direction, resource: c.resource, source: src, target: null, ctx };
        const backward = c.direction === "backward";
        const fin = generateFinisher(plan, {
          statusOnly: c.resource.kind === "Pod" && backward, keepStatus: backward,
          namespace: c.resource.namespaced === false ? undefined : backward ? ctx.localNamespace : ctx.remoteNamespace,
          origin: backward ? ctx.remoteClusterId : ctx.localClusterId,
        });
        if (fin === null) continue;
        made++;
        const answer = JSON.stringify(edits);
        const want = outcome(() => finishPlan(plan, facts));
        // Several times: each result is its own, and none changes the source or the answer's values.
        for (let i = 0; i < 3; i++) expect(outcome(() => fin(src))).toEqual(want);
        expect(JSON.stringify(src)).toBe(before);
        expect(JSON.stringify(edits)).toBe(answer);
      }
      expect(made).toBeGreaterThan(100); // the others touch the identity: finishPlan finishes those
    });
  }
});
