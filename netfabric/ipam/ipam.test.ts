import { describe, expect, test } from "bun:test";
import { IpamError } from "./errors.ts";
import { createIpam, type IpamOptions } from "./ipam.ts";

const base: IpamOptions = { podCidr: "10.200.0.0/16", serviceCidr: "10.96.0.0/12", externalCidr: "10.210.0.0/16" };

function thrown(fn: () => unknown): IpamError {
  try {
    fn();
  } catch (err) {
    if (err instanceof IpamError) return err;
    throw err;
  }
  throw new Error("expected an IpamError");
}

describe("install-time networks", () => {
  test.each([
    [
      { ...base, reserved: ["10.200.5.0/24"] },
      "OverlappingNetworks",
      "reserved subnet 10.200.5.0/24 overlaps podCIDR 10.200.0.0/16",
    ],
    [
      { ...base, reserved: ["192.168.0.0/24", "192.168.0.128/25"] },
      "OverlappingNetworks",
      "192.168.0.128/25 overlaps reserved subnet 192.168.0.0/24",
    ],
    [
      { ...base, serviceCidr: "10.200.128.0/17" },
      "OverlappingNetworks",
      "serviceCIDR 10.200.128.0/17 overlaps podCIDR",
    ],
    [
      { ...base, externalCidr: "10.96.0.0/16" },
      "OverlappingNetworks",
      "externalCIDR 10.96.0.0/16 overlaps serviceCIDR",
    ],
    [{ ...base, podCidr: "10.200.0.1/16" }, "InvalidCidr", "did you mean 10.200.0.0/16"],
    [{ ...base, reserved: ["nope"] }, "InvalidCidr", 'reservedSubnets: "nope"'],
  ])("refuses %j", (options, code, message) => {
    const err = thrown(() => createIpam(options));
    expect(err.code).toBe(code as IpamError["code"]);
    expect(err.message).toContain(message);
  });

  test("external CIDR defaults to a free network of the pod CIDR's size", () => {
    const ipam = createIpam({ podCidr: "10.0.0.0/16", serviceCidr: "10.1.0.0/16", reserved: ["10.2.0.0/16"] });
    expect(ipam.localExternalCidr).toBe("10.3.0.0/16");
  });
});

describe("mapRemoteNetworks", () => {
  test("keeps free networks and remaps colliding ones to the same size", () => {
    const ipam = createIpam({ ...base, reserved: ["10.0.0.0/16"] });
    expect(ipam.mapRemoteNetworks("free", { podCidr: "172.20.0.0/16", externalCidr: "172.21.0.0/16" })).toEqual({
      podCidr: "172.20.0.0/16",
      externalCidr: "172.21.0.0/16",
      podRemapped: false,
      externalRemapped: false,
    });
    expect(ipam.mapRemoteNetworks("same", { podCidr: "10.200.0.0/16", externalCidr: "10.210.0.0/16" })).toEqual({
      podCidr: "10.1.0.0/16",
      externalCidr: "10.2.0.0/16",
      podRemapped: true,
      externalRemapped: true,
    });
    // Another peer declaring a network already given to "free" gets a fresh one too.
    expect(ipam.mapRemoteNetworks("third", { podCidr: "172.20.0.0/16", externalCidr: "10.3.0.0/24" })).toEqual({
      podCidr: "10.4.0.0/16",
      externalCidr: "10.3.0.0/24",
      podRemapped: true,
      externalRemapped: false,
    });
  });

  test("is idempotent and re-maps when the NetworkConfig changes", () => {
    const ipam = createIpam(base);
    const first = ipam.mapRemoteNetworks("b", { podCidr: "10.200.0.0/16", externalCidr: "10.210.0.0/16" });
    expect(ipam.mapRemoteNetworks("b", { podCidr: "10.200.0.0/16", externalCidr: "10.210.0.0/16" })).toEqual(first);
    expect(ipam.mapRemoteNetworks("b", { podCidr: "10.50.0.0/16", externalCidr: "10.210.0.0/16" }).podCidr).toBe(
      "10.50.0.0/16",
    );
    expect(ipam.usedNetworks().filter((u) => u.owner.endsWith(" b"))).toHaveLength(2);
  });

  test("release makes the network available again", () => {
    const ipam = createIpam(base);
    const first = ipam.mapRemoteNetworks("b", { podCidr: "10.200.0.0/16", externalCidr: "10.210.0.0/16" });
    ipam.releaseCluster("b");
    expect(ipam.mappedNetworks("b")).toBeUndefined();
    expect(ipam.mapRemoteNetworks("c", { podCidr: "10.200.0.0/16", externalCidr: "10.210.0.0/16" })).toEqual(first);
  });

  test("exhausted pool is a typed error naming the cluster and the network", () => {
    const ipam = createIpam({ ...base, pools: ["192.168.0.0/23"] });
    ipam.mapRemoteNetworks("b", { podCidr: "10.200.0.0/24", externalCidr: "10.210.0.0/24" });
    const err = thrown(() => ipam.mapRemoteNetworks("c", { podCidr: "10.200.0.0/24", externalCidr: "10.210.0.0/24" }));
    expect(err.code).toBe("PoolExhausted");
    expect(err.message).toContain("remap 10.200.0.0/24 of cluster c");
    expect(err.message).toContain("192.168.0.0/23");
  });

  test("remote pod and external CIDRs that overlap each other are refused", () => {
    const err = thrown(() =>
      createIpam(base).mapRemoteNetworks("x", { podCidr: "10.0.0.0/8", externalCidr: "10.1.0.0/16" }),
    );
    expect(err.code).toBe("OverlappingNetworks");
    expect(err.message).toContain("externalCIDR of cluster x 10.1.0.0/16");
  });
});

describe("translation", () => {
  const twoPeers = () => {
    const ipam = createIpam(base);
    ipam.mapRemoteNetworks("a", { podCidr: "10.200.0.0/16", externalCidr: "10.220.0.0/16" });
    ipam.mapRemoteNetworks("c", { podCidr: "10.200.0.0/16", externalCidr: "10.230.0.0/16" });
    ipam.setLocalNetworksSeenBy("a", { podCidr: "10.60.0.0/16", externalCidr: "None" });
    ipam.setLocalNetworksSeenBy("c", { podCidr: "None", externalCidr: "10.61.0.0/16" });
    return ipam;
  };

  test.each([
    ["a", "10.200.1.2", "10.0.1.2"],
    ["c", "10.200.255.254", "10.1.255.254"],
  ])("remote pod IP from %s: %s → %s", (cluster, ip, want) => {
    expect(twoPeers().remotePodIp(cluster, ip)).toBe(want);
  });

  test("remote pod IP outside the peer's pod CIDR is refused", () => {
    const err = thrown(() => twoPeers().remotePodIp("a", "10.201.0.1"));
    expect(err.code).toBe("AddressOutOfRange");
    expect(err.message).toContain("outside the podCIDR of cluster a 10.200.0.0/16");
  });

  test.each([
    ["a", "10.200.3.4", "10.60.3.4"],
    ["c", "10.200.3.4", "10.200.3.4"],
    ["c", "10.1.0.9", "10.200.0.9"],
  ])("local endpoint %s/%s → %s", (cluster, ip, want) => {
    expect(twoPeers().endpointIpFor(cluster, ip)).toBe(want);
  });

  test("a third cluster's endpoint gets one stable external address, seen through each peer's remap", () => {
    const ipam = twoPeers();
    const podInC = ipam.remotePodIp("c", "10.200.0.5");
    expect(ipam.endpointIpFor("a", podInC)).toBe("10.210.0.2");
    expect(ipam.endpointIpFor("a", podInC)).toBe("10.210.0.2");
    expect(ipam.endpointIpFor("a", "10.0.0.9")).toBe("10.200.0.9");
    expect(ipam.natMappings()).toEqual([
      {
        clusterId: "a",
        podCidr: "10.60.0.0/16",
        externalCidr: "10.210.0.0/16",
        clusterMappings: { [podInC]: "10.210.0.2" },
      },
      { clusterId: "c", podCidr: "10.200.0.0/16", externalCidr: "10.61.0.0/16", clusterMappings: {} },
    ]);
    const other = "192.168.7.7";
    expect(ipam.endpointIpFor("c", other)).toBe("10.61.0.3");
    ipam.releaseEndpointIp("c", other);
    // Released addresses are handed out again, lowest first.
    expect(ipam.endpointIpFor("a", "192.168.9.9")).toBe("10.210.0.3");
  });

  test("endpoint translation waits for the peer's remapping report", () => {
    const ipam = createIpam(base);
    ipam.mapRemoteNetworks("a", { podCidr: "10.200.0.0/16", externalCidr: "10.220.0.0/16" });
    expect(thrown(() => ipam.endpointIpFor("a", "10.200.0.1")).code).toBe("RemappingUnknown");
    expect(thrown(() => ipam.endpointIpFor("zz", "10.200.0.1")).message).toContain("cluster zz has no networks");
  });

  test("a remap report of another size is refused", () => {
    const ipam = twoPeers();
    const err = thrown(() => ipam.setLocalNetworksSeenBy("a", { podCidr: "10.60.0.0/24", externalCidr: "None" }));
    expect(err.message).toContain("must keep the prefix length");
  });

  test("unpeering frees the peer's external addresses", () => {
    const ipam = twoPeers();
    ipam.endpointIpFor("a", "192.168.1.1");
    ipam.releaseCluster("a");
    expect(ipam.snapshot().endpoints).toEqual({});
  });

  test("an exhausted external CIDR is a typed error", () => {
    const ipam = createIpam({ ...base, externalCidr: "10.210.0.0/30" });
    ipam.mapRemoteNetworks("a", { podCidr: "10.200.0.0/16", externalCidr: "10.220.0.0/16" });
    ipam.setLocalNetworksSeenBy("a", { podCidr: "None", externalCidr: "None" });
    ipam.endpointIpFor("a", "192.168.0.1");
    ipam.endpointIpFor("a", "192.168.0.2");
    const err = thrown(() => ipam.endpointIpFor("a", "192.168.0.3"));
    expect(err.code).toBe("ExternalCidrExhausted");
    expect(err.message).toContain("10.210.0.0/30 has no free address left for endpoint 192.168.0.3");
  });
});
