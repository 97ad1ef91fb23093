import { describe, expect, test } from "bun:test";
import { parseQuantity } from "../../kube/quantity.ts";
import { freeFor, podRequests, summarizeUsage, zeroAmounts, type Amounts, type Node, type Pod } from "./offer.ts";
import {
  decideOffer,
  mustParseResourceAmounts,
  parseResourceAmounts,
  parseResourceFlag,
  resourceNameProblem,
  ResourceAmountError,
} from "./resources.ts";

const ready = [{ type: "Ready", status: "True" }];
const node = (name: string, allocatable: Record<string, string>): Node => ({
  metadata: { name },
  status: {
    allocatable: { cpu: "4", memory: "8Gi", pods: "110", "ephemeral-storage": "10Gi", ...allocatable },
    conditions: ready,
  },
});
const pod = (
  name: string,
  nodeName: string,
  c: { requests?: Record<string, string>; limits?: Record<string, string> }[],
): Pod => ({
  metadata: { name, namespace: "default" },
  spec: { nodeName, containers: c.map((resources) => ({ resources })) },
  status: { phase: "Running" },
});
const q = (text: string) => parseQuantity(text);

describe("extended resources in the offer", () => {
  const nodes = [
    node("gpu-node", { "example.com/dongle": "3", "hugepages-2Mi": "8Mi", "hugepages-1Gi": "0" }),
    node("plain", { "hugepages-2Mi": "0", "attachable-volumes-aws-ebs": "25" }),
  ];

  test("a named resource some offering node has is free as cpu is; one every node has none of, or a Kubernetes name, is not", () => {
    const pods = [pod("uses-one", "gpu-node", [{ limits: { "example.com/dongle": "1" } }])];
    const free = freeFor(summarizeUsage({ nodes, pods }), "rome-id");
    expect(free["example.com/dongle"]).toBe(q("2"));
    expect(free["hugepages-2Mi"]).toBe(q("8Mi"));
    expect(Object.keys(free).sort()).toEqual(
      ["cpu", "ephemeral-storage", "example.com/dongle", "hugepages-2Mi", "memory", "pods"].sort(),
    );
  });

  test("a percentage of devices is whole devices, of huge pages whole pages", () => {
    const free = summarizeUsage({ nodes, pods: [] }).left;
    const { hard } = decideOffer(free, 50);
    expect(hard["example.com/dongle"]).toBe("1"); // 1.5 rounds down
    expect(hard["hugepages-2Mi"]).toBe("4Mi");
    expect(decideOffer(free, 30).hard["hugepages-2Mi"]).toBe("2Mi"); // 2.4Mi: one whole 2Mi page
    expect(hard.cpu).toBe("4");
  });

  test("a pod's extended request counts from requests, else limits, as the scheduler does; init containers by their largest", () => {
    const p: Pod = {
      metadata: { name: "p" },
      spec: {
        nodeName: "n",
        containers: [
          { resources: { limits: { "nvidia.com/gpu": "1" } } },
          { resources: { requests: { "nvidia.com/gpu": "2" }, limits: { "nvidia.com/gpu": "2" } } },
        ],
        initContainers: [{ resources: { limits: { "nvidia.com/gpu": "4" } } }],
      },
    };
    expect(podRequests(p)["nvidia.com/gpu"]).toBe(q("4"));
    expect(podRequests(pod("x", "n", [{ limits: { "nvidia.com/gpu": "1" } }]))["nvidia.com/gpu"]).toBe(q("1"));
  });
});

describe("fixed offers and asked amounts", () => {
  const free: Amounts = { ...zeroAmounts(), cpu: q("8"), memory: q("16Gi"), pods: q("100"), "nvidia.com/gpu": q("4") };

  test("a fixed amount replaces the percentage for that resource only", () => {
    const { hard, grants } = decideOffer(
      free,
      50,
      new Map([
        ["cpu", q("1")],
        ["nvidia.com/gpu", q("3")],
      ]),
    );
    expect(hard).toMatchObject({ cpu: "1", memory: "8Gi", pods: "50", "nvidia.com/gpu": "3" });
    expect(grants).toEqual([]);
  });

  test("asked amounts get min(asked, rule); what was cut says capped; what was not asked follows the rule", () => {
    const asked = new Map([
      ["cpu", q("500m")],
      ["memory", q("32Gi")],
      ["example.com/dongle", q("1")],
    ]);
    const { hard, grants } = decideOffer(free, 50, new Map([["memory", q("10Gi")]]), asked);
    expect(hard).toMatchObject({
      cpu: "500m",
      memory: "10Gi",
      pods: "50",
      "nvidia.com/gpu": "2",
      "example.com/dongle": "0",
    });
    expect(grants).toEqual([
      { name: "cpu", asked: "500m", granted: "500m", capped: false },
      { name: "example.com/dongle", asked: "1", granted: "0", capped: true },
      { name: "memory", asked: "32Gi", granted: "10Gi", capped: true },
    ]);
  });
});

describe("bad names and amounts are refused, naming the field and the fix", () => {
  test.each([
    ["cpus", /unknown resource "cpus": did you mean "cpu"\?/],
    ["Memory", /did you mean "memory"/],
    ["pod", /did you mean "pods"/],
    [
      "gpu",
      /unknown resource "gpu": give cpu, memory, pods, ephemeral-storage, hugepages-<page size> or an extended resource with a domain \(e\.g\. nvidia\.com\/gpu\)/,
    ],
    ["hugepages-big", /not hugepages-<page size>/],
    ["kubernetes.io/foo", /Kubernetes domain/],
    ["example.com/", /not a resource name/],
    ["Example.com/x", /not a resource name/],
  ])("%p", (name, message) => {
    expect(resourceNameProblem(name)).toMatch(message);
    expect(() => mustParseResourceAmounts({ [name]: "1" }, "spec.offeredResources")).toThrow(
      /^spec\.offeredResources: /,
    );
  });

  test.each(["cpu", "memory", "pods", "ephemeral-storage", "hugepages-2Mi", "nvidia.com/gpu", "example.com/dongle"])(
    "%p is a resource",
    (name) => expect(resourceNameProblem(name)).toBeUndefined(),
  );

  test("negative, malformed and fractional amounts: every problem at once, each naming its resource", () => {
    const { amounts, errors } = parseResourceAmounts(
      { cpu: "-1", memory: "2x", pods: "1.5", "nvidia.com/gpu": "500m", "hugepages-2Mi": "3Mi", "example.com/d": "2" },
      "spec.offeredResources",
    );
    expect(errors).toEqual([
      'spec.offeredResources.cpu: "-1" is negative; give 0 or more',
      expect.stringMatching(/^spec\.offeredResources\.memory: "2x" is not a Kubernetes quantity/),
      'spec.offeredResources.pods: "1.5" is not a whole number of units',
      'spec.offeredResources.nvidia.com/gpu: "500m" is not a whole number of units',
      'spec.offeredResources.hugepages-2Mi: "3Mi" is not a whole number of pages of 2Mi',
    ]);
    expect([...amounts]).toEqual([["example.com/d", q("2")]]);
  });

  test("--resource name=quantity", () => {
    expect(parseResourceFlag("nvidia.com/gpu=2")).toEqual(["nvidia.com/gpu", "2"]);
    expect(() => parseResourceFlag("nvidia.com/gpu")).toThrow(/--resource "nvidia.com\/gpu": give name=quantity/);
    expect(() => parseResourceFlag("cpus=2")).toThrow(ResourceAmountError);
    expect(() => parseResourceFlag("cpus=2")).toThrow(/--resource: unknown resource "cpus": did you mean "cpu"/);
    expect(() => parseResourceFlag("example.com/d=-1")).toThrow(/--resource example.com\/d: "-1" is negative/);
  });
});
