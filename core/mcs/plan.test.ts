import { describe, expect, test } from "bun:test";
import type { ExportedServiceSpec } from "../apis/multicluster/exportedservice.ts";
import { carrierName, derivedServiceName, importedSliceName } from "./names.ts";
import {
  condition,
  describeExport,
  importedSlices,
  invalidExport,
  mergeExports,
  peerExports,
  remapperFor,
  unreachableExporters,
  sameConditions,
  type ExportRecord,
  type Remapper,
} from "./plan.ts";
import { covers, flowOf } from "./policy.ts";
import { stable } from "./stable.ts";

const ROME = "53d11339-fc85-4741-a912-a3eda781a69e";
const MILAN = "4858caa2-7848-4aab-a6b4-6984389bac56";
const NAPLES = "0b9a3c2e-1111-4aab-a6b4-6984389bac56";

const spec = (over: Partial<ExportedServiceSpec> = {}): ExportedServiceSpec => ({
  serviceNamespace: "shop",
  serviceName: "web",
  exportedAt: "2026-01-01T00:00:00Z",
  type: "ClusterSetIP",
  ports: [{ name: "http", protocol: "TCP", port: 80 }],
  sessionAffinity: "None",
  slices: [
    {
      addressType: "IPv4",
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
      endpoints: [{ addresses: ["10.200.0.5"], ready: true }],
    },
  ],
  ...over,
});
const rec = (clusterId: string, over: Partial<ExportedServiceSpec> = {}): ExportRecord => ({
  clusterId,
  spec: spec(over),
});

describe("names", () => {
  test("deterministic, DNS-safe, distinct per origin", () => {
    expect(carrierName(ROME, "shop", "web")).toBe(carrierName(ROME, "shop", "web"));
    expect(carrierName(ROME, "shop", "web")).not.toBe(carrierName(MILAN, "shop", "web"));
    expect(carrierName(ROME, "shop", "web")).toMatch(/^shop\.web\.[0-9a-f]{8}$/);
    const long = "x".repeat(63);
    expect(derivedServiceName(long)).toMatch(/^derived-[0-9a-f]{10}$/);
    expect(derivedServiceName("web")).toBe(derivedServiceName("web"));
    expect(importedSliceName("web", ROME, 0)).toStartWith(`${derivedServiceName("web")}-`);
  });
});

describe("invalidExport", () => {
  test("a missing Service names the fix", () => {
    const r = invalidExport("shop", "web", undefined);
    expect(r?.reason).toBe("NoService");
    expect(r?.message).toContain("create a Service named web in shop, or delete this ServiceExport");
  });
  test("ExternalName is refused", () =>
    expect(invalidExport("shop", "web", { metadata: {}, spec: { type: "ExternalName" } })?.reason).toBe(
      "InvalidServiceType",
    ));
  test("a ClusterIP Service is valid", () =>
    expect(invalidExport("shop", "web", { metadata: {}, spec: { type: "ClusterIP" } })).toBeUndefined());
});

describe("describeExport", () => {
  test("type, ports and slices from the Service and its EndpointSlices", () => {
    const d = describeExport(
      "shop",
      "web",
      "2026-01-01T00:00:00Z",
      { metadata: {}, spec: { clusterIP: "None", ports: [{ name: "http", port: 80 }] } },
      [
        {
          metadata: { name: "b" },
          addressType: "IPv4",
          ports: [{ name: "http", port: 8080, protocol: "TCP" }],
          endpoints: [{ addresses: ["10.0.0.2"], conditions: { ready: true } }],
        },
        { metadata: { name: "a" }, addressType: "FQDN", endpoints: [] },
      ],
    );
    expect(d.type).toBe("Headless");
    expect(d.ports).toEqual([{ name: "http", protocol: "TCP", port: 80 }]);
    expect(d.slices).toEqual([
      {
        addressType: "IPv4",
        ports: [{ name: "http", port: 8080, protocol: "TCP" }],
        endpoints: [{ addresses: ["10.0.0.2"], ready: true }],
      },
    ]);
    expect(d.sessionAffinity).toBe("None");
  });
});

describe("mergeExports (KEP-1645 conflict resolution)", () => {
  test("agreeing exports: no conflict, clusters oldest first", () => {
    const m = mergeExports([rec(MILAN, { exportedAt: "2026-01-02T00:00:00Z" }), rec(ROME)]);
    expect(m.clusters).toEqual([ROME, MILAN]);
    expect(m.conflicts).toEqual([]);
    expect(m.ports).toEqual([{ name: "http", protocol: "TCP", port: 80 }]);
  });
  test("ties on time are broken by cluster ID, so every cluster agrees", () => {
    expect(mergeExports([rec(ROME), rec(MILAN)]).clusters).toEqual([MILAN, ROME]);
  });
  test("type: the oldest export wins, and the message says who and why", () => {
    const m = mergeExports([rec(MILAN, { exportedAt: "2026-01-02T00:00:00Z", type: "Headless" }), rec(ROME)]);
    expect(m.type).toBe("ClusterSetIP");
    expect(m.conflicts.map((c) => c.reason)).toEqual(["TypeConflict"]);
    expect(m.conflicts[0]!.message).toContain(`cluster ${ROME} exported it first`);
  });
  test("session affinity and its config", () => {
    const m = mergeExports([
      rec(ROME, { sessionAffinity: "ClientIP", sessionAffinityConfig: { clientIP: { timeoutSeconds: 10 } } }),
      rec(MILAN, {
        exportedAt: "2026-01-02T00:00:00Z",
        sessionAffinity: "ClientIP",
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 20 } },
      }),
      rec(NAPLES, { exportedAt: "2026-01-03T00:00:00Z" }),
    ]);
    expect(m.sessionAffinity).toBe("ClientIP");
    expect(m.sessionAffinityConfig).toEqual({ clientIP: { timeoutSeconds: 10 } });
    expect(m.conflicts.map((c) => c.reason).sort()).toEqual([
      "SessionAffinityConfigConflict",
      "SessionAffinityConflict",
    ]);
  });
  test("ports: the union; a collision keeps the oldest export's port", () => {
    const m = mergeExports([
      rec(ROME, { ports: [{ name: "http", protocol: "TCP", port: 80 }] }),
      rec(MILAN, {
        exportedAt: "2026-01-02T00:00:00Z",
        ports: [
          { name: "http", protocol: "TCP", port: 8080 },
          { name: "metrics", protocol: "TCP", port: 9090 },
        ],
      }),
      rec(NAPLES, { exportedAt: "2026-01-03T00:00:00Z", ports: [{ name: "web", protocol: "TCP", port: 80 }] }),
    ]);
    expect(m.ports).toEqual([
      { name: "http", protocol: "TCP", port: 80 },
      { name: "metrics", protocol: "TCP", port: 9090 },
    ]);
    expect(m.conflicts.map((c) => c.reason)).toEqual(["PortConflict"]);
    expect(m.conflicts[0]!.message).toContain(`port "http" of cluster ${MILAN} is 8080/TCP`);
    expect(m.conflicts[0]!.message).toContain(`port 80/TCP of cluster ${NAPLES} is named "web"`);
  });
  test("the same port on TCP and UDP is two ports, not a conflict", () => {
    const m = mergeExports([
      rec(ROME, { ports: [{ name: "dns", protocol: "UDP", port: 53 }] }),
      rec(MILAN, { ports: [{ name: "dns-tcp", protocol: "TCP", port: 53 }] }),
    ]);
    expect(m.ports).toHaveLength(2);
    expect(m.conflicts).toEqual([]);
  });
});

describe("remapping", () => {
  const remoteConfig = (processed: boolean) => ({
    spec: { podCIDR: "10.200.0.0/16", externalCIDR: "10.201.0.0/16" } as never,
    status: processed ? ({ processed: true, podCIDRNAT: "10.210.0.0/16" } as never) : undefined,
  });
  test("no NetworkConfig: the peering has no fabric, addresses pass", () => {
    const r = remapperFor(undefined, false);
    expect(r.ok && r.map("10.200.0.5")).toBe("10.200.0.5");
  });
  test("the local cluster's own endpoints are never remapped", () => {
    const r = remapperFor({ remoteClusterId: ROME, remote: remoteConfig(true) }, true);
    expect(r.ok && r.map("10.200.0.5")).toBe("10.200.0.5");
  });
  test("an overlapping pod CIDR is remapped as the fabric does (translateWith backward)", () => {
    const r = remapperFor({ remoteClusterId: MILAN, remote: remoteConfig(true) }, false);
    expect(r.ok && r.map("10.200.3.7")).toBe("10.210.3.7");
  });
  test("with the fabric, a peer's address outside its pod CIDR is dropped: it cannot point a name at ours", () => {
    const r = remapperFor({ remoteClusterId: MILAN, remote: remoteConfig(true) }, false);
    expect(r.ok && r.map("172.31.0.10")).toBeUndefined();
    expect(r.ok && r.map("10.96.0.1")).toBeUndefined();
  });
  test("what is not an IP address is dropped everywhere", () => {
    const r = remapperFor(undefined, false);
    expect(r.ok && r.map("kubernetes.default")).toBeUndefined();
    expect(r.ok && r.map("10.0.0.256")).toBeUndefined();
    expect(r.ok && r.map("fd00::1")).toBe("fd00::1");
  });
  test("a NetworkConfig not processed yet: pending, with the reason", () => {
    const r = remapperFor({ remoteClusterId: MILAN, remote: remoteConfig(false) }, false);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain("has not remapped");
  });
  test("importedSlices: an endpoint left with no address is dropped", () => {
    const owner = { apiVersion: "multicluster.x-k8s.io/v1alpha1", kind: "ServiceImport", name: "web", uid: "u1" };
    const bad = rec(MILAN, {
      slices: [{ addressType: "IPv4", endpoints: [{ addresses: ["192.168.9.9"] }, { addresses: ["10.200.0.9"] }] }],
    });
    const [slice] = importedSlices(
      "shop",
      "web",
      [bad],
      new Map<string, Remapper>([[MILAN, remapperFor({ remoteClusterId: MILAN, remote: remoteConfig(true) }, false)]]),
      owner,
    ) as unknown as { endpoints: unknown[] }[];
    expect(slice!.endpoints).toEqual([{ addresses: ["10.210.0.9"], conditions: {} }]);
  });
  test("importedSlices: labelled per KEP-1645, owned by the import, pending exporters left out", () => {
    const owner = { apiVersion: "multicluster.x-k8s.io/v1alpha1", kind: "ServiceImport", name: "web", uid: "u1" };
    const out = importedSlices(
      "shop",
      "web",
      [rec(ROME), rec(MILAN), rec(NAPLES)],
      new Map<string, Remapper>([
        [MILAN, remapperFor({ remoteClusterId: MILAN, remote: remoteConfig(true) }, false)],
        [NAPLES, remapperFor({ remoteClusterId: NAPLES, remote: remoteConfig(false) }, false)],
      ]),
      owner,
    ) as { metadata: { name: string; labels: Record<string, string> }; endpoints: { addresses: string[] }[] }[];
    expect(out).toHaveLength(2);
    const milan = out.find((s) => s.metadata.labels["multicluster.kubernetes.io/source-cluster"] === MILAN)!;
    expect(milan.endpoints[0]!.addresses).toEqual(["10.210.0.5"]);
    expect(milan.metadata.labels["multicluster.kubernetes.io/service-name"]).toBe("web");
    expect(milan.metadata.labels["kubernetes.io/service-name"]).toBe(derivedServiceName("web"));
    expect(milan.metadata.labels["endpointslice.kubernetes.io/managed-by"]).toBe("mcs.liqo.io");
  });
});

describe("service continuity for imports: an exporter dark past the threshold", () => {
  const owner = { apiVersion: "multicluster.x-k8s.io/v1alpha1", kind: "ServiceImport", name: "web", uid: "u1" };
  const THRESHOLD = 15_000;
  const DARK_AT = 1_000_000;
  const records = [
    rec(ROME),
    rec(MILAN, {
      slices: [{ addressType: "IPv4", endpoints: [{ addresses: ["10.200.0.7"], ready: true, serving: true }] }],
    }),
    rec(NAPLES, { slices: [{ addressType: "IPv4", endpoints: [{ addresses: ["10.200.0.9"] }] }] }),
  ];
  /** rome's view at `now`: milan's tunnel dark since DARK_AT (or answering), naples answering. */
  const plan = (now: number, milanDark = true) => {
    const { unreachable, recheckAt } = unreachableExporters(
      ROME,
      records,
      (peer) => (peer === MILAN && milanDark ? DARK_AT : undefined),
      now,
      THRESHOLD,
    );
    const slices = importedSlices("shop", "web", records, new Map(), owner, unreachable) as unknown as {
      metadata: { labels: Record<string, string> };
      endpoints: { addresses: string[]; conditions: Record<string, boolean> }[];
    }[];
    const of = (peer: string) =>
      slices
        .filter((s) => s.metadata.labels["multicluster.kubernetes.io/source-cluster"] === peer)
        .flatMap((s) => s.endpoints);
    return { unreachable, recheckAt, count: slices.length, rome: of(ROME), milan: of(MILAN), naples: of(NAPLES) };
  };
  const reachable = plan(DARK_AT, false);

  test("past the threshold: milan's endpoints kept, ready false (serving as exported); nothing else changes", () => {
    const p = plan(DARK_AT + THRESHOLD);
    expect([...p.unreachable]).toEqual([MILAN]);
    expect(p.recheckAt).toBeUndefined();
    expect(p.count).toBe(3);
    expect(p.milan).toEqual([{ addresses: ["10.200.0.7"], conditions: { ready: false, serving: true } }]);
    expect(p.rome).toEqual(reachable.rome);
    expect(p.naples).toEqual(reachable.naples);
    expect(p.naples).toEqual([{ addresses: ["10.200.0.9"], conditions: {} }]);
  });

  test("before the threshold: as exported, and a look again when it is crossed", () => {
    const p = plan(DARK_AT + THRESHOLD - 1);
    expect(p.unreachable.size).toBe(0);
    expect(p.recheckAt).toBe(DARK_AT + THRESHOLD);
    expect(p.milan).toEqual([{ addresses: ["10.200.0.7"], conditions: { ready: true, serving: true } }]);
  });

  test("milan answers again: its endpoints are what it exported", () => {
    expect(plan(DARK_AT + THRESHOLD).milan[0]!.conditions.ready).toBe(false);
    const back = plan(DARK_AT + 60_000, false);
    expect(back.unreachable.size).toBe(0);
    expect(back.recheckAt).toBeUndefined();
    expect(back.milan).toEqual([{ addresses: ["10.200.0.7"], conditions: { ready: true, serving: true } }]);
    expect(back).toEqual(reachable);
  });

  test("our own export is never marked, whatever a TunnelEndpoint says", () => {
    const { unreachable } = unreachableExporters(ROME, records, () => DARK_AT, DARK_AT + THRESHOLD, THRESHOLD);
    expect([...unreachable].sort()).toEqual([MILAN, NAPLES].sort());
  });
});

describe("peerExports: what the peers export, from the tenant namespaces", () => {
  const carrier = (ns: string, origin: string, over: Partial<ExportedServiceSpec> = {}) => ({
    apiVersion: "multicluster.liqo.io/v1alpha1",
    kind: "ExportedService",
    metadata: { name: `x-${origin}`, namespace: ns, labels: { "multicluster.liqo.io/origin-cluster-id": origin } },
    spec: spec(over),
  });
  test("attributed to the channel's peer whatever the label says; ours skipped; other services ignored", () => {
    const got = peerExports(ROME, "shop", "web", [
      {
        peer: MILAN,
        direction: "incoming",
        namespace: "tenant-milan",
        import: true,
        carriers: [
          carrier("tenant-milan", ROME),
          carrier("tenant-milan", NAPLES, { serviceName: "other" }),
          carrier("tenant-milan", NAPLES), // a consumer claiming to be naples is still milan
        ],
      },
    ]);
    expect(got.map((r) => r.clusterId)).toEqual([MILAN]);
  });
  test("peered both ways: one export per peer, the outgoing channel's", () => {
    const got = peerExports(ROME, "shop", "web", [
      {
        peer: MILAN,
        direction: "incoming",
        namespace: "a",
        import: true,
        carriers: [carrier("a", MILAN, { exportedAt: "2026-03-03T00:00:00Z" })],
      },
      { peer: MILAN, direction: "outgoing", namespace: "b", import: true, carriers: [carrier("b", MILAN)] },
    ]);
    expect(got).toHaveLength(1);
    expect(got[0]!.spec.exportedAt).toBe("2026-01-01T00:00:00Z");
  });
  test("a peer whose policy forbids imports, a carrier of another namespace and a malformed one give nothing", () => {
    expect(
      peerExports(ROME, "shop", "web", [
        { peer: MILAN, direction: "outgoing", namespace: "b", import: false, carriers: [carrier("b", MILAN)] },
        { peer: NAPLES, direction: "outgoing", namespace: "c", import: true, carriers: [carrier("elsewhere", NAPLES)] },
        {
          peer: "d4a0c0de-0000-4aab-a6b4-6984389bac56",
          direction: "incoming",
          namespace: "d",
          import: true,
          carriers: [{ ...carrier("d", "x"), spec: { ...spec(), type: "Sometimes" as never } }],
        },
      ]),
    ).toEqual([]);
  });
});

describe("conditions and policy", () => {
  test("lastTransitionTime is kept while the status holds", () => {
    const a = condition(undefined, "Valid", "True", "Valid", "ok", 1, "2026-01-01T00:00:00Z");
    const b = condition([a], "Valid", "True", "Valid", "ok", 1, "2026-02-01T00:00:00Z");
    expect(b.lastTransitionTime).toBe("2026-01-01T00:00:00Z");
    expect(condition([a], "Valid", "False", "NoService", "x", 1, "2026-02-01T00:00:00Z").lastTransitionTime).toBe(
      "2026-02-01T00:00:00Z",
    );
    expect(sameConditions([a], [b])).toBe(true);
  });
  test("peer policy: default, annotation, and a typo treated as None", () => {
    expect(flowOf(undefined, "ExportAndImport")).toMatchObject({ export: true, import: true });
    expect(flowOf({ "mcs.liqo.io/peer-policy": "ExportOnly" }, "ExportAndImport")).toMatchObject({
      export: true,
      import: false,
    });
    const bad = flowOf({ "mcs.liqo.io/peer-policy": "yes" }, "ExportAndImport");
    expect(bad).toMatchObject({ export: false, import: false });
    expect(bad.invalid).toContain("treated as None");
  });
  test("namespace scoping: absent covers all, a list covers only its namespaces", () => {
    expect(covers(flowOf(undefined, "ExportAndImport"), "shop")).toBe(true);
    const scoped = flowOf({ "mcs.liqo.io/namespaces": "shop, solo" }, "ExportAndImport");
    expect(scoped.namespaces).toEqual(["shop", "solo"]);
    expect(covers(scoped, "solo")).toBe(true);
    expect(covers(scoped, "kube-system")).toBe(false);
    expect(covers(flowOf({ "mcs.liqo.io/namespaces": "" }, "ExportAndImport"), "shop")).toBe(false);
  });
  test("stable JSON ignores key order", () =>
    expect(stable({ b: 1, a: { d: 2, c: 3 } })).toBe(stable({ a: { c: 3, d: 2 }, b: 1 })));
});
