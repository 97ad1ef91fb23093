import { describe, expect, test } from "bun:test";
import { isShadowPodControlled } from "../apis/virtualkubelet/shadowpod.ts";
import { PHYSICAL_NODES_ONLY, providerPodSpec } from "./placement.ts";

const notVirtual = PHYSICAL_NODES_ONLY.matchExpressions![0]!;
const containers = [{ name: "web", image: "nginx" }];
const ours = { key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" };
const user = { key: "dedicated", operator: "Equal", value: "gpu", effect: "NoSchedule" };
// biome-ignore lint/suspicious/noExplicitAny: a pod spec the helper walks down to its node affinity terms
const terms = (spec: Record<string, any>) =>
  spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;

describe("providerPodSpec: a peer's pod runs on physical nodes only", () => {
  test("a pod without affinity must avoid virtual nodes", () =>
    expect(terms(providerPodSpec({ containers }))).toEqual([{ matchExpressions: [notVirtual] }]));

  test("each of the pod's own terms keeps holding, ANDed with the rule", () => {
    const own = [
      { matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }] },
      { matchFields: [{ key: "metadata.name", operator: "In", values: ["n1"] }] },
    ];
    const spec = providerPodSpec({
      containers,
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: own } } },
    });
    expect(terms(spec)).toEqual([
      { matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }, notVirtual] },
      { matchExpressions: [notVirtual], matchFields: [{ key: "metadata.name", operator: "In", values: ["n1"] }] },
    ]);
  });

  test("a term that asks for virtual nodes becomes one no node meets (the pod stays Pending, never chained)", () => {
    const wantsVirtual = [{ matchExpressions: [{ key: "liqo.io/type", operator: "In", values: ["virtual-node"] }] }];
    const spec = providerPodSpec({
      containers,
      affinity: {
        nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: wantsVirtual } },
      },
    });
    expect(terms(spec)).toEqual([{ matchExpressions: [...wantsVirtual[0]!.matchExpressions, notVirtual] }]);
  });

  test("preferred terms and pod affinity are kept as they are", () => {
    const preferred = [
      { weight: 1, preference: { matchExpressions: [{ key: "disk", operator: "In", values: ["ssd"] }] } },
    ];
    const podAffinity = { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: "zone" }] };
    const spec = providerPodSpec({
      containers,
      affinity: { podAffinity, nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: preferred } },
    });
    expect(spec.affinity).toEqual({
      podAffinity,
      nodeAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: preferred,
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [notVirtual] }] },
      },
    });
  });

  const tolerationCases: [string, unknown[] | undefined, unknown[] | undefined][] = [
    ["liqo's toleration goes, the user's stay", [ours, user], [user]],
    ["liqo's with another operator or value goes too", [{ ...ours, operator: "Equal", value: "true" }], undefined],
    ["no tolerations stay none", undefined, undefined],
    ["the user's alone are kept", [user], [user]],
  ];
  for (const [name, input, expected] of tolerationCases) {
    test(`tolerations: ${name}`, () =>
      expect(providerPodSpec({ containers, tolerations: input }).tolerations).toEqual(expected));
  }

  test("nodeName is dropped: a peer cannot bind its pod to a node here (a virtual one least of all)", () =>
    expect(providerPodSpec({ containers, nodeName: "liqo-rome" })).not.toHaveProperty("nodeName"));

  test("nodeSelector (a VirtualNode's patch) is kept", () =>
    expect(providerPodSpec({ containers, nodeSelector: { pool: "a" } }).nodeSelector).toEqual({ pool: "a" }));

  test("the input is not changed", () => {
    const input = { containers, nodeName: "x", tolerations: [ours] };
    const copy = structuredClone(input);
    providerPodSpec(input);
    expect(input).toEqual(copy);
  });

  test("a missing spec gives the rule alone", () =>
    expect(providerPodSpec(undefined)).toEqual({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [notVirtual] }] },
        },
      },
    }));
});

describe("isShadowPodControlled", () => {
  const ref = {
    apiVersion: "virtualkubelet.liqo.io/v1alpha1",
    kind: "ShadowPod",
    name: "p",
    uid: "u",
    controller: true,
  };
  const cases: [string, Record<string, unknown>, boolean][] = [
    ["its controlling ShadowPod", { ownerReferences: [ref] }, true],
    ["a ShadowPod that does not control it", { ownerReferences: [{ ...ref, controller: false }] }, false],
    ["a ShadowPod of another group", { ownerReferences: [{ ...ref, apiVersion: "example.com/v1" }] }, false],
    ["a ReplicaSet", { ownerReferences: [{ ...ref, kind: "ReplicaSet", apiVersion: "apps/v1" }] }, false],
    ["no owner", {}, false],
  ];
  for (const [name, metadata, expected] of cases)
    test(name, () => expect(isShadowPodControlled(metadata)).toBe(expected));
});
