import { describe, expect, test } from "bun:test";
import type { ServiceImport } from "../../apis/multicluster/serviceimport.ts";
import type { SliceLike } from "../plan.ts";
import { importedSlice } from "./cache.ts";
import { answerQuestion, DEFAULT_TTL, type ImportedSlice, type ZoneView } from "./records.ts";
import { RCode, RRType } from "./wire.ts";

const web: ServiceImport = {
  spec: {
    type: "ClusterSetIP",
    ips: ["10.96.0.50"],
    ports: [
      { name: "http", protocol: "TCP", port: 80 },
      { name: "dns", protocol: "UDP", port: 53 },
    ],
  },
} as ServiceImport;
const db: ServiceImport = {
  spec: { type: "Headless", ports: [{ name: "pg", protocol: "TCP", port: 5432 }] },
} as ServiceImport;
const dbSlices: ImportedSlice[] = [
  {
    cluster: "rome-id",
    ports: [{ name: "pg", protocol: "TCP", port: 5432 }],
    endpoints: [
      { addresses: ["10.1.0.5"], ready: true, hostname: "db-0" },
      { addresses: ["10.1.0.6"], ready: false, hostname: "db-1" },
    ],
  },
  {
    cluster: "milan-id",
    ports: [{ name: "pg", protocol: "TCP", port: 6432 }],
    endpoints: [{ addresses: ["10.2.0.7"], ready: true }],
  },
];
const view: ZoneView = {
  serviceImport: (ns, name) => (ns !== "shop" ? undefined : name === "web" ? web : name === "db" ? db : undefined),
  slices: (ns, name) => (ns === "shop" && name === "db" ? dbSlices : []),
  hasNamespace: (ns) => ns === "shop",
};
const ask = (name: string, type: number = RRType.A) =>
  answerQuestion({ name, lower: name.toLowerCase(), type, class: 1 }, view);
const data = (name: string, type: number = RRType.A) =>
  ask(name, type)!.answers.map((r) =>
    "address" in r.data ? r.data.address : "target" in r.data ? `${r.data.port} ${r.data.target}` : "",
  );

describe("the clusterset.local zone", () => {
  test("A of a ClusterSetIP import: its spec.ips, authoritative, with the short TTL", () => {
    const a = ask("web.shop.svc.clusterset.local")!;
    expect(a.rcode).toBe(RCode.NOERROR);
    expect(a.aa).toBe(true);
    expect(a.answers).toEqual([
      { name: "web.shop.svc.clusterset.local", ttl: DEFAULT_TTL, data: { type: RRType.A, address: "10.96.0.50" } },
    ]);
    expect(DEFAULT_TTL).toBe(5);
  });

  test("names are case-insensitive; a trailing dot is the same name", () => {
    expect(data("WEB.Shop.SVC.ClusterSet.Local")).toEqual(["10.96.0.50"]);
    expect(data("web.shop.svc.clusterset.local.")).toEqual(["10.96.0.50"]);
  });

  test("SRV of a named port: the port, the service's name as target", () => {
    expect(data("_http._tcp.web.shop.svc.clusterset.local", RRType.SRV)).toEqual(["80 web.shop.svc.clusterset.local"]);
    expect(data("_dns._udp.web.shop.svc.clusterset.local", RRType.SRV)).toEqual(["53 web.shop.svc.clusterset.local"]);
  });

  test("SRV of an unknown port or the wrong protocol: NXDOMAIN", () => {
    expect(ask("_ftp._tcp.web.shop.svc.clusterset.local", RRType.SRV)!.rcode).toBe(RCode.NXDOMAIN);
    expect(ask("_http._udp.web.shop.svc.clusterset.local", RRType.SRV)!.rcode).toBe(RCode.NXDOMAIN);
  });

  test("Headless: A of the ready endpoints of every cluster, not the unready one", () => {
    expect(data("db.shop.svc.clusterset.local").sort()).toEqual(["10.1.0.5", "10.2.0.7"]);
  });

  test("Headless: each endpoint by <hostname or dashed address>.<cluster>", () => {
    expect(data("db-0.rome-id.db.shop.svc.clusterset.local")).toEqual(["10.1.0.5"]);
    expect(data("10-2-0-7.milan-id.db.shop.svc.clusterset.local")).toEqual(["10.2.0.7"]);
    expect(ask("db-1.rome-id.db.shop.svc.clusterset.local")!.rcode).toBe(RCode.NXDOMAIN); // not ready
    expect(ask("db-0.milan-id.db.shop.svc.clusterset.local")!.rcode).toBe(RCode.NXDOMAIN); // other cluster
  });

  test("Headless SRV: one per ready endpoint, its own cluster's port, its own name as target", () => {
    expect(data("_pg._tcp.db.shop.svc.clusterset.local", RRType.SRV).sort()).toEqual([
      "5432 db-0.rome-id.db.shop.svc.clusterset.local",
      "6432 10-2-0-7.milan-id.db.shop.svc.clusterset.local",
    ]);
  });

  test("unknown services, namespaces and shapes: NXDOMAIN with the zone's SOA (negative TTL 1 s)", () => {
    for (const n of [
      "nope.shop.svc.clusterset.local",
      "web.other.svc.clusterset.local",
      "other.svc.clusterset.local",
      "web.shop.pod.clusterset.local",
      "a.b.web.shop.svc.clusterset.local",
      "x.y.z.web.shop.svc.clusterset.local",
    ]) {
      const a = ask(n)!;
      expect(a.rcode).toBe(RCode.NXDOMAIN);
      expect(a.answers).toEqual([]);
      expect(a.authority.map((r) => [r.name, r.data.type, r.ttl, "minimum" in r.data && r.data.minimum])).toEqual([
        ["clusterset.local", RRType.SOA, 1, 1],
      ]);
    }
  });

  test("other types on existing names: NODATA (NOERROR, no answers, the SOA)", () => {
    for (const [n, t] of [
      ["web.shop.svc.clusterset.local", RRType.AAAA],
      ["web.shop.svc.clusterset.local", 16],
      ["web.shop.svc.clusterset.local", RRType.SRV],
      ["_http._tcp.web.shop.svc.clusterset.local", RRType.A],
      ["shop.svc.clusterset.local", RRType.A],
      ["svc.clusterset.local", RRType.A],
      ["clusterset.local", RRType.A],
    ] as const) {
      const a = ask(n, t)!;
      expect([n, a.rcode, a.answers.length, a.authority.length]).toEqual([n, RCode.NOERROR, 0, 1]);
    }
  });

  test("the apex answers its SOA", () => {
    expect(ask("clusterset.local", RRType.SOA)!.answers.map((r) => r.data.type)).toEqual([RRType.SOA]);
  });

  test("names outside the zone: not ours (the server refuses)", () => {
    expect(ask("web.shop.svc.cluster.local")).toBeUndefined();
    expect(ask("evilclusterset.local")).toBeUndefined();
    expect(ask("")).toBeUndefined();
  });

  test("an import with no IP yet: NODATA, not NXDOMAIN", () => {
    const v: ZoneView = {
      ...view,
      serviceImport: () => ({ metadata: {}, spec: { type: "ClusterSetIP", ports: [] } }) as ServiceImport,
    };
    const a = answerQuestion(
      { name: "x.shop.svc.clusterset.local", lower: "x.shop.svc.clusterset.local", type: 1, class: 1 },
      v,
    )!;
    expect([a.rcode, a.answers.length]).toEqual([RCode.NOERROR, 0]);
  });

  test("IPv6 addresses are AAAA records, asked for as AAAA", () => {
    const v: ZoneView = {
      ...view,
      serviceImport: () =>
        ({ metadata: {}, spec: { type: "ClusterSetIP", ips: ["10.0.0.1", "fd00::5"], ports: [] } }) as ServiceImport,
    };
    const q = (type: number) =>
      answerQuestion(
        { name: "x.shop.svc.clusterset.local", lower: "x.shop.svc.clusterset.local", type, class: 1 },
        v,
      )!.answers.map((r) => "address" in r.data && r.data.address);
    expect(q(RRType.A)).toEqual(["10.0.0.1"]);
    expect(q(RRType.AAAA)).toEqual(["fd00::5"]);
  });
});

describe("importedSlice", () => {
  const slice = (labels: Record<string, string>, endpoints: SliceLike["endpoints"]): SliceLike => ({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: "s", namespace: "shop", labels },
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    endpoints,
  });

  test("the source cluster from its label; ready unless the condition says false", () => {
    const s = importedSlice(
      slice({ "multicluster.kubernetes.io/source-cluster": "milan-id" }, [
        { addresses: ["10.0.0.1"] },
        { addresses: ["10.0.0.2"], conditions: { ready: false } },
        { addresses: ["10.0.0.3"], conditions: { ready: true }, hostname: "h" },
      ]),
    )!;
    expect(s.cluster).toBe("milan-id");
    expect(s.ports).toEqual([{ name: "http", port: 8080, protocol: "TCP" }]);
    expect(s.endpoints.map((e) => [e.addresses[0], e.ready, e.hostname])).toEqual([
      ["10.0.0.1", true, undefined],
      ["10.0.0.2", false, undefined],
      ["10.0.0.3", true, "h"],
    ]);
  });

  test("a slice without a source cluster is not read", () => {
    expect(importedSlice(slice({}, []))).toBeUndefined();
  });
});
