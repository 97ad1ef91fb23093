import { describe, expect, test } from "bun:test";
import { parseIpamStorage } from "../../core/apis/net/ipamstorage.ts";
import { createIpam, IpamError } from "../ipam/index.ts";
import { canonicalJson, ipamSpecFromSnapshot, snapshotFromIpamSpec } from "./ipam-storage.ts";

/** A state with every kind of entry: a remapped and a kept peer, reported NATs, an endpoint. */
function busyIpam() {
  const ipam = createIpam({
    podCidr: "10.200.0.0/16",
    serviceCidr: "10.50.0.0/16",
    externalCidr: "10.210.0.0/16",
    reserved: ["10.0.0.0/15"],
  });
  ipam.mapRemoteNetworks("milan", { podCidr: "10.200.0.0/16", externalCidr: "10.210.0.0/16" });
  ipam.mapRemoteNetworks("turin", { podCidr: "10.120.0.0/16", externalCidr: "10.121.0.0/16" });
  ipam.setLocalNetworksSeenBy("milan", { podCidr: "10.3.0.0/16", externalCidr: "None" });
  ipam.setLocalNetworksSeenBy("turin", { podCidr: "None", externalCidr: "None" });
  ipam.endpointIpFor("turin", "10.2.0.9"); // milan's pod (remapped here) reflected to turin
  return ipam;
}

describe("ipamSpecFromSnapshot", () => {
  const ipam = busyIpam();
  const snap = ipam.snapshot();
  const spec = ipamSpecFromSnapshot(snap);
  const milan = snap.clusters.milan!;

  test("writes Liqo's fields: the network used here for the peer, NATs as None when kept", () => {
    expect(spec.podCIDR).toBe("10.200.0.0/16");
    expect(spec.serviceCIDR).toBe("10.50.0.0/16");
    expect(spec.externalCIDR).toBe("10.210.0.0/16");
    expect(spec.reservedSubnets).toEqual(["10.0.0.0/15"]);
    expect(spec.clusterSubnets.milan).toEqual({
      remotePodCIDR: milan.podCidr,
      remoteExternalCIDR: milan.externalCidr,
      localNATPodCIDR: "10.3.0.0/16",
      localNATExternalCIDR: "None",
    });
    expect(spec.clusterSubnets.turin).toEqual({
      remotePodCIDR: "10.120.0.0/16",
      remoteExternalCIDR: "10.121.0.0/16",
      localNATPodCIDR: "None",
      localNATExternalCIDR: "None",
    });
  });

  test("a remapped network is not the declared one", () => {
    expect(milan.podCidr).not.toBe("10.200.0.0/16");
    expect(milan.remotePodCidr).toBe("10.200.0.0/16");
  });

  test("endpoint mappings carry the external address and the clusters as keys", () => {
    expect(spec.endpointMappings).toEqual({ "10.2.0.9": { ip: "10.210.0.2", clusterMappings: { turin: {} } } });
  });

  test("natMappingsConfigured lists the peers that reported how they see us", () => {
    expect(Object.keys(spec.natMappingsConfigured).sort()).toEqual(["milan", "turin"]);
  });

  test("is accepted by the IpamStorage parser (what the CRD holds)", () => {
    expect(() => parseIpamStorage({ metadata: { name: "x" }, spec })).not.toThrow();
  });
});

describe("snapshotFromIpamSpec", () => {
  test("round trip snapshot → spec → snapshot is byte-identical", () => {
    const snap = busyIpam().snapshot();
    expect(JSON.stringify(snapshotFromIpamSpec(ipamSpecFromSnapshot(snap)))).toBe(JSON.stringify(snap));
  });

  test("round trip spec → snapshot → spec is identical up to key order", () => {
    const spec = ipamSpecFromSnapshot(busyIpam().snapshot());
    const reordered = JSON.parse(canonicalJson(spec)); // as the API server returns it: keys sorted
    expect(canonicalJson(ipamSpecFromSnapshot(snapshotFromIpamSpec(reordered)))).toBe(canonicalJson(spec));
  });

  test("a peer that has not reported keeps empty NAT fields and no NAT in the snapshot", () => {
    const ipam = createIpam({ podCidr: "10.200.0.0/16", serviceCidr: "10.50.0.0/16", externalCidr: "10.210.0.0/16" });
    ipam.mapRemoteNetworks("milan", { podCidr: "10.200.0.0/16", externalCidr: "10.210.0.0/16" });
    const spec = ipamSpecFromSnapshot(ipam.snapshot());
    expect(spec.clusterSubnets.milan!.localNATPodCIDR).toBe("");
    expect(spec.natMappingsConfigured).toEqual({});
    expect(snapshotFromIpamSpec(spec).clusters.milan!.localNatPodCidr).toBeUndefined();
  });

  test("Liqo's own IpamStorage (no declared networks in prefixes) restores with used = declared", () => {
    const snap = snapshotFromIpamSpec(
      {
        prefixes: { "10.0.0.0/8": Buffer.from("go-ipam state").toString("base64") },
        pools: ["10.0.0.0/8"],
        reservedSubnets: [],
        clusterSubnets: {
          milan: {
            remotePodCIDR: "10.60.0.0/16",
            remoteExternalCIDR: "10.61.0.0/16",
            localNATPodCIDR: "None",
            localNATExternalCIDR: "",
          },
        },
        externalCIDR: "10.201.0.0/16",
        endpointMappings: {},
        natMappingsConfigured: {},
        podCIDR: "10.200.0.0/16",
        serviceCIDR: "10.96.0.0/12",
      },
      "ipamstorage-abc",
    );
    expect(snap.clusters.milan).toEqual({
      remotePodCidr: "10.60.0.0/16",
      remoteExternalCidr: "10.61.0.0/16",
      podCidr: "10.60.0.0/16",
      externalCidr: "10.61.0.0/16",
      localNatPodCidr: "10.200.0.0/16",
    });
  });

  const base = () => ipamSpecFromSnapshot(busyIpam().snapshot());
  test.each([
    [
      "an empty podCIDR",
      (s: ReturnType<typeof base>) => {
        s.podCIDR = "";
      },
      /spec.podCIDR is empty/,
    ],
    [
      "two peers on one network",
      (s: ReturnType<typeof base>) => {
        s.clusterSubnets.turin!.remotePodCIDR = s.clusterSubnets.milan!.remotePodCIDR;
      },
      /overlaps/,
    ],
    [
      "a peer without networks",
      (s: ReturnType<typeof base>) => {
        s.clusterSubnets.turin!.remotePodCIDR = "";
      },
      /clusterSubnets\["turin"\] has no remotePodCIDR/,
    ],
    [
      "an endpoint address outside the external CIDR",
      (s: ReturnType<typeof base>) => {
        s.endpointMappings["10.2.0.9"]!.ip = "10.99.0.1";
      },
      /not an assignable address/,
    ],
    [
      "an endpoint reflected to an unknown peer",
      (s: ReturnType<typeof base>) => {
        s.endpointMappings["10.2.0.9"]!.clusterMappings = { rome: {} };
      },
      /unknown cluster rome/,
    ],
  ])("rejects %s, naming the object and the fix", (_, mutate, message) => {
    const spec = base();
    mutate(spec);
    let error: unknown;
    try {
      snapshotFromIpamSpec(spec, "ipamstorage-liqo");
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(IpamError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toContain("IpamStorage ipamstorage-liqo");
    expect((error as Error).message).toContain("delete it while no peering is active");
  });
});
