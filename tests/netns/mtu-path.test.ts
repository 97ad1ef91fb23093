// The tunnel across an underlay path narrower than the gateways' own links: the two gateways (1500
// bytes each, so a 1440-byte WireGuard device) reach each other through two routers joined by a
// 1280-byte link, as behind a PPPoE, IPsec or IPv6-transition hop on the internet. Each gateway
// sees only its 1500-byte link and cannot know the hop is there. Real wireguard-go, nftables NAT
// and TCP between pods, as in tunnel-nat.test.ts.
//
// What is shown: the largest ping with DF that passes is the tunnel's MTU (1412 + 28 = 1440), not
// the hop's, because the routers fragment WireGuard's packets; 1 MiB of TCP passes each way; and
// when the routers' ICMP "fragmentation needed" is dropped (a PMTUD black hole), the same holds
// only thanks to the gateway's rule clearing DF on WireGuard's UDP: without it (deleted by hand)
// the transfer stalls, with or without the usual MSS clamp (to the route's MTU, the device's 1440,
// still too big for the hop), and the next reconcile puts the rule back and the transfer completes.
// Last, without the black hole and without the rule: path MTU discovery works (the router's ICMP
// reaches the gateway, whose kernel then fragments WireGuard's packets itself).
//
// Measured with the rule not rendered at all: the first test fails (the first 1412-byte echo is
// lost while gateway A learns the path's MTU) and the black-hole transfer stalls.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { podCidr, externalCidr, buildCluster, type Cluster } from "./clusters.ts";
import { createLab, runner, waitFor, type Lab } from "./lab.ts";
import type { MappedNetworks } from "../../netfabric/ipam/index.ts";
import { createIp } from "../../netfabric/os/ip.ts";
import { createNft } from "../../netfabric/os/nft.ts";

const blastScript = join(import.meta.dir, "fixtures", "blast.ts");
const sinkScript = join(import.meta.dir, "fixtures", "sink.ts");

const slow = 60_000;
const MiB = 1 << 20;
const HOP_MTU = 1280;
/** The tunnel's MTU: the gateways' 1500-byte underlay minus 60 bytes of IPv4, UDP and WireGuard. */
const TUNNEL_MTU = 1440;
/** ICMP echo payload that fills an IPv4 packet of `mtu` bytes. */
const echoPayload = (mtu: number) => mtu - 28;
const SINK_PORT = "7100";
/** A transfer that has not finished by then has stalled: it takes ~0.1 s here when it works. */
const TRANSFER_DEADLINE_MS = 10_000;
const BLACKHOLE_TABLE = "blackhole";

let lab: Lab;
let a: Cluster;
let b: Cluster;
/** The routers on each side of the 1280-byte link. */
let r1: string;
let r2: string;

/** A veth between two namespaces, each end addressed and set to `mtu`. */
async function link(x: string, xDev: string, xAddr: string, y: string, yDev: string, yAddr: string, mtu: number) {
  await lab.sh(x, ["ip", "link", "add", xDev, "mtu", String(mtu), "type", "veth", "peer", "name", yDev, "netns", y]);
  await createIp(runner, x).batch([`addr add ${xAddr} dev ${xDev}`, `link set dev ${xDev} mtu ${mtu} up`]);
  await createIp(runner, y).batch([`addr add ${yAddr} dev ${yDev}`, `link set dev ${yDev} mtu ${mtu} up`]);
}

/** What connect() in clusters.ts does for a direct link, for gateways that are routed to each other. */
function peer(x: Cluster, y: Cluster) {
  const seenByX = x.ipam.mapRemoteNetworks(y.name, { podCidr, externalCidr });
  const seenByY = y.ipam.mapRemoteNetworks(x.name, { podCidr, externalCidr });
  x.ipam.setLocalNetworksSeenBy(y.name, seenByY);
  y.ipam.setLocalNetworksSeenBy(x.name, seenByX);
  const entry = (self: Cluster, other: Cluster, seenBySelf: MappedNetworks, seenByOther: MappedNetworks) => ({
    clusterId: other.name,
    localNatPodCidr: seenByOther.podCidr,
    localNatExternalCidr: seenByOther.externalCidr,
    remoteNatPodCidr: seenBySelf.podCidr,
    remoteNatExternalCidr: seenBySelf.externalCidr,
    publicKey: other.publicKey,
    endpoint: `${other.underlayFor.get(self.name)}:51820`,
    persistentKeepalive: 5,
  });
  x.config.peers.push(entry(x, y, seenByX, seenByY));
  y.config.peers.push(entry(y, x, seenByY, seenByX));
}

/** Runs argv in `ns`; exit code and stdout+stderr, never throws. */
async function run(ns: string, argv: string[]): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(["ip", "netns", "exec", ns, ...argv], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, out: out + err };
}

/** 1 MiB from `from`'s pod to `to`'s pod through the tunnel: the bytes the sink counted, or "stalled". */
async function transfer(from: Cluster, to: Cluster): Promise<number | "stalled"> {
  const target = from.ipam.remotePodIp(to.name, to.podIp);
  // blast's own limit on time is set far beyond the deadline: only the deadline ends a stalled run.
  const proc = Bun.spawn(
    ["ip", "netns", "exec", from.pod, process.execPath, blastScript, target, SINK_PORT, String(MiB), "600000"],
    {
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  let stalled = false;
  const timer = setTimeout(() => {
    stalled = true;
    proc.kill("SIGKILL");
  }, TRANSFER_DEADLINE_MS);
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  if (stalled) return "stalled";
  if (code !== 0) throw new Error(`blast ${from.name} → ${to.name} exited with ${code}: ${err.trim()}`);
  return (JSON.parse(out.trim()) as { bytes: number }).bytes;
}

/** One echo with DF set and `payload` bytes, from `from`'s pod to `to`'s pod. */
const pingDf = (from: Cluster, to: Cluster, payload: number) =>
  run(from.pod, [
    "ping",
    "-M",
    "do",
    "-s",
    String(payload),
    "-c",
    "1",
    "-W",
    "2",
    from.ipam.remotePodIp(to.name, to.podIp),
  ]);

/** A counter of the IPv4 MIB (/proc/net/snmp) as the namespace `ns` sees it. */
async function ipCounter(ns: string, name: string): Promise<number> {
  const lines = (await lab.sh(ns, ["cat", "/proc/net/snmp"])).split("\n").filter((l) => l.startsWith("Ip: "));
  const names = lines[0]!.split(/\s+/);
  return Number(lines[1]!.split(/\s+/)[names.indexOf(name)]);
}

/** Packets the black-hole rules of router `ns` dropped so far. */
async function icmpDropped(ns: string): Promise<number> {
  const table = await createNft(runner, ns).listTable("ip", BLACKHOLE_TABLE);
  let packets = 0;
  for (const rule of table?.rules ?? [])
    for (const e of rule.expr as { counter?: { packets?: number } }[]) packets += e?.counter?.packets ?? 0;
  return packets;
}

/** Drops ICMP "fragmentation needed" on both routers, whether they generate it or forward it. */
async function blackHole() {
  const chain = (name: string, hook: string) =>
    `  chain ${name} {\n    type filter hook ${hook} priority filter; policy accept;\n    icmp type destination-unreachable icmp code frag-needed counter drop\n  }`;
  for (const r of [r1, r2])
    await lab.sh(
      r,
      ["nft", "-f", "-"],
      `table ip ${BLACKHOLE_TABLE} {\n${chain("generated", "output")}\n${chain("forwarded", "forward")}\n}\n`,
    );
}

const CLAMP_TABLE = "mssclamp";
/** The usual MSS clamp, on SYNs forwarded into the tunnel: to the MTU of the route they take. */
const clampTable = (device: string) =>
  `table ip ${CLAMP_TABLE} {\n  chain forward {\n    type filter hook forward priority mangle; policy accept;\n    oifname "${device}" tcp flags syn tcp option maxseg size set rt mtu counter\n  }\n}\n`;

/** SYNs the clamp of gateway `c` rewrote. */
async function clamped(c: Cluster): Promise<number> {
  const table = await createNft(runner, c.gw).listTable("ip", CLAMP_TABLE);
  return ((table?.rules[0]?.expr ?? []) as { counter?: { packets?: number } }[]).reduce(
    (n, e) => n + (e?.counter?.packets ?? 0),
    0,
  );
}

/** Deletes the gateway's no-DF rule by hand; returns its comment. */
async function deleteNoDfRule(c: Cluster): Promise<string> {
  const table = await createNft(runner, c.gw).listTable("ip", c.reconciler.options.natTable);
  const rule = table?.rules.find((r) => r.comment?.startsWith("wireguard/no-df/"));
  if (!rule) throw new Error(`no wireguard/no-df rule in ${c.gw}'s table`);
  await lab.sh(c.gw, [
    "nft",
    "delete",
    "rule",
    "ip",
    c.reconciler.options.natTable,
    rule.chain,
    "handle",
    String(rule.handle),
  ]);
  return rule.comment!;
}

beforeAll(async () => {
  lab = await createLab();
  try {
    a = await buildCluster(lab, "A", "10.200.1.10");
    b = await buildCluster(lab, "B", "10.200.1.20", ["10.0.0.0/15"]);
    r1 = await lab.netns("r1");
    r2 = await lab.netns("r2");
    // gateway A ─1500─ r1 ─1280─ r2 ─1500─ gateway B
    await link(a.gw, "wan0", "198.18.1.1/24", r1, "to-a", "198.18.1.254/24", 1500);
    await link(r1, "narrow0", "198.18.3.1/24", r2, "narrow0", "198.18.3.2/24", HOP_MTU);
    await link(r2, "to-b", "198.18.2.254/24", b.gw, "wan0", "198.18.2.1/24", 1500);
    await createIp(runner, a.gw).batch(["route add 198.18.2.0/24 via 198.18.1.254"]);
    await createIp(runner, b.gw).batch(["route add 198.18.1.0/24 via 198.18.2.254"]);
    await createIp(runner, r1).batch(["route add 198.18.2.0/24 via 198.18.3.2"]);
    await createIp(runner, r2).batch(["route add 198.18.1.0/24 via 198.18.3.1"]);
    for (const r of [r1, r2]) await lab.sh(r, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]);
    a.underlayFor.set("B", "198.18.1.1");
    b.underlayFor.set("A", "198.18.2.1");
    peer(a, b);
    for (const c of [a, b]) await c.reconciler.reconcile(c.config);
    for (const c of [a, b]) await lab.serve(c.pod, sinkScript, [SINK_PORT]);
    await waitFor("a first echo through the tunnel", async () =>
      (await pingDf(a, b, 56)).code === 0 ? true : undefined,
    );
  } catch (err) {
    await lab.cleanup();
    throw err;
  }
}, slow);

afterAll(async () => {
  await lab?.cleanup();
}, slow);

describe("a 1280-byte hop between the gateways", () => {
  test(
    "the gateway sizes its device from its own link (1440); the largest echo with DF that passes is that, one byte more is refused by the gateway",
    async () => {
      const [dev] = await createIp(runner, a.gw).json<{ mtu: number }>(["link", "show", "dev", a.device]);
      expect(dev!.mtu).toBe(TUNNEL_MTU);
      const fragmentsBefore = await ipCounter(r1, "FragCreates");
      // DF is on the pod's packet, inside the tunnel: the 1500-byte WireGuard packet carrying it is
      // what meets the 1280-byte hop, and the router fragments it.
      const largest = await pingDf(a, b, echoPayload(TUNNEL_MTU));
      expect(largest.out).toContain("1 received");
      expect(await ipCounter(r1, "FragCreates")).toBeGreaterThan(fragmentsBefore);
      const over = await pingDf(a, b, echoPayload(TUNNEL_MTU) + 1);
      expect(over.code).not.toBe(0);
      // The gateway's own "fragmentation needed" (or, once the pod has learned it, the pod's local error).
      expect(over.out).toMatch(/mtu ?= ?1440/);
    },
    slow,
  );

  test(
    "1 MiB of TCP passes each way",
    async () => {
      expect(await transfer(a, b)).toBe(MiB);
      expect(await transfer(b, a)).toBe(MiB);
    },
    slow,
  );
});

/** Forgets what the gateways learned of the path's MTU (ICMP from the routers before the black hole). */
async function forgetPathMtu() {
  for (const c of [a, b]) await lab.sh(c.gw, ["ip", "route", "flush", "cache"]);
  for (const [c, peerAddr] of [
    [a, "198.18.2.1"],
    [b, "198.18.1.1"],
  ] as const) {
    const route = await lab.sh(c.gw, ["ip", "route", "get", peerAddr]);
    if (route.includes(`mtu ${HOP_MTU}`)) throw new Error(`${c.gw} still has a learned path MTU: ${route}`);
  }
}

describe("the same path as a PMTUD black hole: the routers drop ICMP fragmentation-needed", () => {
  beforeAll(async () => {
    await blackHole();
    await forgetPathMtu();
  }, slow);

  test(
    "with the gateways' rule, WireGuard's packets carry no DF: the routers fragment them, send no ICMP, and 1 MiB passes each way",
    async () => {
      const dropped = [await icmpDropped(r1), await icmpDropped(r2)];
      expect(await transfer(a, b)).toBe(MiB);
      expect(await transfer(b, a)).toBe(MiB);
      expect((await pingDf(a, b, echoPayload(TUNNEL_MTU))).out).toContain("1 received");
      // Nothing for the black hole to swallow: no packet asked not to be fragmented.
      expect([await icmpDropped(r1), await icmpDropped(r2)]).toEqual(dropped);
    },
    slow,
  );

  test(
    "without it (deleted by hand) the transfer stalls, MSS clamping or not; the next reconcile puts it back and the transfer completes",
    async () => {
      const comments = [await deleteNoDfRule(a), await deleteNoDfRule(b)];
      const droppedBefore = await icmpDropped(r1);
      // wireguard-go's socket sets DF: the 1500-byte packets die at r1, its ICMP dies in the black
      // hole, gateway A never learns the path's MTU and TCP retransmits into the same hole.
      expect(await transfer(a, b)).toBe("stalled");
      expect(await icmpDropped(r1)).toBeGreaterThan(droppedBefore);
      const route = await lab.sh(a.gw, ["ip", "route", "get", "198.18.2.1"]);
      expect(route).not.toContain(`mtu ${HOP_MTU}`);
      // MSS clamping to the route's MTU does not help: that is the device's 1440, which the gateways
      // believe, so segments of 1400 bytes still make 1500-byte WireGuard packets.
      for (const c of [a, b]) await lab.sh(c.gw, ["nft", "-f", "-"], clampTable(c.device));
      expect(await transfer(a, b)).toBe("stalled");
      expect(await clamped(a)).toBeGreaterThan(0);
      for (const c of [a, b]) await lab.sh(c.gw, ["nft", "delete", "table", "ip", CLAMP_TABLE]);
      for (const [i, c] of [a, b].entries()) {
        const report = await c.reconciler.reconcile(c.config);
        expect(report.changes.join("\n")).toContain(`missing: ${comments[i]}`);
      }
      expect(await transfer(a, b)).toBe(MiB);
      expect(await transfer(b, a)).toBe(MiB);
    },
    slow,
  );
});

describe("without the black hole and without the rule: path MTU discovery between the gateways", () => {
  test(
    "r1's ICMP teaches gateway A the path's MTU (its route cache shows 1280), its kernel fragments WireGuard's packets, and 1 MiB passes",
    async () => {
      for (const r of [r1, r2]) await lab.sh(r, ["nft", "delete", "table", "ip", BLACKHOLE_TABLE]);
      await deleteNoDfRule(a);
      await deleteNoDfRule(b);
      expect(await transfer(a, b)).toBe(MiB);
      expect(await transfer(b, a)).toBe(MiB);
      expect(await lab.sh(a.gw, ["ip", "route", "get", "198.18.2.1"])).toContain(`mtu ${HOP_MTU}`);
    },
    slow,
  );
});
