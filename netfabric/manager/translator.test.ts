import { describe, expect, test } from "bun:test";
import { createIpam, type Ipam } from "../ipam/index.ts";
import { createIpTranslator } from "./translator.ts";
import { parsePeers, PeersFileError } from "./peers-file.ts";

function rome() {
  const ipam = createIpam({ podCidr: "10.200.0.0/16", serviceCidr: "10.50.0.0/16", externalCidr: "10.210.0.0/16" });
  ipam.mapRemoteNetworks("milan", { podCidr: "10.200.0.0/16", externalCidr: "10.211.0.0/16" }); // remapped to 10.0.0.0/16
  ipam.setLocalNetworksSeenBy("milan", { podCidr: "10.1.0.0/16", externalCidr: "None" });
  ipam.mapRemoteNetworks("turin", { podCidr: "10.120.0.0/16", externalCidr: "10.121.0.0/16" });
  ipam.setLocalNetworksSeenBy("turin", { podCidr: "None", externalCidr: "None" });
  return ipam;
}

describe("createIpTranslator", () => {
  test("backward: a milan pod IP lands in the remapped network", () => {
    expect(createIpTranslator(rome(), "milan")("10.200.3.4", "backward")).toBe("10.0.3.4");
  });
  test("forward: our pod as milan sees it", () => {
    expect(createIpTranslator(rome(), "milan")("10.200.3.4", "forward")).toBe("10.1.3.4");
  });
  test("forward: milan's own pod goes back to its real address", () => {
    expect(createIpTranslator(rome(), "milan")("10.0.3.4", "forward")).toBe("10.200.3.4");
  });
  test("forward: a turin pod gets an external address and the allocation is reported", () => {
    const ipam = rome();
    const replays: ((i: Ipam) => void)[] = [];
    const t = createIpTranslator(() => ipam, "milan", { onAllocate: (r) => replays.push(r) });
    expect(t("10.120.0.7", "forward")).toBe("10.210.0.2");
    expect(replays).toHaveLength(1);
    const other = rome();
    replays[0]!(other);
    expect(other.natMappings().find((m) => m.clusterId === "milan")?.clusterMappings).toEqual({
      "10.120.0.7": "10.210.0.2",
    });
    // Our own pods never allocate.
    t("10.200.0.1", "forward");
    expect(replays).toHaveLength(1);
  });
  test("failures are reported and the address passes through (a throw would trap the plugin)", () => {
    const errors: string[] = [];
    const t = createIpTranslator(rome(), "venice", { onError: (e, ip, d) => errors.push(`${d} ${ip}: ${e.message}`) });
    expect(t("10.200.0.1", "backward")).toBe("10.200.0.1");
    expect(
      createIpTranslator(rome(), "milan", { onError: (e) => errors.push(e.message) })("10.99.0.1", "backward"),
    ).toBe("10.99.0.1");
    expect(errors[0]).toMatch(/backward 10.200.0.1: cluster venice has no networks/);
    expect(errors[1]).toMatch(/outside the podCIDR of cluster milan/);
  });
});

describe("parsePeers", () => {
  test("reads peers, defaulting the name to a DNS-label ID", () => {
    expect(parsePeers("peers:\n- remoteClusterId: milan\n  tenantNamespace: liqo-tenant-milan\n")).toEqual([
      { remoteClusterId: "milan", remoteClusterName: "milan", tenantNamespace: "liqo-tenant-milan" },
    ]);
    expect(parsePeers("")).toEqual([]);
    expect(parsePeers("peers:\n")).toEqual([]);
  });
  test.each([
    ["peers: [", /not valid YAML/],
    ["peers:\n- remoteClusterId: milan\n", /peers.0.tenantNamespace/],
    ["peers:\n- remoteClusterId: Milan_ID\n  tenantNamespace: t\n", /remoteClusterName is required/],
    ["peers:\n- remoteClusterId: milan\n  tenantNamespace: Bad_NS\n", /must be a namespace name/],
    [
      "peers:\n- {remoteClusterId: milan, tenantNamespace: a}\n- {remoteClusterId: milan, tenantNamespace: b}\n",
      /listed twice/,
    ],
  ])("rejects %p", (text, message) => {
    expect(() => parsePeers(text)).toThrow(PeersFileError);
    expect(() => parsePeers(text)).toThrow(message);
  });
});
