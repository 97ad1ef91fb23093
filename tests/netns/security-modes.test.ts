// The security modes' filter with disjoint pod CIDRs, on the gateway reconciler alone (no control
// plane, seconds to run; fabric-e2e.test.ts runs the matrix with overlapping CIDRs through the
// whole controller): two gateway namespaces joined by an underlay veth, wireguard-go, and three
// "pods" behind each gateway. With no NAT between them, the filter sees the peer's own pod IPs as
// sources and ours as destinations. B protects itself from A.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { GatewayConfig } from "../../netfabric/gateway/config.ts";
import { createGatewayReconciler, rejectCounts, type SecuritySpec } from "../../netfabric/gateway/reconcile.ts";
import { ensureDeviceAddress, firstHost } from "../../netfabric/gateway/probe.ts";
import { createIp } from "../../netfabric/os/ip.ts";
import { createNft } from "../../netfabric/os/nft.ts";
import { probe } from "./isolation.ts";
import { gatewayEnd } from "./clusters.ts";
import { createLab, runner, type Lab } from "./lab.ts";
import { waitFor } from "../support/wait.ts";

const echoScript = join(import.meta.dir, "fixtures", "echo-source.ts");

interface Side {
  gw: string;
  config: GatewayConfig;
  publicKey: string;
  reconciler: ReturnType<typeof createGatewayReconciler>;
  /** Pod namespaces by role. */
  pods: Record<"plain" | "special" | "other", { ns: string; ip: string }>;
}

let lab: Lab;
let a: Side;
let b: Side;

async function side(name: "a" | "b", n: number): Promise<Side> {
  const gw = await lab.netns(`g${name}`);
  const device = (await lab.wireguard(gw, name)).name;
  const pods = {} as Side["pods"];
  for (const [i, role] of (["plain", "special", "other"] as const).entries()) {
    const ip = `10.${n}.0.${10 + i}`;
    const ns = await lab.netns(`p${name}${i}`);
    await lab.sh(gw, ["ip", "link", "add", `pod${i}`, "type", "veth", "peer", "name", "eth0", "netns", ns]);
    await createIp(runner, ns).batch([
      `addr add ${ip}/32 dev eth0`,
      "link set eth0 up",
      "route add 169.254.1.1 dev eth0",
      "route add default via 169.254.1.1",
    ]);
    await createIp(runner, gw).batch([
      `addr add 169.254.1.1/32 dev pod${i}`,
      `link set pod${i} up`,
      `route add ${ip}/32 dev pod${i}`,
    ]);
    await lab.serve(ns, echoScript, ["7000"]);
    pods[role] = { ns, ip };
  }
  return { gw, pods, ...gatewayEnd(gw, device, `10.${n}.0.0/16`, `10.${n + 10}.0.0/16`) };
}

const rejectedFromA = async () =>
  rejectCounts(await createNft(runner, b.gw).listTable("ip", b.reconciler.options.filterTable)).get("A")?.packets ?? 0;

beforeAll(async () => {
  lab = await createLab();
  a = await side("a", 1);
  b = await side("b", 2);
  await lab.sh(a.gw, ["ip", "link", "add", "u0", "type", "veth", "peer", "name", "u0", "netns", b.gw]);
  await createIp(runner, a.gw).batch(["addr add 198.18.9.1/24 dev u0", "link set u0 up"]);
  await createIp(runner, b.gw).batch(["addr add 198.18.9.2/24 dev u0", "link set u0 up"]);
  // Disjoint networks: neither side remaps the other's.
  for (const [self, other, id, endpoint] of [
    [a, b, "B", "198.18.9.2"],
    [b, a, "A", "198.18.9.1"],
  ] as const)
    self.config.peers.push({
      clusterId: id,
      localNatPodCidr: "None",
      localNatExternalCidr: "None",
      remoteNatPodCidr: other.config.localPodCidr,
      remoteNatExternalCidr: other.config.localExternalCidr,
      publicKey: other.publicKey,
      endpoint: `${endpoint}:51820`,
      persistentKeepalive: 5,
    });
  for (const s of [a, b]) {
    await s.reconciler.reconcile(s.config);
    // As the gateway controller does: the device's address is the first of the external CIDR. It is
    // also the source of the filter's ICMP refusals, so they pass the peer's WireGuard allowed IPs
    // (a refusal from an address the peer does not accept from us would leave the client hanging).
    await ensureDeviceAddress(createIp(runner, s.gw), s.config.device, firstHost(s.config.localExternalCidr));
  }
}, 120_000);

afterAll(async () => {
  await lab?.cleanup();
}, 60_000);

/** B's sets for A: A's "special" pod is B's pod offloaded to A (rule 1); B's "special" pod is A's pod running in B (rule 2). */
const segregation = (): SecuritySpec => ({
  mode: "IntraClusterTrafficSegregation",
  sets: new Map([["A", { sources: [a.pods.special.ip], destinations: [b.pods.special.ip] }]]),
});

describe("security modes with disjoint pod CIDRs (B protects itself from A)", () => {
  test("FullPodToPod: A's pods reach every pod of B, seen at their own addresses; B has no filter table", async () => {
    await waitFor(
      "A's plain pod to reach B's plain pod",
      async () => (await probe(lab, a.pods.plain.ns, b.pods.plain.ip, 7000, 1500)).outcome === "answered" || undefined,
      { timeoutMs: 30_000 },
    );
    for (const from of Object.values(a.pods))
      for (const to of Object.values(b.pods))
        expect({ from: from.ip, to: to.ip, ...(await probe(lab, from.ns, to.ip)) }).toEqual({
          from: from.ip,
          to: to.ip,
          outcome: "answered",
          seen: from.ip,
        });
    expect(await createNft(runner, b.gw).listTable("ip", b.reconciler.options.filterTable)).toBeUndefined();
  }, 60_000);

  test("IntraClusterTrafficSegregation: only rules 1 and 2 (and replies) pass; the rest is refused at once and counted", async () => {
    const report = await b.reconciler.reconcile(b.config, segregation());
    expect(report.changes.some((c) => c.startsWith("nft table liqo_filter replaced"))).toBe(true);
    const cases = [
      // Rule 1: B's own pod, offloaded to A, reaches anything of B's.
      { from: a.pods.special, to: b.pods.plain, allowed: true },
      { from: a.pods.special, to: b.pods.other, allowed: true },
      // Rule 2: any pod of A reaches A's pod running in B.
      { from: a.pods.plain, to: b.pods.special, allowed: true },
      { from: a.pods.other, to: b.pods.special, allowed: true },
      // Nothing else.
      { from: a.pods.plain, to: b.pods.plain, allowed: false },
      { from: a.pods.other, to: b.pods.other, allowed: false },
    ];
    for (const c of cases) {
      const before = await rejectedFromA();
      const r = await probe(lab, c.from.ns, c.to.ip);
      const counted = (await rejectedFromA()) > before;
      expect({ from: c.from.ip, to: c.to.ip, outcome: r.outcome, counted }).toEqual({
        from: c.from.ip,
        to: c.to.ip,
        outcome: c.allowed ? "answered" : "refused",
        counted: !c.allowed,
      });
    }
    // B's pods still open connections to A's: the answers come back through the filter.
    for (const from of Object.values(b.pods))
      expect((await probe(lab, from.ns, a.pods.plain.ip)).outcome).toBe("answered");
    // A pass over an unchanged world changes nothing, and reports the count.
    const again = await b.reconciler.reconcile(b.config, segregation());
    expect(again.changes).toEqual([]);
    expect(again.rejected.get("A")!.packets).toBeGreaterThanOrEqual(2);
  }, 60_000);

  test("back to FullPodToPod: the table goes, and every pod answers again", async () => {
    const report = await b.reconciler.reconcile(b.config, { mode: "FullPodToPod" });
    expect(report.changes).toEqual(["nft table liqo_filter deleted (FullPodToPod)"]);
    expect((await probe(lab, a.pods.plain.ns, b.pods.plain.ip)).outcome).toBe("answered");
  }, 60_000);
});
