// TunnelEndpoints → gateway config: a good TunnelEndpoint becomes a peer, each bad one is rejected
// with a message naming the object, the field and the fix, without hiding the good ones.
import { describe, expect, test } from "bun:test";
import type { TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import { generateKeyPair } from "../os/wireguard-keys.ts";
import { parseDump, renderConf } from "../os/wireguard-tool.ts";
import { connectionOf, sameConnection } from "./status.ts";
import { planTunnels } from "./tunnel-config.ts";

const local = {
  device: "liqo.wg",
  privateKey: generateKeyPair().privateKey,
  listenPort: 5871,
  underlay: { mtu: 1500, ipv6: false },
};
function tep(name: string, clusterID: string, patch: Partial<TunnelEndpoint["spec"]> = {}): TunnelEndpoint {
  return {
    apiVersion: "net.liqo.io/v1alpha1",
    kind: "TunnelEndpoint",
    metadata: { name, namespace: `liqo-tenant-${name}`, labels: { clusterID } },
    spec: {
      clusterID,
      localPodCIDR: "10.200.0.0/16",
      localNATPodCIDR: "10.1.0.0/16",
      localExternalCIDR: "10.210.0.0/16",
      localNATExternalCIDR: "None",
      remotePodCIDR: "10.200.0.0/16",
      remoteNATPodCIDR: "10.0.0.0/16",
      remoteExternalCIDR: "10.210.0.0/16",
      remoteNATExternalCIDR: "10.2.0.0/16",
      endpointIP: "198.18.0.2",
      backendType: "wireguard",
      backend_config: { publicKey: generateKeyPair().publicKey, port: "5871" },
      ...patch,
    },
  } as TunnelEndpoint;
}

describe("planTunnels", () => {
  test("one peer per TunnelEndpoint, networks as we see them, NatMappings turned into our external CIDR", () => {
    const t = tep("milan", "m");
    const plan = planTunnels(
      [t],
      [
        {
          apiVersion: "net.liqo.io/v1alpha1",
          kind: "NatMapping",
          metadata: { name: "x", labels: { clusterID: "m" } },
          spec: {
            clusterID: "m",
            podCIDR: "10.0.0.0/16",
            externalCIDR: "10.210.0.0/16",
            clusterMappings: { "10.120.0.7": "10.210.0.2" },
          },
        } as never,
      ],
      local,
    );
    expect(plan.rejected.size).toBe(0);
    expect(plan.config.peers).toEqual([
      {
        clusterId: "m",
        localNatPodCidr: "10.1.0.0/16",
        localNatExternalCidr: "None",
        remoteNatPodCidr: "10.0.0.0/16",
        remoteNatExternalCidr: "10.2.0.0/16",
        natMappings: { "10.120.0.7": "10.210.0.2" },
        publicKey: t.spec.backend_config.publicKey!,
        endpoint: "198.18.0.2:5871",
        persistentKeepalive: undefined,
      },
    ]);
    expect(plan.config.localPodCidr).toBe("10.200.0.0/16");
  });
  test("None means the network is used as declared", () => {
    const plan = planTunnels(
      [
        tep("turin", "t", {
          remoteNATPodCIDR: "None",
          remoteNATExternalCIDR: "None",
          remotePodCIDR: "10.120.0.0/16",
          remoteExternalCIDR: "10.121.0.0/16",
        }),
      ],
      [],
      local,
    );
    expect(plan.config.peers[0]).toMatchObject({
      remoteNatPodCidr: "10.120.0.0/16",
      remoteNatExternalCidr: "10.121.0.0/16",
    });
  });
  test.each([
    [
      "malformed public key",
      { backend_config: { publicKey: "not-a-key", port: "5871" } },
      /TunnelEndpoint liqo-tenant-bad\/bad: backend_config.publicKey "not-a-key" is not a base64 WireGuard key/,
    ],
    ["missing public key", { backend_config: { port: "5871" } }, /backend_config.publicKey is missing/],
    [
      "bad port",
      { backend_config: { publicKey: generateKeyPair().publicKey, port: "70000" } },
      /backend_config.port "70000" is not a UDP port/,
    ],
    ["bad endpoint", { endpointIP: "gateway.example" }, /endpointIP/],
  ])("%s is rejected, the good peer stays", (_name, patch, message) => {
    const plan = planTunnels([tep("bad", "b", patch as never), tep("good", "g")], [], local);
    expect(plan.config.peers.map((p) => p.clusterId)).toEqual(["g"]);
    expect(plan.rejected.get("liqo-tenant-bad/bad")).toMatch(message);
  });
  test("two TunnelEndpoints for one cluster, or one public key for two clusters", () => {
    const a = tep("a", "x");
    const plan = planTunnels([a, tep("b", "x"), tep("c", "y", { backend_config: a.spec.backend_config })], [], local);
    expect(plan.config.peers.map((p) => p.clusterId)).toEqual(["x"]);
    expect(plan.rejected.get("liqo-tenant-b/b")).toMatch(/cluster x already has TunnelEndpoint liqo-tenant-a\/a/);
    expect(plan.rejected.get("liqo-tenant-c/c")).toMatch(/public key already used by cluster x/);
  });
});

describe("connection status", () => {
  const peer = planTunnels([tep("milan", "m")], [], local).config.peers[0]!;
  const base = { peer, configuredAtMs: 0, handshakeTimeoutMs: 60_000 };
  const live = (lastHandshakeSec: number) => ({
    publicKey: peer.publicKey,
    allowedIps: [],
    lastHandshakeSec,
    rxBytes: 1,
    txBytes: 1,
    endpoint: "198.18.0.2:5871",
  });
  test.each([
    ["recent handshake", { live: live(1000), nowMs: 1_010_000 }, "Connected", /completed/],
    ["no handshake yet", { nowMs: 10_000 }, "Connecting", /no WireGuard handshake with 198.18.0.2:5871 yet/],
    [
      "never answered",
      { nowMs: 61_000 },
      "Error",
      /no WireGuard handshake with 198.18.0.2:5871 \(waited 61 s\); check that the peer's gateway answers/,
    ],
    [
      "stale session",
      { live: live(1000), nowMs: 1_000_000 + 200_000 },
      "Error",
      /last WireGuard handshake with 198.18.0.2:5871 was 200 s ago/,
    ],
  ])("%s", (_n, o, status, message) => {
    const c = connectionOf({ ...base, ...o });
    expect(c.status).toBe(status);
    expect(c.statusMessage).toMatch(message);
  });
  test("handshake times alone do not cause a write", () => {
    const a = connectionOf({ ...base, live: live(1000), nowMs: 1_010_000 });
    const b = connectionOf({ ...base, live: live(1120), nowMs: 1_130_000 });
    expect(a.peerConfiguration!.latestHandshake).not.toBe(b.peerConfiguration!.latestHandshake);
    expect(sameConnection(a, b)).toBe(true);
    expect(sameConnection(a, connectionOf({ ...base, nowMs: 1 }))).toBe(false);
  });
  test("pings through the tunnel going unanswered, and answered again, are written (service continuity)", () => {
    const up = connectionOf({ ...base, live: live(1000), nowMs: 1_010_000 });
    const dark = connectionOf({ ...base, live: live(1000), nowMs: 1_015_000, unreachableSinceMs: 1_012_000 });
    expect(dark.status).toBe("Connected");
    expect(dark.peerConfiguration!.unreachableSince).toBe(new Date(1_012_000).toISOString());
    expect(up.peerConfiguration).not.toHaveProperty("unreachableSince");
    expect(sameConnection(up, dark)).toBe(false);
    const darker = connectionOf({ ...base, live: live(1000), nowMs: 1_020_000, unreachableSinceMs: 1_012_000 });
    expect(sameConnection(dark, darker)).toBe(true);
  });
});

describe("wg(8) adapter for the kernel module", () => {
  test("dump parsing and setconf rendering", () => {
    const k = generateKeyPair();
    const p = generateKeyPair().publicKey;
    const status = parseDump(
      `${k.privateKey}\t${k.publicKey}\t5871\toff\n${p}\t(none)\t198.18.0.2:5871\t10.0.0.0/16,10.2.0.0/16\t1700000000\t10\t20\t25\n`,
    );
    expect(status).toEqual({
      privateKey: k.privateKey,
      listenPort: 5871,
      peers: [
        {
          publicKey: p,
          endpoint: "198.18.0.2:5871",
          allowedIps: ["10.0.0.0/16", "10.2.0.0/16"],
          lastHandshakeSec: 1700000000,
          rxBytes: 10,
          txBytes: 20,
          persistentKeepalive: 25,
        },
      ],
    });
    expect(
      renderConf({
        privateKey: k.privateKey,
        listenPort: 5871,
        peers: [{ publicKey: p, endpoint: "198.18.0.2:5871", allowedIps: ["10.0.0.0/16"], persistentKeepalive: 25 }],
      }),
    ).toBe(
      `[Interface]\nPrivateKey = ${k.privateKey}\nListenPort = 5871\n\n[Peer]\nPublicKey = ${p}\nEndpoint = 198.18.0.2:5871\nAllowedIPs = 10.0.0.0/16\nPersistentKeepalive = 25\n`,
    );
  });
});

describe("latency probe", () => {
  test("ping summary parsing and the probe address", async () => {
    const { parsePingRtt, firstHost } = await import("./probe.ts");
    expect(
      parsePingRtt(
        "1 packets transmitted, 1 received, 0% packet loss, time 0ms\nrtt min/avg/max/mdev = 0.211/0.305/0.4/0.000 ms\n",
      ),
    ).toBe(0.305);
    expect(parsePingRtt("1 packets transmitted, 0 received, 100% packet loss, time 0ms\n")).toBeUndefined();
    expect(firstHost("10.210.0.0/16")).toBe("10.210.0.1");
  });
});
