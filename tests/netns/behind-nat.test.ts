// Issue 6: one cluster behind NAT works when the other is reachable. A's gateway sits on the
// "internet" segment; B's gateway sits on a private segment behind a router namespace that
// masquerades B's traffic. A is configured with B's advertised (private, unreachable) endpoint,
// B with A's real one and a keepalive: B's handshakes reach A from the router's public address,
// WireGuard on A roams there, and A's reconcile must not push the unreachable endpoint back.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createIp } from "../../netfabric/os/ip.ts";
import { createNft } from "../../netfabric/os/nft.ts";
import { createUapiClient } from "../../netfabric/os/wireguard-uapi.ts";
import { createLab, runner, waitFor, type Lab } from "./lab.ts";
import { buildCluster, externalCidr, podCidr, type Cluster } from "./clusters.ts";

const connectScript = join(import.meta.dir, "fixtures", "connect.ts");
const echoScript = join(import.meta.dir, "fixtures", "echo-source.ts");
const slow = 60_000;

// The internet segment (A and the router's public side) and B's private segment.
const aPublic = "198.18.60.1";
const routerPublic = "198.18.60.254";
const bPrivate = "192.168.77.2";
const routerPrivate = "192.168.77.1";
const bAdvertised = `${bPrivate}:51820`;

let lab: Lab;
let a: Cluster;
let b: Cluster;
let router: string;

/** What `to`'s echo server saw as our source, or undefined when the connection failed. */
async function tcp(from: Cluster, to: Cluster, timeoutMs = 1500): Promise<string | undefined> {
  const target = from.ipam.remotePodIp(to.name, to.podIp);
  try {
    const out = await lab.sh(from.pod, [process.execPath, connectScript, target, "7000", String(timeoutMs)]);
    return out.trim() || undefined;
  } catch {
    return undefined;
  }
}

async function ping(from: Cluster, to: Cluster): Promise<string> {
  return lab.sh(from.pod, ["ping", "-c", "1", "-W", "2", from.ipam.remotePodIp(to.name, to.podIp)]);
}

const peerOf = async (c: Cluster) => (await createUapiClient(c.device).get()).peers[0]!;

/** Plays the network manager: IPAM exchange and one peer entry per side. A only knows B's
 * advertised private endpoint; both sides keep a keepalive, as the gateway does by default. */
function exchange() {
  const seenByA = a.ipam.mapRemoteNetworks(b.name, { podCidr, externalCidr });
  const seenByB = b.ipam.mapRemoteNetworks(a.name, { podCidr, externalCidr });
  a.ipam.setLocalNetworksSeenBy(b.name, { podCidr: seenByB.podCidr, externalCidr: seenByB.externalCidr });
  b.ipam.setLocalNetworksSeenBy(a.name, { podCidr: seenByA.podCidr, externalCidr: seenByA.externalCidr });
  a.config.peers.push({
    clusterId: b.name,
    localNatPodCidr: seenByB.podCidr,
    localNatExternalCidr: seenByB.externalCidr,
    remoteNatPodCidr: seenByA.podCidr,
    remoteNatExternalCidr: seenByA.externalCidr,
    publicKey: b.publicKey,
    endpoint: bAdvertised,
    persistentKeepalive: 5,
  });
  b.config.peers.push({
    clusterId: a.name,
    localNatPodCidr: seenByA.podCidr,
    localNatExternalCidr: seenByA.externalCidr,
    remoteNatPodCidr: seenByB.podCidr,
    remoteNatExternalCidr: seenByB.externalCidr,
    publicKey: a.publicKey,
    endpoint: `${aPublic}:51820`,
    persistentKeepalive: 5,
  });
}

beforeAll(async () => {
  lab = await createLab();
  try {
    a = await buildCluster(lab, "A", "10.200.1.10");
    b = await buildCluster(lab, "B", "10.200.1.20", ["10.0.0.0/15"]);
    router = await lab.netns("nat");
    await lab.sh(a.gw, ["ip", "link", "add", "inet", "type", "veth", "peer", "name", "inet", "netns", router]);
    await lab.sh(b.gw, ["ip", "link", "add", "lan", "type", "veth", "peer", "name", "lan", "netns", router]);
    // A has no route to 192.168.77.0/24: B's advertised endpoint is unreachable from A.
    await createIp(runner, a.gw).batch([`addr add ${aPublic}/24 dev inet`, "link set inet up"]);
    await createIp(runner, b.gw).batch([
      `addr add ${bPrivate}/24 dev lan`,
      "link set lan up",
      `route add default via ${routerPrivate}`,
    ]);
    await createIp(runner, router).batch([
      `addr add ${routerPublic}/24 dev inet`,
      "link set inet up",
      `addr add ${routerPrivate}/24 dev lan`,
      "link set lan up",
    ]);
    await lab.sh(router, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]);
    await createNft(runner, router).apply(
      [
        "table ip lab_nat {",
        '  chain post { type nat hook postrouting priority 100; policy accept; oifname "inet" masquerade; }',
        "}",
      ].join("\n") + "\n",
    );
    exchange();
    await lab.serve(a.pod, echoScript, ["7000"]);
    await lab.serve(b.pod, echoScript, ["7000"]);
  } catch (err) {
    await lab.cleanup();
    throw err;
  }
}, slow);

afterAll(async () => {
  await lab?.cleanup();
}, slow);

describe("cluster B behind NAT, cluster A reachable", () => {
  test(
    "the topology is what it claims: B reaches A, A cannot reach B's advertised address",
    async () => {
      expect(await lab.sh(b.gw, ["ping", "-c", "1", "-W", "2", aPublic])).toContain("1 received");
      await expect(lab.sh(a.gw, ["ping", "-c", "1", "-W", "1", bPrivate])).rejects.toThrow();
    },
    slow,
  );

  test(
    "both gateways keep a persistent keepalive (Liqo's 10 s when none is configured)",
    async () => {
      for (const c of [a, b]) await c.reconciler.reconcile(c.config);
      expect((await peerOf(a)).persistentKeepalive).toBe(5);
      expect((await peerOf(b)).persistentKeepalive).toBe(5);
      const { desiredWireguard } = await import("../../netfabric/gateway/wireguard.ts");
      const { persistentKeepalive: _ignored, ...withoutKeepalive } = a.config.peers[0]!;
      expect(desiredWireguard({ ...a.config, peers: [withoutKeepalive] }).peers[0]!.persistentKeepalive).toBe(10);
    },
    slow,
  );

  test(
    "B's pod reaches A's pod and A's pod reaches B's pod (TCP and ICMP) through the tunnel",
    async () => {
      // B speaks first (its keepalive): A learns where B really is.
      expect(await waitFor("TCP from pod B to pod A", () => tcp(b, a), 30_000)).toBe(
        a.ipam.remotePodIp(b.name, b.podIp),
      );
      expect(await waitFor("TCP from pod A to pod B", () => tcp(a, b), 30_000)).toBe(
        b.ipam.remotePodIp(a.name, a.podIp),
      );
      expect(await ping(b, a)).toContain("1 received");
      expect(await ping(a, b)).toContain("1 received");
    },
    slow,
  );

  test(
    "A's peer endpoint roamed to the NAT router's public address",
    async () => {
      const peer = await peerOf(a);
      expect(peer.endpoint?.split(":")[0]).toBe(routerPublic);
      expect(peer.endpoint).not.toBe(bAdvertised);
      expect(peer.lastHandshakeSec).toBeGreaterThan(0);
    },
    slow,
  );

  test(
    "A's drift repair keeps the roamed endpoint, and traffic keeps flowing",
    async () => {
      const roamed = (await peerOf(a)).endpoint;
      for (let i = 0; i < 3; i++) expect((await a.reconciler.reconcile(a.config)).changes).toEqual([]);
      expect((await peerOf(a)).endpoint).toBe(roamed);
      // Real drift on the WireGuard device makes the reconciler set the whole device again; the
      // configured (unreachable) endpoint must not replace the one that works.
      await lab.sh(a.gw, ["wg", "set", a.device, "peer", b.publicKey, "persistent-keepalive", "0"]);
      const report = await a.reconciler.reconcile(a.config);
      expect(report.changes.join("\n")).toContain("keepalive");
      expect((await peerOf(a)).endpoint).toBe(roamed);
      expect((await peerOf(a)).persistentKeepalive).toBe(5);
      for (let i = 0; i < 2; i++) expect((await a.reconciler.reconcile(a.config)).changes).toEqual([]);
      expect(await waitFor("TCP from pod A to pod B after the repair", () => tcp(a, b), 30_000)).toBe(
        b.ipam.remotePodIp(a.name, a.podIp),
      );
      expect(await ping(a, b)).toContain("1 received");
      expect(await waitFor("TCP from pod B to pod A after the repair", () => tcp(b, a), 30_000)).toBe(
        a.ipam.remotePodIp(b.name, b.podIp),
      );
      expect((await peerOf(a)).endpoint).toBe(roamed);
    },
    slow,
  );
});
