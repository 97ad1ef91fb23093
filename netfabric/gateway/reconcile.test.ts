// The reconciler against in-memory fakes of its adapters: what it changes, and that a second
// pass over an unchanged world changes nothing. The real thing runs in tests/netns.
import { describe, expect, test } from "bun:test";
import type { IpAdapter } from "../os/ip.ts";
import type { NftAdapter, NftTable } from "../os/nft.ts";
import type { CommandRunner } from "../os/run.ts";
import type { UapiClient, WireguardConfig, WireguardStatus } from "../os/wireguard-uapi.ts";
import type { GatewayConfig } from "./config.ts";
import { createGatewayReconciler } from "./reconcile.ts";

function fakeWorld() {
  const world = {
    forward: "0",
    rules: [] as { priority: number; dst?: string; dstlen?: number; table: string }[],
    routes: [] as { dst: string; dev: string }[],
    link: { mtu: 1420, flags: ["NOARP"] },
    table: undefined as NftTable | undefined,
    wg: { peers: [] } as WireguardStatus,
  };
  const ip: IpAdapter = {
    async json(args: readonly string[]) {
      const key = args.join(" ");
      if (key === "rule show") return structuredClone(world.rules) as never[];
      if (key.startsWith("route show table")) return structuredClone(world.routes) as never[];
      if (key.startsWith("link show dev")) return [structuredClone(world.link)] as never[];
      throw new Error(`unexpected ip -json ${key}`);
    },
    async batch(lines) {
      for (const line of lines) {
        const w = line.split(" ");
        if (w[0] === "rule" && w[1] === "add") {
          const [dst, len] = w[3]!.split("/");
          world.rules.push({ priority: Number(w[7]), dst, dstlen: Number(len), table: w[5]! });
        } else if (w[0] === "route" && w[1] === "replace") {
          world.routes = world.routes.filter((r) => r.dst !== w[2]).concat({ dst: w[2]!, dev: w[4]! });
        } else if (w[0] === "link") {
          world.link = { mtu: Number(w[4]), flags: ["NOARP", "UP"] };
        } else throw new Error(`unexpected ip line ${line}`);
      }
    },
    async bridgeJson() {
      return [];
    },
    async bridge() {},
  };
  const nft: NftAdapter = {
    async apply(script) {
      const comments = [...script.matchAll(/comment "([^"]+)"/g)].map((m) => m[1]!);
      world.table = {
        family: "ip",
        name: "liqo_gateway",
        chains: ["prerouting", "postrouting"],
        rules: comments.map((comment, handle) => ({ chain: "x", handle, comment, expr: [] })),
      };
    },
    async listTable() {
      return structuredClone(world.table);
    },
    async deleteRule() {},
  };
  const wireguard: UapiClient = {
    device: "liqo.wg",
    async get() {
      return structuredClone(world.wg);
    },
    async set(c: WireguardConfig) {
      world.wg = {
        privateKey: c.privateKey,
        listenPort: c.listenPort,
        peers: c.peers.map((p) => ({ ...p, lastHandshakeSec: 0, rxBytes: 0, txBytes: 0 })),
      };
    },
  };
  const runner: CommandRunner = {
    async run(argv) {
      if (argv.includes("-n")) return `${world.forward}\n`;
      world.forward = "1";
      return "";
    },
  };
  return { world, reconciler: createGatewayReconciler({ ip, nft, wireguard, runner }) };
}

const config: GatewayConfig = {
  device: "liqo.wg",
  localPodCidr: "10.200.0.0/16",
  localExternalCidr: "10.210.0.0/16",
  privateKey: "YGbyMPpWKvqfCg8wD1TchmBPBFWCE4USd0ut7dl0i1M=",
  listenPort: 51820,
  underlay: { mtu: 1500, ipv6: true },
  peers: [
    {
      clusterId: "B",
      localNatPodCidr: "10.2.0.0/16",
      localNatExternalCidr: "None",
      remoteNatPodCidr: "10.0.0.0/16",
      remoteNatExternalCidr: "10.1.0.0/16",
      publicKey: "qZcd6k4rY0Z44wSygvF/1k3EBO5Bq09Ixq5QhzV/Lzc=",
      endpoint: "[fd00::2]:51820",
    },
  ],
};

describe("gateway reconciler (in memory)", () => {
  test("configures an empty world once, then finds nothing to do", async () => {
    const { world, reconciler } = fakeWorld();
    const first = await reconciler.reconcile(config);
    expect(first.changes[0]).toBe("net.ipv4.ip_forward=1");
    expect(first.changes).toContain("link liqo.wg mtu 1420 up");
    expect(world.rules.map((r) => `${r.dst}/${r.dstlen}`)).toEqual(["10.0.0.0/16", "10.1.0.0/16"]);
    expect(world.wg.peers[0]!.allowedIps).toEqual(["10.0.0.0/16", "10.1.0.0/16"]);
    expect(world.table!.rules.map((r) => r.comment!.split("/")[1])).toEqual(["pod-dnat", "pod-snat", "masquerade"]);
    expect((await reconciler.reconcile(config)).changes).toEqual([]);
  });

  test("repairs each kind of drift and reports it", async () => {
    const { world, reconciler } = fakeWorld();
    await reconciler.reconcile(config);
    const lost = world.table!.rules.splice(1, 1)[0]!.comment!;
    world.rules.pop();
    world.wg.listenPort = 1;
    const report = await reconciler.reconcile(config);
    expect(report.changes).toEqual([
      "wireguard liqo.wg: listen port 1 ≠ 51820",
      "rule add to 10.1.0.0/16 lookup 18952 priority 1800",
      `nft table liqo_gateway replaced (missing: ${lost}; unexpected: none)`,
    ]);
    expect((await reconciler.reconcile(config)).changes).toEqual([]);
  });

  test("a new NatMapping changes the NAT table only", async () => {
    const { reconciler } = fakeWorld();
    await reconciler.reconcile(config);
    const withMapping = { ...config, peers: [{ ...config.peers[0]!, natMappings: { "10.5.0.9": "10.210.0.2" } }] };
    const changes = (await reconciler.reconcile(withMapping)).changes;
    expect(changes).toHaveLength(1);
    expect(changes[0]).toStartWith("nft table liqo_gateway replaced (missing: B/natmapping/");
  });
});
