// Real data plane: wireguard-go tunnel + nftables NAT between two clusters whose pod CIDRs
// overlap. Proves that the IPAM's remapped addresses work end to end and that reconcile
// repairs hand-made damage.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createIp } from "../../netfabric/os/ip.ts";
import { createNft } from "../../netfabric/os/nft.ts";
import { createLab, runner, waitFor, type Lab } from "./lab.ts";
import { buildCluster, connect, type Cluster } from "./clusters.ts";

const connectScript = join(import.meta.dir, "fixtures", "connect.ts");
const echoScript = join(import.meta.dir, "fixtures", "echo-source.ts");

// Real namespaces and processes: above bun's 5 s default, below the waits' own deadlines × 2.
const slow = 30_000;

let lab: Lab;
let a: Cluster;
let b: Cluster;

/** What pod B's server saw as our source, or undefined when the connection failed. */
async function sourceSeenByB(timeoutMs = 1500): Promise<string | undefined> {
  const target = a.ipam.remotePodIp("B", b.podIp);
  try {
    const out = await lab.sh(a.pod, [process.execPath, connectScript, target, "7000", String(timeoutMs)]);
    return out.trim() || undefined;
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  lab = await createLab();
  try {
    // B reserves 10.0.0.0/15 so the two sides pick different remaps: a bug that swaps "how we
    // see them" with "how they see us" cannot pass by coincidence.
    a = await buildCluster(lab, "A", "10.200.1.10");
    b = await buildCluster(lab, "B", "10.200.1.20", ["10.0.0.0/15"]);
    await connect(lab, a, b, 1);
    await lab.serve(b.pod, echoScript, ["7000"]);
  } catch (err) {
    await lab.cleanup();
    throw err;
  }
}, slow);

afterAll(async () => {
  await lab?.cleanup();
}, slow);

describe("two clusters with overlapping pod CIDRs", () => {
  test(
    "the first reconcile configures everything, the second finds nothing to do",
    async () => {
      for (const c of [a, b]) {
        const first = await c.reconciler.reconcile(c.config);
        expect(first.changes.some((x) => x.startsWith("wireguard"))).toBe(true);
        expect(first.changes.some((x) => x.startsWith("nft table"))).toBe(true);
        expect(first.changes.some((x) => x.startsWith("rule add"))).toBe(true);
      }
      for (const c of [a, b]) expect((await c.reconciler.reconcile(c.config)).changes).toEqual([]);
      // 1500 underlay MTU minus 60 bytes of IPv4 + UDP + WireGuard overhead.
      const [link] = await createIp(runner, a.gw).json<{ mtu: number }>(["link", "show", "dev", a.device]);
      expect(link!.mtu).toBe(1440);
    },
    slow,
  );

  test("remapped CIDRs really differ from the pod CIDR on both sides", () => {
    expect(a.ipam.remotePodIp("B", b.podIp)).not.toBe(b.podIp);
    expect(b.ipam.remotePodIp("A", a.podIp)).not.toBe(a.ipam.remotePodIp("B", b.podIp));
  });

  test(
    "a pod in A reaches B's pod at its remapped IP, and B sees A's remapped IP",
    async () => {
      const seen = await waitFor("TCP from pod A to pod B through the tunnel", () => sourceSeenByB());
      expect(seen).toBe(b.ipam.remotePodIp("A", a.podIp));
      const ping = await lab.sh(a.pod, ["ping", "-c", "1", "-W", "2", a.ipam.remotePodIp("B", b.podIp)]);
      expect(ping).toContain("1 received");
      const status = await (await import("../../netfabric/os/wireguard-uapi.ts")).createUapiClient(a.device).get();
      expect(status.peers[0]!.lastHandshakeSec).toBeGreaterThan(0);
      expect(status.peers[0]!.rxBytes).toBeGreaterThan(0);
    },
    slow,
  );

  test(
    "a NAT rule deleted by hand breaks traffic; reconcile brings it back",
    async () => {
      const nft = createNft(runner, a.gw);
      const table = await nft.listTable("ip", a.reconciler.options.natTable);
      const snat = table?.rules.find((r) => r.comment?.startsWith("B/pod-snat/"));
      expect(snat).toBeDefined();
      await lab.sh(a.gw, [
        "nft",
        "delete",
        "rule",
        "ip",
        a.reconciler.options.natTable,
        snat!.chain,
        "handle",
        String(snat!.handle),
      ]);
      // Without SNAT, B's WireGuard drops the packets: their source is not in A's allowed IPs.
      expect(await sourceSeenByB(1000)).toBeUndefined();
      const report = await a.reconciler.reconcile(a.config);
      expect(report.changes.join("\n")).toContain(`missing: ${snat!.comment}`);
      const seen = await waitFor("traffic after the NAT repair", () => sourceSeenByB());
      expect(seen).toBe(b.ipam.remotePodIp("A", a.podIp));
    },
    slow,
  );

  test(
    "a policy rule and a WireGuard peer removed by hand come back",
    async () => {
      const to = a.config.peers[0]!.remoteNatPodCidr;
      await lab.sh(a.gw, ["ip", "rule", "del", "to", to, "lookup", String(a.reconciler.options.routingTable)]);
      await lab.sh(a.gw, ["wg", "set", a.device, "peer", a.config.peers[0]!.publicKey, "remove"]);
      expect(await sourceSeenByB(1000)).toBeUndefined();
      const report = await a.reconciler.reconcile(a.config);
      expect(report.changes.some((c) => c.startsWith(`rule add to ${to}`))).toBe(true);
      expect(report.changes.some((c) => c.includes("missing"))).toBe(true);
      expect(await waitFor("traffic after the routing repair", () => sourceSeenByB())).toBe(
        b.ipam.remotePodIp("A", a.podIp),
      );
    },
    slow,
  );
});
