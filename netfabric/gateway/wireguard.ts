// The WireGuard part of the gateway's desired state, and when the live device differs from it.
import type { WireguardConfig, WireguardStatus } from "../os/wireguard-uapi.ts";
import { clampPrivateKey } from "../os/wireguard-keys.ts";
import { defaultKeepaliveSec, type GatewayConfig } from "./config.ts";

export function desiredWireguard(config: GatewayConfig): WireguardConfig {
  return {
    privateKey: config.privateKey,
    listenPort: config.listenPort,
    peers: config.peers.map((p) => ({
      publicKey: p.publicKey,
      endpoint: p.endpoint,
      persistentKeepalive: p.persistentKeepalive ?? defaultKeepaliveSec,
      allowedIps: [p.remoteNatPodCidr, p.remoteNatExternalCidr],
    })),
  };
}

/** Reasons the device must be set again; empty when it matches. Endpoints are not compared:
 * WireGuard updates them itself when a peer roams, and that is not drift. */
export function wireguardDrift(want: WireguardConfig, have: WireguardStatus): string[] {
  const reasons: string[] = [];
  if (!have.privateKey || clampPrivateKey(have.privateKey) !== clampPrivateKey(want.privateKey!))
    reasons.push("private key");
  if (have.listenPort !== want.listenPort) reasons.push(`listen port ${have.listenPort} ≠ ${want.listenPort}`);
  const sorted = (l: string[]) => [...l].sort().join(",");
  for (const peer of want.peers) {
    const live = have.peers.find((p) => p.publicKey === peer.publicKey);
    if (!live) {
      reasons.push(`peer ${peer.publicKey} missing`);
      continue;
    }
    if (sorted(live.allowedIps) !== sorted(peer.allowedIps))
      reasons.push(`peer ${peer.publicKey} allowed IPs ${live.allowedIps.join(",")}`);
    if ((live.persistentKeepalive ?? 0) !== (peer.persistentKeepalive ?? 0))
      reasons.push(`peer ${peer.publicKey} keepalive`);
    if (!live.endpoint) reasons.push(`peer ${peer.publicKey} has no endpoint`);
  }
  for (const live of have.peers)
    if (!want.peers.some((p) => p.publicKey === live.publicKey)) reasons.push(`stale peer ${live.publicKey}`);
  return reasons;
}

/** WireGuard's REJECT_AFTER_TIME: a session whose last handshake is older than this is dead
 * (WireGuard rekeys every 2 minutes). */
export const REJECT_AFTER_TIME_SEC = 180;

/** The config to `set` when some drift was found. A peer behind NAT reaches us from its router's
 * public address, not from the (private, unreachable) endpoint it advertised, and WireGuard
 * follows it there (roaming). Pushing the advertised endpoint back while repairing an unrelated
 * drift would send our packets into the void until the peer's next keepalive, so a live endpoint
 * is kept while the handshake it came with is recent. A stale one is replaced by the configured
 * endpoint: that is the only address we know when the peer is silent. */
export function keepRoamedEndpoints(
  want: WireguardConfig,
  have: WireguardStatus,
  nowSec = Date.now() / 1000,
): WireguardConfig {
  return {
    ...want,
    peers: want.peers.map((peer) => {
      const live = have.peers.find((p) => p.publicKey === peer.publicKey);
      const fresh =
        live?.endpoint && live.lastHandshakeSec > 0 && nowSec - live.lastHandshakeSec < REJECT_AFTER_TIME_SEC;
      return fresh && live.endpoint !== peer.endpoint ? { ...peer, endpoint: live.endpoint } : peer;
    }),
  };
}
