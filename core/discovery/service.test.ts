import { describe, expect, test } from "bun:test";
import { RecordType, type DnsRecord } from "./dns.ts";
import { advertisementRecords, readClusters } from "./service.ts";

const ID = "4858caa2-7848-4aab-a6b4-6984389bac56";
const milan = { clusterId: ID, clusterName: "milan", authUrl: "https://172.31.0.12:31443" };

describe("advertisementRecords", () => {
  const recs = advertisementRecords(milan, "local", 90);
  test("PTR from the service to the cluster's instance", () =>
    expect(recs[0]).toEqual({
      name: "_liqo_auth._tcp.local",
      type: RecordType.PTR,
      ttl: 90,
      target: `${ID}._liqo_auth._tcp.local`,
    }));
  test("SRV with the auth service's port and a host with an A record", () => {
    expect(recs[1]).toMatchObject({ type: RecordType.SRV, port: 31443, target: `liqo-${ID}.local` });
    expect(recs[3]).toEqual({ name: `liqo-${ID}.local`, type: RecordType.A, ttl: 90, address: "172.31.0.12" });
  });
  test("TXT with the ID and the name", () => expect(recs[2]).toMatchObject({ strings: [`id=${ID}`, "name=milan"] }));
  test("a host name is the SRV target itself, without an A record", () => {
    const r = advertisementRecords({ ...milan, authUrl: "https://auth.milan.example.com" }, "example.com", 60);
    expect(r).toHaveLength(3);
    expect(r[1]).toMatchObject({ port: 443, target: "auth.milan.example.com" });
  });
});

describe("readClusters", () => {
  test("reads back what was advertised", () =>
    expect(readClusters(advertisementRecords(milan, "local", 90), "local")).toEqual([{ ok: true, cluster: milan }]));
  test("names compare case-insensitively, with or without the final dot", () => {
    const recs = advertisementRecords(milan, "local", 90).map((r) => ({ ...r, name: `${r.name.toUpperCase()}.` }));
    expect(readClusters(recs, "local.")).toEqual([{ ok: true, cluster: milan }]);
  });
  test("other services are ignored", () =>
    expect(readClusters(advertisementRecords(milan, "local", 90), "example.com")).toEqual([]));
  test("a host name target resolved by the caller", () => {
    const recs = advertisementRecords({ ...milan, authUrl: "https://auth.milan.example.com:8443" }, "example.com", 60);
    expect(readClusters(recs, "example.com", () => "10.0.0.9")).toEqual([
      { ok: true, cluster: { ...milan, authUrl: "https://10.0.0.9:8443" } },
    ]);
    expect(readClusters(recs, "example.com")).toEqual([
      { ok: true, cluster: { ...milan, authUrl: "https://auth.milan.example.com:8443" } },
    ]);
  });

  const tamper = (f: (r: DnsRecord[]) => DnsRecord[]) =>
    readClusters(f(advertisementRecords(milan, "local", 90)), "local")[0];
  test.each([
    ["no SRV", (r: DnsRecord[]) => r.filter((x) => x.type !== RecordType.SRV), /no SRV/],
    ["no TXT", (r: DnsRecord[]) => r.filter((x) => x.type !== RecordType.TXT), /no TXT/],
    ["two SRV records", (r: DnsRecord[]) => [...r, r[1]!], /several SRV/],
    [
      "an ID that cannot name objects",
      (r: DnsRecord[]) =>
        r.map((x) => (x.type === RecordType.TXT ? { ...x, strings: ["id=../../etc", "name=milan"] } : x)),
      /TXT id=/,
    ],
    [
      "an empty name",
      (r: DnsRecord[]) => r.map((x) => (x.type === RecordType.TXT ? { ...x, strings: [`id=${ID}`] } : x)),
      /TXT name=/,
    ],
    [
      "a name that is not a DNS label",
      (r: DnsRecord[]) =>
        r.map((x) => (x.type === RecordType.TXT ? { ...x, strings: [`id=${ID}`, "name=Milan!"] } : x)),
      /TXT name=/,
    ],
    [
      "an instance that is not the ID",
      (r: DnsRecord[]) => r.map((x) => (x.type === RecordType.TXT ? { ...x, strings: ["id=other", "name=milan"] } : x)),
      /does not start with the TXT id/,
    ],
    ["port 0", (r: DnsRecord[]) => r.map((x) => (x.type === RecordType.SRV ? { ...x, port: 0 } : x)), /not a port/],
    [
      "a multicast address",
      (r: DnsRecord[]) => r.map((x) => (x.type === RecordType.A ? { ...x, address: "224.0.0.251" } : x)),
      /cannot be an auth service/,
    ],
    [
      "a target that is no host",
      (r: DnsRecord[]) =>
        r
          .filter((x) => x.type !== RecordType.A)
          .map((x) => (x.type === RecordType.SRV ? { ...x, target: "not a host" } : x)),
      /neither/,
    ],
  ] as const)("%s is a named problem", (_what, f, problem) => {
    const reading = tamper(f as (r: DnsRecord[]) => DnsRecord[]);
    expect(reading?.ok).toBe(false);
    expect((reading as { problem: string }).problem).toMatch(problem);
  });
});
