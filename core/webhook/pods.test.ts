import { describe, expect, test } from "bun:test";
import { allowedTerms, hostNamespacesProblem, mutatePodSpec, specPatch } from "./pods.ts";

const virtual = { key: "liqo.io/type", operator: "In", values: ["virtual-node"] };
const notVirtual = { key: "liqo.io/type", operator: "NotIn", values: ["virtual-node"] };
const north = { matchExpressions: [{ key: "topology.liqo.io/region", operator: "In", values: ["north"] }] };
const base = { containers: [{ name: "c", image: "nginx" }] };
// biome-ignore lint/suspicious/noExplicitAny: a pod spec the assertions walk, including fields the type leaves out
const required = (spec: any) =>
  spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;

describe("allowedTerms", () => {
  test("LocalAndRemote with no selector constrains nothing", () =>
    expect(allowedTerms("LocalAndRemote", [])).toEqual([]));
  test("Local allows only non-virtual nodes", () =>
    expect(allowedTerms("Local", [north])).toEqual([{ matchExpressions: [notVirtual] }]));
  test("Remote with no selector allows every virtual node", () =>
    expect(allowedTerms("Remote", [])).toEqual([{ matchExpressions: [virtual] }]));
  test("Remote with a selector allows the selected virtual nodes", () => {
    expect(allowedTerms("Remote", [north])).toEqual([{ matchExpressions: [...north.matchExpressions, virtual] }]);
  });
  test("LocalAndRemote with a selector allows local nodes or the selected virtual nodes", () => {
    expect(allowedTerms("LocalAndRemote", [north])).toEqual([
      { matchExpressions: [notVirtual] },
      { matchExpressions: [...north.matchExpressions, virtual] },
    ]);
  });
});

describe("mutatePodSpec", () => {
  test("Remote adds the toleration and affinity to virtual nodes", () => {
    const out = mutatePodSpec(base, "Remote", []);
    expect(out.tolerations).toEqual([
      { key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" },
    ]);
    expect(required(out)).toEqual([{ matchExpressions: [virtual] }]);
  });
  test("Local adds no toleration", () => expect(mutatePodSpec(base, "Local", []).tolerations).toBeUndefined());
  test("the pod's own required terms keep holding", () => {
    const own = {
      ...base,
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: "disk", operator: "In", values: ["ssd"] }] }],
          },
        },
      },
    };
    expect(required(mutatePodSpec(own, "Remote", []))).toEqual([
      { matchExpressions: [{ key: "disk", operator: "In", values: ["ssd"] }, virtual] },
    ]);
  });
  test("an existing toleration is not duplicated, and the input is not changed", () => {
    const spec = {
      ...base,
      tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" }],
    };
    const out = mutatePodSpec(spec, "LocalAndRemote", []);
    expect(out.tolerations).toHaveLength(1);
    expect(mutatePodSpec(base, "Remote", []).tolerations).toHaveLength(1);
    // biome-ignore lint/suspicious/noExplicitAny: a pod spec the assertions walk, including fields the type leaves out
    expect((base as any).tolerations).toBeUndefined();
  });
});

describe("specPatch", () => {
  test("adds, replaces and removes top-level spec fields, escaping pointers", () => {
    expect(specPatch({ a: 1, b: 2, "x/y": 1 }, { a: 1, b: 3, c: 4 })).toEqual([
      { op: "replace", path: "/spec/b", value: 3 },
      { op: "remove", path: "/spec/x~1y" },
      { op: "add", path: "/spec/c", value: 4 },
    ]);
  });
  test("no change, no operations", () => expect(specPatch(base, structuredClone(base))).toEqual([]));
});

describe("hostNamespacesProblem", () => {
  test("Remote refuses a pod asking for host networking, naming what to change", () => {
    const p = hostNamespacesProblem({ ...base, hostNetwork: true, hostPID: true }, "Remote", "team");
    expect(p).toContain("hostNetwork, hostPID");
    expect(p).toContain("namespace team");
    expect(p).toContain("LocalAndRemote");
  });
  test("LocalAndRemote and Local admit it (it may run on a physical node)", () => {
    expect(hostNamespacesProblem({ ...base, hostIPC: true }, "LocalAndRemote", "team")).toBeUndefined();
    expect(hostNamespacesProblem({ ...base, hostIPC: true }, "Local", "team")).toBeUndefined();
  });
  test("hostNetwork: false is not a request", () =>
    expect(hostNamespacesProblem({ ...base, hostNetwork: false }, "Remote", "team")).toBeUndefined());
});
