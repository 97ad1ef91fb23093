import { describe, expect, test } from "bun:test";
import { tunnelMtu, type GatewayConfig, type PeerTunnel } from "./config.ts";
import { masqueradeAddress, renderNatTable } from "./nat-table.ts";
import { desiredRoutes, desiredRules, planRouting } from "./routing.ts";
import { desiredWireguard, keepRoamedEndpoints, REJECT_AFTER_TIME_SEC, wireguardDrift } from "./wireguard.ts";

const keyA = "YGbyMPpWKvqfCg8wD1TchmBPBFWCE4USd0ut7dl0i1M=";
const keyB = "qZcd6k4rY0Z44wSygvF/1k3EBO5Bq09Ixq5QhzV/Lzc=";

const peerB: PeerTunnel = {
  clusterId: "B",
  localNatPodCidr: "10.2.0.0/16",
  localNatExternalCidr: "None",
  remoteNatPodCidr: "10.0.0.0/16",
  remoteNatExternalCidr: "10.1.0.0/16",
  publicKey: keyB,
  endpoint: "198.18.0.2:51820",
};

const config: GatewayConfig = {
  device: "liqo.wg",
  localPodCidr: "10.200.0.0/16",
  localExternalCidr: "10.210.0.0/16",
  privateKey: keyA,
  listenPort: 51820,
  underlay: { mtu: 1500, ipv6: false },
  peers: [peerB],
};

const options = { routingTable: 18952, rulePriority: 1800, natTable: "liqo_gateway", filterTable: "liqo_filter" };

describe("tunnelMtu", () => {
  test.each([
    [{ underlay: { mtu: 1500, ipv6: false } }, 1440],
    [{ underlay: { mtu: 1500, ipv6: true } }, 1420],
    [{ underlay: { mtu: 9000, ipv6: false } }, 8940],
    [{ underlay: { mtu: 1500, ipv6: true }, mtu: 1300 }, 1300],
  ])("%j → %d", (c, want) => {
    expect(tunnelMtu(c)).toBe(want);
  });
});

describe("renderNatTable", () => {
  const lines = (c: GatewayConfig) =>
    renderNatTable(c, options)
      .script.split("\n")
      .map((l) => l.trim());

  test("replaces the table atomically", () => {
    const script = renderNatTable(config, options).script;
    expect(script.startsWith("table ip liqo_gateway {}\ndelete table ip liqo_gateway\ntable ip liqo_gateway {")).toBe(
      true,
    );
  });

  test("netmaps our pod CIDR both ways when the peer remapped it", () => {
    const l = lines(config);
    expect(l).toContainEqual(
      expect.stringContaining(
        'iifname "liqo.wg" ip saddr { 10.0.0.0/16, 10.1.0.0/16 } ip daddr 10.2.0.0/16 dnat ip prefix to ip daddr map { 10.2.0.0/16 : 10.200.0.0/16 }',
      ),
    );
    expect(l).toContainEqual(
      expect.stringContaining(
        'oifname "liqo.wg" ip daddr { 10.0.0.0/16, 10.1.0.0/16 } ip saddr 10.200.0.0/16 snat ip prefix to ip saddr map { 10.200.0.0/16 : 10.2.0.0/16 }',
      ),
    );
  });

  test("no netmap for networks the peer kept", () => {
    const kept = { ...config, peers: [{ ...peerB, localNatPodCidr: "10.200.0.0/16" }] };
    const ids = renderNatTable(kept, options).ruleIds.map((id) => id.split("/")[1]);
    expect(ids).toEqual(["no-df", "masquerade"]);
  });

  test("external remap and per-endpoint NatMappings, mappings first", () => {
    const hub = {
      ...config,
      peers: [
        {
          ...peerB,
          localNatExternalCidr: "10.3.0.0/16",
          natMappings: { "10.5.0.9": "10.210.0.7", "10.5.0.3": "10.210.0.2" },
        },
      ],
    };
    const { ruleIds, script } = renderNatTable(hub, options);
    expect(ruleIds.map((id) => id.split("/")[1])).toEqual([
      "no-df",
      "natmapping",
      "pod-dnat",
      "pod-snat",
      "external-dnat",
      "masquerade",
    ]);
    // Matched as the peer addresses them: through its remap of our external CIDR.
    expect(script).toContain(
      "ip daddr { 10.3.0.2, 10.3.0.7 } dnat ip to ip daddr map { 10.3.0.2 : 10.5.0.3, 10.3.0.7 : 10.5.0.9 }",
    );
    expect(script).toContain("snat ip to 10.3.0.1");
  });

  test("rule ids change when the rule changes, not otherwise", () => {
    const a = renderNatTable(config, options).ruleIds;
    expect(renderNatTable(structuredClone(config), options).ruleIds).toEqual(a);
    const moved = renderNatTable({ ...config, peers: [{ ...peerB, localNatPodCidr: "10.9.0.0/16" }] }, options).ruleIds;
    expect(moved[0]).toBe(a[0]!); // the WireGuard rule does not depend on the peers
    expect(moved[1]!.split("/").slice(0, 2)).toEqual(a[1]!.split("/").slice(0, 2));
    expect(moved[1]).not.toBe(a[1]);
    const port = renderNatTable({ ...config, listenPort: 51821 }, options).ruleIds;
    expect(port[0]!.split("/").slice(0, 2)).toEqual(["wireguard", "no-df"]);
    expect(port[0]).not.toBe(a[0]);
  });

  test("WireGuard's own UDP (by its listen port) leaves without DF, from a filter chain on output, with or without peers", () => {
    for (const c of [config, { ...config, peers: [] }]) {
      const l = lines(c);
      const at = l.indexOf("chain output {");
      expect(at).toBeGreaterThan(0);
      expect(l[at + 1]).toBe("type filter hook output priority mangle; policy accept;");
      expect(l[at + 2]).toStartWith('udp sport 51820 ip frag-off set ip frag-off & 0xbfff comment "wireguard/no-df/');
      expect(l[at + 3]).toBe("}");
    }
  });

  test.each([
    ["None", "10.210.0.1"],
    ["10.3.0.0/16", "10.3.0.1"],
  ])("masquerade address with external NAT %s is %s", (nat, want) => {
    expect(masqueradeAddress(config, { ...peerB, localNatExternalCidr: nat })).toBe(want);
  });
});

describe("policy routing", () => {
  const rules = desiredRules(config, options);
  const routes = desiredRoutes(config);

  test("desired rules and routes send the peer's networks to the dedicated table", () => {
    expect(rules).toEqual([
      { to: "10.0.0.0/16", table: 18952, priority: 1800 },
      { to: "10.1.0.0/16", table: 18952, priority: 1800 },
    ]);
    expect(routes).toEqual([
      { to: "10.0.0.0/16", dev: "liqo.wg" },
      { to: "10.1.0.0/16", dev: "liqo.wg" },
    ]);
  });

  test.each([
    {
      name: "nothing yet",
      rules: [],
      routes: [],
      want: [
        "rule add to 10.0.0.0/16 lookup 18952 priority 1800",
        "rule add to 10.1.0.0/16 lookup 18952 priority 1800",
        "route replace 10.0.0.0/16 dev liqo.wg table 18952",
        "route replace 10.1.0.0/16 dev liqo.wg table 18952",
      ],
    },
    {
      name: "in sync",
      rules: [
        { priority: 1800, dst: "10.0.0.0", dstlen: 16, table: "18952" },
        { priority: 1800, dst: "10.1.0.0", dstlen: 16, table: "18952" },
        { priority: 0, table: "local" },
      ],
      routes: [
        { dst: "10.0.0.0/16", dev: "liqo.wg" },
        { dst: "10.1.0.0/16", dev: "liqo.wg" },
      ],
      want: [],
    },
    {
      name: "stale entries of a removed peer",
      rules: [
        { priority: 1800, dst: "10.0.0.0", dstlen: 16, table: "18952" },
        { priority: 1800, dst: "10.1.0.0", dstlen: 16, table: "18952" },
        { priority: 1800, dst: "10.9.9.9", table: "18952" },
      ],
      routes: [
        { dst: "10.0.0.0/16", dev: "liqo.wg" },
        { dst: "10.1.0.0/16", dev: "other" },
        { dst: "10.9.9.9", dev: "liqo.wg" },
      ],
      want: [
        "rule del to 10.9.9.9/32 lookup 18952 priority 1800",
        "route replace 10.1.0.0/16 dev liqo.wg table 18952",
        "route del 10.9.9.9/32 table 18952",
      ],
    },
  ])("plan: $name", ({ rules: observedRules, routes: observedRoutes, want }) => {
    expect(planRouting(rules, routes, observedRules, observedRoutes, options)).toEqual([...want]);
  });
});

describe("wireguard desired state and drift", () => {
  const want = desiredWireguard(config);
  const live = {
    privateKey: keyA,
    listenPort: 51820,
    peers: [
      {
        publicKey: keyB,
        endpoint: "198.18.0.2:51820",
        allowedIps: ["10.1.0.0/16", "10.0.0.0/16"],
        persistentKeepalive: 10,
        lastHandshakeSec: 1,
        rxBytes: 1,
        txBytes: 1,
      },
    ],
  };

  test("one peer per remote cluster, allowed IPs = its networks as we see them", () => {
    expect(want.peers).toEqual([
      {
        publicKey: keyB,
        endpoint: "198.18.0.2:51820",
        persistentKeepalive: 10,
        allowedIps: ["10.0.0.0/16", "10.1.0.0/16"],
      },
    ]);
  });

  test.each([
    [
      "in sync (allowed IP order and roamed endpoint do not matter)",
      (l: typeof live) => {
        l.peers[0]!.endpoint = "198.18.0.99:4000";
      },
      [],
    ],
    [
      "other port",
      (l: typeof live) => {
        l.listenPort = 1;
      },
      ["listen port 1 ≠ 51820"],
    ],
    [
      "peer removed",
      (l: typeof live) => {
        l.peers = [];
      },
      [`peer ${keyB} missing`],
    ],
    [
      "allowed IP lost",
      (l: typeof live) => {
        l.peers[0]!.allowedIps = ["10.0.0.0/16"];
      },
      [`peer ${keyB} allowed IPs 10.0.0.0/16`],
    ],
    [
      "stale peer",
      (l: typeof live) => {
        l.peers.push({ ...l.peers[0]!, publicKey: keyA });
      },
      [`stale peer ${keyA}`],
    ],
    [
      "private key",
      (l: typeof live) => {
        l.privateKey = keyB;
      },
      ["private key"],
    ],
  ])("%s", (_name, damage, reasons) => {
    const l = structuredClone(live);
    damage(l);
    expect(wireguardDrift(want, l)).toEqual(reasons);
  });

  test("a repair keeps a roamed endpoint while its handshake is fresh, and resets a stale one", () => {
    const roamed = structuredClone(live);
    roamed.peers[0]!.endpoint = "198.18.9.254:40000";
    roamed.peers[0]!.lastHandshakeSec = 1000;
    expect(keepRoamedEndpoints(want, roamed, 1000 + 30).peers[0]!.endpoint).toBe("198.18.9.254:40000");
    expect(keepRoamedEndpoints(want, roamed, 1000 + REJECT_AFTER_TIME_SEC).peers[0]!.endpoint).toBe("198.18.0.2:51820");
    roamed.peers[0]!.lastHandshakeSec = 0; // never handshaked: the live endpoint is only what we set
    expect(keepRoamedEndpoints(want, roamed, 30).peers[0]!.endpoint).toBe("198.18.0.2:51820");
    expect(keepRoamedEndpoints(want, { peers: [] }, 30)).toEqual(want);
  });
});
