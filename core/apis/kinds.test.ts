// Every kind accepts its Liqo-shaped sample and rejects typical mistakes with the field's path.
import { describe, expect, test } from "bun:test";
import { allKinds, liqoResource } from "./kinds.ts";
import { sampleNamespaceOffloading, sampleNamespaceOffloadingStatus, samples } from "./samples.ts";

const kindOf = (name: string) => allKinds.find((k) => k.kind === name)!;

describe.each(allKinds.map((k) => k.kind))("%s", (kind) => {
  test("accepts its sample", () => {
    expect(kindOf(kind).issues(samples[kind]!())).toEqual([]);
  });

  test("parsing keeps the sample's spec values", () => {
    const parsed = kindOf(kind).parse(samples[kind]!()) as { spec: Record<string, unknown> };
    for (const [field, value] of Object.entries(samples[kind]!().spec as Record<string, unknown>)) {
      expect(parsed.spec[field]).toEqual(value);
    }
  });

  test("its ResourceRef is found by apiVersion and kind", () => {
    const sample = samples[kind]!();
    expect(liqoResource(sample.apiVersion!, kind)).toBe(kindOf(kind).resource);
  });
});

// biome-ignore lint/suspicious/noExplicitAny: the parsed CRD objects and mutations are walked by path, for every kind at once
type Mutation = [kind: string, what: string, change: (o: any) => void, path: string, message?: string];
const rejections: Mutation[] = [
  ["ResourceRequest", "missing authUrl", (o) => delete o.spec.authUrl, "spec.authUrl", "is required"],
  [
    "ResourceRequest",
    "unknown offerState",
    (o) => (o.status = { offerState: "Sent" }),
    "status.offerState",
    'must be one of None, Created (got "Sent")',
  ],
  [
    "ResourceRequest",
    "malformed withdrawalTimestamp",
    (o) => (o.spec.withdrawalTimestamp = "yesterday"),
    "spec.withdrawalTimestamp",
  ],
  ["ResourceOffer", "missing clusterId", (o) => delete o.spec.clusterId, "spec.clusterId", "is required"],
  [
    "ResourceOffer",
    "a quantity that is not one",
    (o) => (o.spec.resourceQuota.hard.cpu = "four"),
    "spec.resourceQuota.hard.cpu",
  ],
  ["ResourceOffer", "unknown phase", (o) => (o.status = { phase: "Approved" }), "status.phase"],
  [
    "ResourceOffer",
    "unknown virtualKubeletStatus",
    (o) => (o.status = { virtualKubeletStatus: "Running" }),
    "status.virtualKubeletStatus",
  ],
  [
    "NamespaceOffloading",
    "unknown podOffloadingStrategy",
    (o) => (o.spec.podOffloadingStrategy = "Anywhere"),
    "spec.podOffloadingStrategy",
    'must be one of Local, Remote, LocalAndRemote (got "Anywhere")',
  ],
  [
    "NamespaceOffloading",
    "unknown namespaceMappingStrategy",
    (o) => (o.spec.namespaceMappingStrategy = "SameName"),
    "spec.namespaceMappingStrategy",
  ],
  [
    "NamespaceOffloading",
    "clusterSelector without nodeSelectorTerms",
    (o) => (o.spec.clusterSelector = {}),
    "spec.clusterSelector.nodeSelectorTerms",
    "is required",
  ],
  [
    "NamespaceOffloading",
    "unknown selector operator",
    (o) => (o.spec.clusterSelector.nodeSelectorTerms[0].matchExpressions[0].operator = "Equals"),
    "spec.clusterSelector.nodeSelectorTerms.0.matchExpressions.0.operator",
  ],
  ["NamespaceOffloading", "missing spec", (o) => delete o.spec, "spec", "is required"],
  [
    "NamespaceOffloading",
    "condition status not True/False/Unknown",
    (o) => {
      o.status = sampleNamespaceOffloadingStatus();
      o.status.remoteNamespacesConditions["naples-7881be"][1].status = "Yes";
    },
    "status.remoteNamespacesConditions.naples-7881be.1.status",
  ],
  [
    "NamespaceMap",
    "unknown mapping phase",
    (o) => (o.status = { currentMapping: { "liqo-demo": { remoteNamespace: "liqo-demo", phase: "Created" } } }),
    "status.currentMapping.liqo-demo.phase",
  ],
  [
    "NamespaceMap",
    "a desired mapping that is not a string",
    (o) => (o.spec.desiredMapping["liqo-demo"] = 1),
    "spec.desiredMapping.liqo-demo",
  ],
  [
    "ShadowPod",
    "a pod without containers",
    (o) => (o.spec.pod.containers = []),
    "spec.pod.containers",
    "must list at least one container",
  ],
  [
    "ShadowPod",
    "a container without a name",
    (o) => delete o.spec.pod.containers[0].name,
    "spec.pod.containers.0.name",
    "is required",
  ],
  ["NetworkConfig", "a pod CIDR that is not a CIDR", (o) => (o.spec.podCIDR = "10.200.0.0"), "spec.podCIDR"],
  [
    "NetworkConfig",
    "an endpoint IP that is not an IP",
    (o) => (o.spec.endpointIP = "gateway.milan"),
    "spec.endpointIP",
  ],
  [
    "NetworkConfig",
    "missing backend_config",
    (o) => delete o.spec.backend_config,
    "spec.backend_config",
    "is required",
  ],
  ["NetworkConfig", "malformed cluster ID", (o) => (o.spec.cluster.clusterID = "-bad-"), "spec.cluster.clusterID"],
  [
    "TunnelEndpoint",
    "a NAT CIDR that is neither a CIDR nor None",
    (o) => (o.spec.remoteNATPodCIDR = "none"),
    "spec.remoteNATPodCIDR",
  ],
  [
    "TunnelEndpoint",
    "unknown connection status",
    (o) => (o.status = { connection: { status: "Up" } }),
    "status.connection.status",
  ],
  [
    "NatMapping",
    "missing clusterMappings",
    (o) => delete o.spec.clusterMappings,
    "spec.clusterMappings",
    "is required",
  ],
  ["IpamStorage", "a pool that is not a CIDR", (o) => (o.spec.pools[1] = "192.168.0.0/33"), "spec.pools.1"],
  [
    "IpamStorage",
    "a prefix that is not base64",
    (o) => (o.spec.prefixes["10.0.0.0/8"] = "not base64!"),
    "spec.prefixes.10.0.0.0/8",
    "must be base64",
  ],
];

describe.each(rejections)("%s: %s", (kind, _what, change, path, message) => {
  test(`is rejected at ${path}`, () => {
    const obj = samples[kind]!();
    change(obj);
    const issues = kindOf(kind).issues(obj);
    expect(issues.map((i) => i.path)).toContain(path);
    if (message) expect(issues.find((i) => i.path === path)?.message).toBe(message);
    expect(() => kindOf(kind).parse(obj)).toThrow(`${kind} `);
  });
});

describe("defaults Liqo's CRDs declare are filled by the parsers", () => {
  test("NamespaceOffloading strategies", () => {
    const { spec } = kindOf("NamespaceOffloading").parse({ metadata: { name: "offloading" }, spec: {} }) as ReturnType<
      typeof sampleNamespaceOffloading
    >;
    expect(spec).toEqual({ namespaceMappingStrategy: "DefaultName", podOffloadingStrategy: "LocalAndRemote" } as never);
  });

  test("the documented NamespaceOffloading status parses", () => {
    expect(
      kindOf("NamespaceOffloading").issues({
        ...sampleNamespaceOffloading(),
        status: sampleNamespaceOffloadingStatus(),
      }),
    ).toEqual([]);
  });

  test("TunnelEndpoint NAT networks default to None", () => {
    // biome-ignore lint/suspicious/noExplicitAny: the parsed CRD objects and mutations are walked by path, for every kind at once
    const obj = samples.TunnelEndpoint!() as any;
    delete obj.spec.localNATPodCIDR;
    // biome-ignore lint/suspicious/noExplicitAny: the parsed CRD objects and mutations are walked by path, for every kind at once
    expect((kindOf("TunnelEndpoint").parse(obj) as any).spec.localNATPodCIDR).toBe("None");
  });

  test("ResourceOffer and ResourceRequest status enums", () => {
    // biome-ignore lint/suspicious/noExplicitAny: the parsed CRD objects and mutations are walked by path, for every kind at once
    expect((kindOf("ResourceOffer").parse({ ...samples.ResourceOffer!(), status: {} }) as any).status).toEqual({
      phase: "Pending",
      virtualKubeletStatus: "None",
    });
    // biome-ignore lint/suspicious/noExplicitAny: the parsed CRD objects and mutations are walked by path, for every kind at once
    expect((kindOf("ResourceRequest").parse({ ...samples.ResourceRequest!(), status: {} }) as any).status).toEqual({
      offerState: "None",
    });
  });

  test("NetworkConfig processed defaults to false", () => {
    // biome-ignore lint/suspicious/noExplicitAny: the parsed CRD objects and mutations are walked by path, for every kind at once
    expect((kindOf("NetworkConfig").parse({ ...samples.NetworkConfig!(), status: {} }) as any).status.processed).toBe(
      false,
    );
  });
});
