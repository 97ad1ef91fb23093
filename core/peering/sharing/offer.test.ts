import { describe, expect, test } from "bun:test";
import {
  freeFor,
  freeResources,
  isOfferingNode,
  summarizeUsage,
  offeredQuota,
  parseSharingPercentage,
  podRequests,
  sameQuota,
  SharingPercentageError,
  type Node,
  type Pod,
} from "./offer.ts";
import { formatQuantity, parseQuantity, percentOf, QuantityError } from "../../kube/quantity.ts";

describe("quantities", () => {
  test.each([
    ["1", 1000n],
    ["250m", 250n],
    ["7800m", 7800n],
    ["1.5", 1500n],
    [".5", 500n],
    ["1Ki", 1024000n],
    ["31Gi", 31n * 2n ** 30n * 1000n],
    ["1k", 1_000_000n],
    ["1e3", 1_000_000n],
    ["128974848", 128974848000n],
    ["1n", 1n],
    ["0", 0n],
  ] as const)("%s parses to %p milli-units", (text, milli) => expect(parseQuantity(text)).toBe(milli));
  test("numbers parse as well as text", () => expect(parseQuantity(110)).toBe(110_000n));
  test.each(["abc", "", "1.2.3", "5 Gi", "Gi", "1Zi"])("%p is refused with an example of a valid one", (text) => {
    expect(() => parseQuantity(text, "node n1 allocatable")).toThrow(QuantityError);
    expect(() => parseQuantity(text, "node n1 allocatable")).toThrow(
      /node n1 allocatable: .* is not a Kubernetes quantity \(examples: 500m/,
    );
  });
  test("cpu formats as cores or millicores", () => {
    expect(formatQuantity(4000n, "cpu")).toBe("4");
    expect(formatQuantity(3900n, "cpu")).toBe("3900m");
  });
  test("bytes format with the largest exact binary suffix", () => {
    expect(formatQuantity(parseQuantity("15.5Gi"), "bytes")).toBe("15872Mi");
    expect(formatQuantity(parseQuantity("16Gi"), "bytes")).toBe("16Gi");
    expect(formatQuantity(1001_000n, "bytes")).toBe("1001");
  });
  test("percentages round down", () => {
    expect(percentOf(7800n, 50)).toBe(3900n);
    expect(percentOf(1000n, 33.3)).toBe(333n);
    expect(percentOf(-5n, 50)).toBe(0n);
  });
});

describe("sharing percentage", () => {
  test.each([
    [0, 0],
    [100, 100],
    ["30", 30],
    [12.5, 12.5],
  ] as const)("%p is accepted", (v, n) => expect(parseSharingPercentage(v)).toBe(n));
  test.each([-1, 101, "abc", "", NaN, undefined, "50%"])("%p is refused, naming the flag and the range", (v) => {
    expect(() => parseSharingPercentage(v)).toThrow(SharingPercentageError);
    expect(() => parseSharingPercentage(v)).toThrow(/--sharing-percentage .* give a number from 0 to 100/);
  });
});

const ready = [{ type: "Ready", status: "True" }];
const node = (name: string, extra: Partial<Node> = {}, labels: Record<string, string> = {}): Node => ({
  metadata: { name, labels },
  status: {
    allocatable: { cpu: "7800m", memory: "31Gi", pods: "110", "ephemeral-storage": "95Gi" },
    conditions: ready,
  },
  ...extra,
});
const pod = (
  name: string,
  nodeName: string | undefined,
  requests: Record<string, string>,
  extra: Partial<Pod["metadata"]> = {},
  phase = "Running",
): Pod => ({
  metadata: { name, namespace: "default", ...extra },
  spec: { nodeName, containers: [{ resources: { requests } }] },
  status: { phase },
});

describe("offering nodes", () => {
  test("a ready physical node offers", () => expect(isOfferingNode(node("n1"))).toBe(true));
  test("a virtual node does not", () =>
    expect(isOfferingNode(node("liqo-milan", {}, { "liqo.io/type": "virtual-node" }))).toBe(false));
  test("a cordoned node does not", () =>
    expect(isOfferingNode(node("n1", { spec: { unschedulable: true } }))).toBe(false));
  test("a NotReady node does not", () =>
    expect(
      isOfferingNode(node("n1", { status: { allocatable: {}, conditions: [{ type: "Ready", status: "False" }] } })),
    ).toBe(false));
});

describe("pod requests", () => {
  test("containers add up; the largest init container counts when bigger; overhead adds", () => {
    const p: Pod = {
      metadata: { name: "p" },
      spec: {
        nodeName: "n1",
        containers: [
          { resources: { requests: { cpu: "100m", memory: "64Mi" } } },
          { resources: { requests: { cpu: "200m" } } },
        ],
        initContainers: [{ resources: { requests: { cpu: "1", memory: "32Mi" } } }],
        overhead: { cpu: "10m" },
      },
    };
    const r = podRequests(p);
    expect(r.cpu).toBe(1010n);
    expect(r.memory).toBe(parseQuantity("64Mi"));
    expect(r.pods).toBe(1000n);
  });
  test("a limit without a request counts as the request", () => {
    expect(
      podRequests({ metadata: { name: "p" }, spec: { containers: [{ resources: { limits: { cpu: "2" } } }] } }).cpu,
    ).toBe(2000n);
  });
  test("a bad quantity names the pod", () =>
    expect(() => podRequests(pod("bad", "n1", { cpu: "lots" }))).toThrow(/pod default\/bad/));
});

describe("free resources and the offer", () => {
  const nodes = [
    node("n1"),
    node("n2"),
    node("vk", {}, { "liqo.io/type": "virtual-node" }),
    node("cordoned", { spec: { unschedulable: true } }),
  ];
  test("sum of the offering nodes' allocatable when nothing runs", () => {
    const free = freeResources({ nodes, pods: [], consumerClusterId: "rome-id" });
    expect(offeredQuota(free, 100)).toEqual({
      cpu: "15600m",
      memory: "62Gi",
      pods: "220",
      "ephemeral-storage": "190Gi",
    });
    expect(offeredQuota(free, 50)).toEqual({ cpu: "7800m", memory: "31Gi", pods: "110", "ephemeral-storage": "95Gi" });
  });
  test("running pods on offering nodes are subtracted; pending, finished and virtual-node pods are not", () => {
    const pods = [
      pod("a", "n1", { cpu: "1", memory: "1Gi" }),
      pod("pending", undefined, { cpu: "4" }),
      pod("done", "n1", { cpu: "4" }, {}, "Succeeded"),
      pod("offloaded-away", "vk", { cpu: "4" }),
      pod("on-cordoned", "cordoned", { cpu: "4" }),
    ];
    const q = offeredQuota(freeResources({ nodes, pods, consumerClusterId: "rome-id" }), 100);
    expect(q.cpu).toBe("14600m");
    expect(q.memory).toBe("61Gi");
    expect(q.pods).toBe("219");
  });
  test("the requester's own offloaded pods do not shrink its offer; another consumer's do", () => {
    const shadow = (name: string, origin: string) =>
      pod(
        name,
        "n1",
        { cpu: "2" },
        { labels: { "liqo.io/managed-by": "shadowpod", "liqo.io/origin-cluster-id": origin } },
      );
    const pods = [shadow("mine", "rome-id"), shadow("theirs", "paris-id")];
    expect(offeredQuota(freeResources({ nodes, pods, consumerClusterId: "rome-id" }), 100).cpu).toBe("13600m");
    expect(offeredQuota(freeResources({ nodes, pods, consumerClusterId: "paris-id" }), 100).cpu).toBe("13600m");
    expect(offeredQuota(freeResources({ nodes, pods, consumerClusterId: "oslo-id" }), 100).cpu).toBe("11600m");
  });
  test("one usage summary gives each consumer the same offer as computing it alone", () => {
    const shadow = (name: string, origin: string) =>
      pod(
        name,
        "n1",
        { cpu: "2" },
        { labels: { "liqo.io/managed-by": "shadowpod", "liqo.io/origin-cluster-id": origin } },
      );
    const pods = [shadow("mine", "rome-id"), shadow("theirs", "paris-id"), pod("local", "n2", { cpu: "1" })];
    const usage = summarizeUsage({ nodes, pods });
    for (const id of ["rome-id", "paris-id", "oslo-id"])
      expect(freeFor(usage, id)).toEqual(freeResources({ nodes, pods, consumerClusterId: id }));
    expect(offeredQuota(freeFor(usage, "oslo-id"), 100).cpu).toBe("10600m");
  });
  test("without the origin label, the twin namespace's remote-cluster-id tells whose pod it is", () => {
    const p = pod("mine", "n1", { cpu: "2" }, { namespace: "twin", labels: { "liqo.io/managed-by": "shadowpod" } });
    const labels = (ns: string) => (ns === "twin" ? { "liqo.io/remote-cluster-id": "rome-id" } : undefined);
    expect(
      offeredQuota(freeResources({ nodes, pods: [p], consumerClusterId: "rome-id", namespaceLabels: labels }), 100).cpu,
    ).toBe("15600m");
  });
  test("a pod in rome's twin namespace that claims turin's origin is still rome's: the namespace decides", () => {
    const p = pod(
      "forged",
      "n1",
      { cpu: "2" },
      { namespace: "twin", labels: { "liqo.io/managed-by": "shadowpod", "liqo.io/origin-cluster-id": "turin-id" } },
    );
    const labels = (ns: string) => (ns === "twin" ? { "liqo.io/remote-cluster-id": "rome-id" } : undefined);
    const offer = (consumer: string) =>
      offeredQuota(freeResources({ nodes, pods: [p], consumerClusterId: consumer, namespaceLabels: labels }), 100).cpu;
    // rome's own pod is added back for rome; for turin it is another's, and takes from its offer.
    expect(offer("rome-id")).toBe("15600m");
    expect(offer("turin-id")).toBe("13600m");
  });
  test("over-committed nodes offer zero, never a negative quantity", () => {
    const q = offeredQuota(
      freeResources({ nodes: [node("n1")], pods: [pod("big", "n1", { cpu: "9" })], consumerClusterId: "x" }),
      50,
    );
    expect(q.cpu).toBe("0");
  });
  test("percentages round down to whole pods and bytes", () => {
    const q = offeredQuota(freeResources({ nodes: [node("n1")], pods: [], consumerClusterId: "x" }), 33);
    expect(q.pods).toBe("36");
    expect(q.cpu).toBe("2574m");
  });
  test("sameQuota compares amounts, not spellings", () => {
    expect(sameQuota({ cpu: "4", memory: "1Gi" }, { cpu: "4000m", memory: "1024Mi" })).toBe(true);
    expect(sameQuota({ cpu: "4" }, { cpu: "4", memory: "1Gi" })).toBe(false);
    expect(sameQuota(undefined, { cpu: "4" })).toBe(false);
  });
});
