import { describe, expect, test } from "bun:test";
import { IpamError } from "./errors.ts";
import { createIpam, restoreIpam } from "./ipam.ts";

function populated() {
  const ipam = createIpam({
    podCidr: "10.200.0.0/16",
    serviceCidr: "10.96.0.0/12",
    externalCidr: "10.210.0.0/16",
    reserved: ["192.168.50.0/24"],
  });
  ipam.mapRemoteNetworks("b", { podCidr: "10.200.0.0/16", externalCidr: "10.210.0.0/16" });
  ipam.mapRemoteNetworks("a", { podCidr: "172.30.0.0/16", externalCidr: "172.31.0.0/16" });
  ipam.setLocalNetworksSeenBy("b", { podCidr: "10.77.0.0/16", externalCidr: "None" });
  ipam.setLocalNetworksSeenBy("a", { podCidr: "None", externalCidr: "None" });
  ipam.endpointIpFor("b", "172.30.0.4");
  ipam.endpointIpFor("a", "10.0.0.9");
  // 10.0.0.9 is b's own pod (remapped): b gets its real address back, no external address.
  if (ipam.endpointIpFor("b", "10.0.0.9") !== "10.200.0.9") throw new Error("hairpin translation broken");
  return ipam;
}

describe("snapshot", () => {
  test("is plain JSON and restores byte-identically", () => {
    const snap = populated().snapshot();
    const text = JSON.stringify(snap);
    expect(JSON.stringify(restoreIpam(JSON.parse(text)).snapshot())).toBe(text);
  });

  test("holds what a reader of IpamStorage needs", () => {
    const snap = populated().snapshot();
    expect(snap.clusters.b).toEqual({
      remotePodCidr: "10.200.0.0/16",
      remoteExternalCidr: "10.210.0.0/16",
      podCidr: "10.0.0.0/16",
      externalCidr: "10.1.0.0/16",
      localNatPodCidr: "10.77.0.0/16",
      localNatExternalCidr: "10.210.0.0/16",
    });
    expect(snap.endpoints).toEqual({
      "10.0.0.9": { externalIp: "10.210.0.3", clusters: ["a"] },
      "172.30.0.4": { externalIp: "10.210.0.2", clusters: ["b"] },
    });
  });

  test("a restored IPAM behaves like the original", () => {
    const original = populated();
    const restored = restoreIpam(JSON.parse(JSON.stringify(original.snapshot())));
    for (const ipam of [original, restored]) ipam.releaseEndpointIp("b", "172.30.0.4");
    const next = [original, restored].map((ipam) => [
      ipam.endpointIpFor("a", "192.168.9.9"),
      ipam.mapRemoteNetworks("c", { podCidr: "10.200.0.0/16", externalCidr: "10.1.0.0/16" }),
    ]);
    expect(next[1]).toEqual(next[0]!);
  });

  // biome-ignore lint/suspicious/noExplicitAny: corruptions write anything into the snapshot, on purpose
  const corrupt: [string, (s: any) => void, string][] = [
    [
      "wrong version",
      (s) => {
        s.version = 2;
      },
      "unsupported version 2",
    ],
    [
      "malformed CIDR",
      (s) => {
        s.clusters.b.podCidr = "10.0.0.0/33";
      },
      "clusters.b.podCidr",
    ],
    [
      "two peers on one network",
      (s) => {
        s.clusters.a.podCidr = "10.0.0.0/16";
      },
      "clusters.b.podCidr 10.0.0.0/16 overlaps clusters.a.podCidr",
    ],
    [
      "external address outside the CIDR",
      (s) => {
        s.endpoints["10.0.0.9"].externalIp = "10.99.0.1";
      },
      "not an assignable address of 10.210.0.0/16",
    ],
    [
      "duplicate external address",
      (s) => {
        s.endpoints["10.0.0.9"].externalIp = "10.210.0.2";
      },
      "given to two endpoints",
    ],
    [
      "unknown cluster",
      (s) => {
        s.endpoints["10.0.0.9"].clusters.push("zz");
      },
      "unknown cluster zz",
    ],
    [
      "missing clusters",
      (s) => {
        delete s.clusters;
      },
      "clusters must be an object",
    ],
  ];
  test.each(corrupt)("refuses a snapshot with %s", (_name, damage, message) => {
    const snap = JSON.parse(JSON.stringify(populated().snapshot()));
    damage(snap);
    let err: unknown;
    try {
      restoreIpam(snap);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(IpamError);
    expect((err as Error).message).toContain(message);
  });
});
