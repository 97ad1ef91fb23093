import { describe, expect, test } from "bun:test";
import type { TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import { gatewayVxlan, nodeVxlan, overlayIp, overlayMac, remoteNetworks } from "./plan.ts";

const spec = (s: Partial<TunnelEndpoint["spec"]>) =>
  ({
    spec: {
      remotePodCIDR: "10.200.0.0/16",
      remoteNATPodCIDR: "10.0.0.0/16",
      remoteExternalCIDR: "10.210.0.0/16",
      remoteNATExternalCIDR: "None",
      ...s,
    },
  }) as TunnelEndpoint;

describe("overlay plan", () => {
  test("overlay addresses keep the low three bytes of the VTEP address", () => {
    expect(overlayIp("172.16.1.2")).toBe("240.16.1.2");
    expect(() => overlayIp("nope")).toThrow(/VTEP address/);
    expect(overlayMac("172.16.1.2")).toBe("02:4c:ac:10:01:02");
  });
  test("nodes route the peers' networks as we see them to the gateway; invalid ones are skipped", () => {
    const teps = [
      spec({}),
      spec({ remoteNATPodCIDR: "None", remotePodCIDR: "10.120.0.0/16", remoteExternalCIDR: "10.121.0.0/16" }),
      spec({ remoteNATPodCIDR: "bad" }),
    ];
    expect(remoteNetworks(teps)).toEqual(["10.0.0.0/16", "10.120.0.0/16", "10.121.0.0/16", "10.210.0.0/16"]);
    const node = nodeVxlan({ vtepIp: "172.16.1.1", dev: "eth0" }, "172.16.1.2", [teps[0]!]);
    expect(node).toMatchObject({
      name: "liqo.vxlan",
      vni: 200,
      localIp: "172.16.1.1",
      address: "240.16.1.1/8",
      remoteVteps: ["172.16.1.2"],
      routes: [
        { to: "10.0.0.0/16", via: "240.16.1.2" },
        { to: "10.210.0.0/16", via: "240.16.1.2" },
      ],
    });
    // No gateway published yet: the interface exists, with no routes.
    expect(nodeVxlan({ vtepIp: "172.16.1.1", dev: "eth0" }, undefined, teps)).toMatchObject({
      remoteVteps: [],
      routes: [],
    });
  });
  test("the gateway routes each node's pod CIDR back to that node", () => {
    const gw = gatewayVxlan({ vtepIp: "172.16.1.2", dev: "eth0" }, [
      { vtepIp: "172.16.1.3", podCidr: "10.200.1.0/24" },
      { vtepIp: "172.16.1.1", podCidr: "10.200.0.0/24" },
      { vtepIp: "172.16.1.2" },
    ]);
    expect(gw.remoteVteps).toEqual(["172.16.1.1", "172.16.1.3"]);
    expect(gw.routes).toEqual([
      { to: "10.200.0.0/24", via: "240.16.1.1" },
      { to: "10.200.1.0/24", via: "240.16.1.3" },
    ]);
  });
  test("in-cluster, the gateway pod keeps its own node's pod CIDR on its own interface (no route over the overlay)", () => {
    // The gateway pod 10.100.1.2 runs on the node whose pod CIDR is 10.100.1.0/24 (VTEP 172.31.1.10).
    const gw = gatewayVxlan({ vtepIp: "10.100.1.2", dev: "eth0" }, [
      { vtepIp: "172.31.1.10", podCidr: "10.100.1.0/24" },
      { vtepIp: "172.31.1.11", podCidr: "10.100.0.0/24" },
    ]);
    expect(gw.remoteVteps).toEqual(["172.31.1.10", "172.31.1.11"]);
    expect(gw.routes).toEqual([{ to: "10.100.0.0/24", via: "240.31.1.11" }]);
  });
});
