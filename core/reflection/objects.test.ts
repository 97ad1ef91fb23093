// applyEdits: the host's side of an "edits" answer. Cached source objects are never changed,
// removals build copies, and edits apply in order.
import { describe, expect, test } from "bun:test";
import type { Edit, KubeObject } from "./abi.ts";
import { EditShapeError, applyEdits, baseCopy } from "./objects.ts";
import type { ServiceSpec } from "../kube/types.ts";

const source = (): KubeObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "web", namespace: "a", labels: { app: "web" } },
  spec: {
    clusterIP: "10.0.0.1",
    clusterIPs: ["10.0.0.1"],
    type: "ClusterIP",
    ports: [
      { port: 80, nodePort: 30080 },
      { port: 443, nodePort: 30443 },
    ],
  },
  status: { loadBalancer: {} },
});

describe("applyEdits", () => {
  test("several removals from one object in a row", () => {
    const src = source();
    const out = applyEdits(baseCopy(src, "b", "home", false), [
      ["/spec/clusterIP"],
      ["/spec/missing"],
      ["/spec/clusterIPs"],
    ]);
    expect(out.spec).toEqual({
      type: "ClusterIP",
      ports: [
        { port: 80, nodePort: 30080 },
        { port: 443, nodePort: 30443 },
      ],
    });
    expect((src.spec as ServiceSpec).clusterIP).toBe("10.0.0.1"); // the cached object is untouched
  });

  test("removals inside array members, and of array members, in order", () => {
    const src = source();
    const out = applyEdits(baseCopy(src, "b", "home", false), [
      ["/spec/ports/0/nodePort"],
      ["/spec/ports/1/nodePort"],
      ["/spec/ports/0"],
    ]);
    expect((out.spec as ServiceSpec).ports).toEqual([{ port: 443 }]);
    expect((src.spec as ServiceSpec).ports![0]!.nodePort).toBe(30080);
  });

  test("a top-level removal answers a new root; the base keeps its members", () => {
    const base = baseCopy(source(), "b", "home", true);
    const out = applyEdits(base, [["/status"]]);
    expect(out).not.toHaveProperty("status");
    expect(out.metadata?.namespace).toBe("b");
    expect(base).toHaveProperty("status");
  });

  test("a set after a removal, under a missing parent, and on a label with an escaped key", () => {
    const src = source();
    const edits: Edit[] = [
      ["/spec/clusterIP"],
      ["/spec/externalName", "x.example.com"],
      ["/spec/new/deep", 1],
      ["/metadata/labels/liqo.io~1x", "y"],
    ];
    const out = applyEdits(baseCopy(src, "b", "home", false), edits);
    expect(out.spec).toMatchObject({ externalName: "x.example.com", new: { deep: 1 } });
    expect(out.spec).not.toHaveProperty("clusterIP");
    expect(out.metadata?.labels?.["liqo.io/x"]).toBe("y");
    expect(src.metadata?.labels).toEqual({ app: "web" });
  });

  test("removing an absent path, or under a missing parent, changes nothing", () => {
    const base = baseCopy(source(), "b", "home", false);
    const out = applyEdits(base, [["/spec/nothing"], ["/nothing/here"]]);
    expect(out).toBe(base);
    expect(out.spec).toEqual(source().spec);
  });

  test("a member set on what is an array in this object is refused with the path, as the object's shape", () => {
    expect(() => applyEdits(baseCopy(source(), "b", "home", false), [["/spec/ports/x", 1]])).toThrow(EditShapeError);
    expect(() => applyEdits(baseCopy(source(), "b", "home", false), [["/spec/ports/x", 1]])).toThrow(
      /\/spec\/ports\/x/,
    );
  });
  test("removing a member that is no index from an array removes nothing (it is absent)", () => {
    const src = source();
    src.spec = [{ clusterIP: "x" }];
    const out = applyEdits(baseCopy(src, "b", "home", false), [["/spec/clusterIP"], ["/spec/clusterIPs"]]);
    expect(out.spec).toEqual([{ clusterIP: "x" }]);
  });
  test("one compiled edit list applied to many objects: each result is its own, sources untouched", () => {
    // The host applies one parsed answer (its edits compiled once) to every object of a run.
    const edits: Edit[] = [
      ["/spec/clusterIP"],
      ["/spec/clusterIPs"],
      ["/spec/ports/1/nodePort"],
      ["/spec/ports/0/port", 8080],
    ];
    const a = source();
    const b = source();
    (b.spec as ServiceSpec).ports![1]!.nodePort = 31111;
    const outA = applyEdits(baseCopy(a, "x", "home", false), edits);
    const outB = applyEdits(baseCopy(b, "x", "home", false), edits);
    expect((outA.spec as ServiceSpec).ports).toEqual([{ port: 8080, nodePort: 30080 }, { port: 443 }]);
    expect((outB.spec as ServiceSpec).ports).toEqual([{ port: 8080, nodePort: 30080 }, { port: 443 }]);
    expect((outA.spec as ServiceSpec).ports).not.toBe((outB.spec as ServiceSpec).ports);
    expect((a.spec as ServiceSpec).ports).toEqual([
      { port: 80, nodePort: 30080 },
      { port: 443, nodePort: 30443 },
    ]);
    expect((b.spec as ServiceSpec).ports![1]!.nodePort).toBe(31111);
    // A member the removal does not find leaves its container shared, not copied.
    const c = source();
    delete (c.spec as ServiceSpec).clusterIP;
    delete (c.spec as ServiceSpec).clusterIPs;
    const outC = applyEdits(baseCopy(c, "x", "home", false), [["/spec/clusterIP"], ["/spec/clusterIPs"]]);
    expect(outC.spec).toBe(c.spec);
  });
});

describe("applyEdits: hostile keys are data", () => {
  test("a key that looks like code is a member name, never code", () => {
    const evil = `"]; globalThis.pwned = 1; x["`;
    const out = applyEdits(baseCopy(source(), "b", "home", false), [[`/spec/${evil}`, 2]]);
    expect((out.spec as ServiceSpec)[evil]).toBe(2);
    expect(Reflect.get(globalThis, "pwned")).toBeUndefined();
  });
});
