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
    tables: new Map<string, NftTable>(),
    wg: { peers: [] } as WireguardStatus,
    applied: [] as string[],
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
      world.applied.push(script);
      const name = /^table ip (\S+) \{\}$/m.exec(script)![1]!;
      world.tables.delete(name);
      if (!script.includes(`table ip ${name} {\n`)) return; // only deleted
      const rules = [...script.matchAll(/^ {4}(.*) comment "([^"]+)"$/gm)].map(([, body, comment], handle) => {
        const counter = /counter packets (\d+) bytes (\d+)/.exec(body!);
        return {
          chain: "x",
          handle,
          comment: comment!,
          expr: body!.includes("counter")
            ? [{ counter: { packets: Number(counter?.[1] ?? 0), bytes: Number(counter?.[2] ?? 0) } }]
            : [],
        };
      });
      const sets = Object.fromEntries(
        [...script.matchAll(/^ {2}set (\S+) \{ type ipv4_addr;(?: elements = \{ ([^}]*) \};)? \}$/gm)].map(
          ([, n, e]) => [n!, e ? e.split(", ") : []],
        ),
      );
      const chains = [...script.matchAll(/^ {2}chain (\S+) \{$/gm)].map((m) => m[1]!);
      world.tables.set(name, { family: "ip", name, chains, rules, sets });
    },
    async listTable(_family, name) {
      return structuredClone(world.tables.get(name));
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
    expect(world.tables.get("liqo_gateway")!.rules.map((r) => r.comment!.split("/")[1])).toEqual([
      "pod-dnat",
      "pod-snat",
      "masquerade",
      "no-df",
    ]);
    expect((await reconciler.reconcile(config)).changes).toEqual([]);
  });

  test("repairs each kind of drift and reports it", async () => {
    const { world, reconciler } = fakeWorld();
    await reconciler.reconcile(config);
    const lost = world.tables.get("liqo_gateway")!.rules.splice(1, 1)[0]!.comment!;
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

describe("security modes (in memory)", () => {
  const segregation = (sets: [string, { sources: string[]; destinations: string[] }][] = []) => ({
    mode: "IntraClusterTrafficSegregation" as const,
    sets: new Map(sets),
  });

  test("FullPodToPod has no filter table and deletes one a previous mode left", async () => {
    const { world, reconciler } = fakeWorld();
    await reconciler.reconcile(config);
    expect(world.tables.has("liqo_filter")).toBe(false);
    await reconciler.reconcile(config, segregation());
    expect(world.tables.has("liqo_filter")).toBe(true);
    const back = await reconciler.reconcile(config, { mode: "FullPodToPod" });
    expect(back.changes).toEqual(["nft table liqo_filter deleted (FullPodToPod)"]);
    expect(world.tables.has("liqo_filter")).toBe(false);
    expect(world.tables.has("liqo_gateway")).toBe(true);
    expect((await reconciler.reconcile(config, { mode: "FullPodToPod" })).changes).toEqual([]);
  });

  test("segregation: the peer's tunnel is filtered with its sets (empty when it has none), then nothing to do", async () => {
    const { world, reconciler } = fakeWorld();
    await reconciler.reconcile(config);
    const first = await reconciler.reconcile(config, segregation());
    expect(first.changes).toHaveLength(1);
    expect(first.changes[0]).toStartWith("nft table liqo_filter replaced (digest ");
    const table = world.tables.get("liqo_filter")!;
    expect(table.chains).toEqual(["forward"]);
    expect(table.sets).toEqual({ src_B: [], dst_B: [] });
    expect(table.rules.map((r) => r.comment!.replace(/\/[0-9a-f]{10}$/, ""))).toEqual([
      "established",
      "B/own-pods",
      "B/exposed",
      "B/reject",
      "unknown",
    ]);
    expect(world.applied.at(-1)).toContain('iifname "liqo.wg" ip saddr { 10.0.0.0/16, 10.1.0.0/16 }');
    expect((await reconciler.reconcile(config, segregation())).changes).toEqual([]);
  });

  test("a set element added, or one deleted by hand, replaces the table; its counters carry over", async () => {
    const { world, reconciler } = fakeWorld();
    await reconciler.reconcile(config, segregation([["B", { sources: ["10.0.0.5"], destinations: [] }]]));
    const reject = world.tables.get("liqo_filter")!.rules.find((r) => r.comment!.startsWith("B/reject/"))!;
    reject.expr = [{ counter: { packets: 4, bytes: 240 } }];
    const grown = segregation([["B", { sources: ["10.0.0.5"], destinations: ["10.200.0.9"] }]]);
    const report = await reconciler.reconcile(config, grown);
    expect(report.changes[0]).toContain("sets changed: dst_B=1");
    expect(report.rejected.get("B")).toEqual({ packets: 4, bytes: 240 });
    expect(world.applied.at(-1)).toContain("counter packets 4 bytes 240 reject");
    expect(world.tables.get("liqo_filter")!.sets.dst_B).toEqual(["10.200.0.9"]);
    world.tables.get("liqo_filter")!.sets.src_B = [];
    const repaired = await reconciler.reconcile(config, grown);
    expect(repaired.changes[0]).toContain("sets changed: src_B=1");
    expect(world.tables.get("liqo_filter")!.sets.src_B).toEqual(["10.0.0.5"]);
    expect((await reconciler.reconcile(config, grown)).changes).toEqual([]);
  });

  test("a rule deleted by hand is put back", async () => {
    const { world, reconciler } = fakeWorld();
    await reconciler.reconcile(config, segregation());
    const rules = world.tables.get("liqo_filter")!.rules;
    const lost = rules.splice(0, 1)[0]!.comment!;
    const report = await reconciler.reconcile(config, segregation());
    expect(report.changes[0]).toContain(`missing: ${lost};`);
    expect(world.tables.get("liqo_filter")!.rules).toHaveLength(5);
  });
});
