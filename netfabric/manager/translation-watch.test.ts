// The watcher's translation (from NetworkConfigs and NatMappings as the API holds them) against
// the network manager's in-process translator (from the IPAM) on the same peering: same answers
// for every kind of address, both directions; what the watcher cannot know is a clear error.
import { describe, expect, test } from "bun:test";
import { createIpam, type Ipam } from "../ipam/index.ts";
import { natMappingSpec, remoteNetworkConfigStatus } from "./forge.ts";
import {
  backwardKey,
  backwardPending,
  endpointRequestKey,
  requestedEndpoints,
  translateWith,
  TranslationError,
  type TranslationSources,
} from "./translation-watch.ts";
import { createIpTranslator } from "./translator.ts";

const milanDeclared = { podCidr: "10.200.0.0/16", externalCidr: "10.211.0.0/16" };

function rome(): Ipam {
  const ipam = createIpam({ podCidr: "10.200.0.0/16", serviceCidr: "10.50.0.0/16", externalCidr: "10.210.0.0/16" });
  ipam.mapRemoteNetworks("milan", milanDeclared);
  ipam.setLocalNetworksSeenBy("milan", { podCidr: "10.1.0.0/16", externalCidr: "10.3.0.0/16" });
  ipam.mapRemoteNetworks("turin", { podCidr: "10.120.0.0/16", externalCidr: "10.121.0.0/16" });
  ipam.setLocalNetworksSeenBy("turin", { podCidr: "None", externalCidr: "None" });
  return ipam;
}

/** The API objects the network manager writes for this IPAM, reduced to what the watcher reads. */
function sourcesOf(ipam: Ipam, id: string, declared: { podCidr: string; externalCidr: string }): TranslationSources {
  const snap = ipam.snapshot();
  const c = snap.clusters[id]!;
  const mapped = ipam.mappedNetworks(id)!;
  const nat = ipam.natMappings().find((m) => m.clusterId === id);
  const cluster = { clusterID: id, clusterName: id };
  const backend = { backendType: "wireguard", backend_config: {}, endpointIP: "1.2.3.4" };
  return {
    remoteClusterId: id,
    local: {
      spec: { cluster, podCIDR: ipam.localPodCidr, externalCIDR: ipam.localExternalCidr, ...backend },
      status: {
        processed: true,
        podCIDRNAT: c.localNatPodCidr === ipam.localPodCidr ? "None" : c.localNatPodCidr,
        externalCIDRNAT: c.localNatExternalCidr === ipam.localExternalCidr ? "None" : c.localNatExternalCidr,
      },
    },
    remote: {
      spec: { cluster, podCIDR: declared.podCidr, externalCIDR: declared.externalCidr, ...backend },
      status: remoteNetworkConfigStatus(mapped),
    },
    natMapping: nat ? { spec: natMappingSpec(nat, mapped.podCidr, ipam.localExternalCidr) } : undefined,
  };
}

describe("translateWith agrees with the in-process translator", () => {
  const ipam = rome();
  const manager = createIpTranslator(() => ipam, "milan");
  // A turin pod reflected to milan: the manager allocates its external address first.
  const turinEndpoint = "10.120.0.7";
  const viaManager = manager(turinEndpoint, "forward");
  const sources = sourcesOf(ipam, "milan", milanDeclared);
  test.each([
    ["backward", "10.200.3.4"],
    ["backward", "10.200.255.254"],
    ["forward", "10.200.0.1"],
    ["forward", "10.200.77.9"],
    ["forward", ipam.remotePodIp("milan", "10.200.9.9")],
    ["forward", turinEndpoint],
  ] as const)("%s %s", (direction, ip) => {
    expect(translateWith(sources, ip, direction)).toBe(manager(ip, direction));
  });
  test("the third-cluster endpoint really went through the NatMapping", () => {
    expect(viaManager.startsWith("10.3.")).toBe(true);
    expect(translateWith(sources, turinEndpoint, "forward")).toBe(viaManager);
  });
  test("a peer that kept our networks", () => {
    const turin = sourcesOf(ipam, "turin", { podCidr: "10.120.0.0/16", externalCidr: "10.121.0.0/16" });
    const t = createIpTranslator(() => ipam, "turin");
    for (const ip of ["10.200.1.1", "10.120.4.4"]) expect(translateWith(turin, ip, "forward")).toBe(t(ip, "forward"));
    expect(translateWith(turin, "10.120.4.4", "backward")).toBe(t("10.120.4.4", "backward"));
  });
});

describe("what the watcher cannot answer is a clear error", () => {
  const sources = sourcesOf(rome(), "milan", milanDeclared);
  test.each([
    ["no peer NetworkConfig", { ...sources, remote: undefined }, "10.200.0.1", "backward", /has no networks here yet/],
    [
      "outside the peer's pod CIDR",
      sources,
      "10.99.0.1",
      "backward",
      /outside the podCIDR of cluster milan \(10.200.0.0\/16\)/,
    ],
    [
      "our status not reported",
      { ...sources, local: { ...sources.local!, status: { processed: false } } },
      "10.200.0.1",
      "forward",
      /has not reported how it remapped/,
    ],
    [
      "endpoint with no NatMapping",
      { ...sources, natMapping: undefined },
      "10.120.0.99",
      "forward",
      /no NatMapping entry for 10.120.0.99/,
    ],
    ["not an address", sources, "10.1", "forward", /10.1/],
  ] as const)("%s", (_name, s, ip, direction, message) => {
    expect(() => translateWith(s as TranslationSources, ip, direction)).toThrow(message);
  });
  test("errors are TranslationErrors", () => {
    expect(() => translateWith({ remoteClusterId: "x" }, "10.0.0.1", "backward")).toThrow(TranslationError);
  });
  test("backwardKey changes with the peer's NetworkConfig (pod CIDR, processed, remap), not with the NatMapping", () => {
    const k = backwardKey(sources);
    expect(backwardKey({ ...sources, natMapping: undefined })).toBe(k);
    expect(backwardKey({ ...sources, local: undefined })).toBe(k);
    const remote = sources.remote!;
    for (const changed of [
      { ...remote, spec: { ...remote.spec, podCIDR: "10.99.0.0/16" } },
      { ...remote, status: { ...remote.status, processed: false } },
      { ...remote, status: { ...remote.status, podCIDRNAT: "10.98.0.0/16" } },
      undefined,
    ])
      expect(backwardKey({ ...sources, remote: changed as typeof remote })).not.toBe(k);
  });
  test("pending says when the peer's pod IPs cannot be translated, with translateWith's reason", () => {
    expect(backwardPending(sources)).toBeUndefined();
    for (const s of [
      { ...sources, remote: undefined },
      { ...sources, remote: { ...sources.remote!, status: { processed: false } } },
    ]) {
      const why = backwardPending(s);
      expect(why).toContain("cluster milan has no networks here yet");
      expect(() => translateWith(s, "10.200.0.1", "backward")).toThrow(why!);
    }
  });
});

describe("requests for third-cluster addresses", () => {
  const sources = sourcesOf(rome(), "milan", milanDeclared);
  const code = (s: TranslationSources, ip: string, d: "forward" | "backward") => {
    try {
      translateWith(s, ip, d);
      return "ok";
    } catch (err) {
      return (err as TranslationError).code;
    }
  };
  test("only a missing NatMapping entry is requestable; the rest is NotReady or Invalid", () => {
    expect(code({ ...sources, natMapping: undefined }, "10.120.0.99", "forward")).toBe("NoMapping");
    expect(code(sources, "10.200.0.1", "forward")).toBe("ok");
    expect(code({ ...sources, remote: undefined }, "10.200.0.1", "backward")).toBe("NotReady");
    expect(code(sources, "10.99.0.1", "backward")).toBe("Invalid");
  });
  test("the request annotations name one address each and are read back", () => {
    expect(endpointRequestKey("10.120.0.99")).toBe("endpoint-request.net.liqo.io/10.120.0.99");
    expect(
      requestedEndpoints({
        [endpointRequestKey("10.120.0.99")]: "",
        [endpointRequestKey("10.120.0.7")]: "",
        other: "x",
      }).sort(),
    ).toEqual(["10.120.0.7", "10.120.0.99"]);
    expect(requestedEndpoints(undefined)).toEqual([]);
  });
});
