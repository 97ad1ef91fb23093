// What the gateway reports on each TunnelEndpoint (status.connection, Liqo's fields): Connected
// once WireGuard has a recent handshake with the peer, Connecting until then, Error when the
// TunnelEndpoint cannot be configured or no handshake came within the deadline.
import { ConnectionStatus, type TunnelEndpointStatus } from "../../core/apis/net/tunnelendpoint.ts";
import type { WireguardPeerStatus } from "../os/wireguard-uapi.ts";
import type { PeerTunnel } from "./config.ts";
import { REJECT_AFTER_TIME_SEC } from "./wireguard.ts";

export interface TunnelObservation {
  peer: PeerTunnel;
  live?: WireguardPeerStatus;
  /** When this replica configured the peer (ms), to tell "not yet" from "never". */
  configuredAtMs: number;
  nowMs: number;
  handshakeTimeoutMs: number;
  /** Last measured round trip through the tunnel (ms), shown with the status. */
  latencyMs?: number;
  /**
   * When the current run of unanswered pings through the tunnel began (ms); undefined while the
   * peer answers. Shown as peerConfiguration.unreachableSince: the provider's service continuity
   * (core/continuity) marks the peer's reflected endpoints not ready from it.
   */
  unreachableSinceMs?: number;
}

export function connectionOf(o: TunnelObservation): NonNullable<TunnelEndpointStatus["connection"]> {
  const lh = o.live?.lastHandshakeSec ?? 0;
  const peerConfiguration: Record<string, string> = {
    endpoint: o.live?.endpoint ?? o.peer.endpoint,
    allowedIPs: o.peer.remoteNatPodCidr + "," + o.peer.remoteNatExternalCidr,
  };
  if (lh > 0) peerConfiguration.latestHandshake = new Date(lh * 1000).toISOString();
  if (o.latencyMs !== undefined) peerConfiguration.latency = `${o.latencyMs}ms`;
  if (o.unreachableSinceMs !== undefined)
    peerConfiguration.unreachableSince = new Date(o.unreachableSinceMs).toISOString();
  const ageSec = lh > 0 ? Math.max(0, Math.round(o.nowMs / 1000 - lh)) : undefined;
  if (ageSec !== undefined && ageSec < REJECT_AFTER_TIME_SEC) {
    return {
      status: ConnectionStatus.Connected,
      statusMessage: `WireGuard handshake with ${peerConfiguration.endpoint} completed`,
      peerConfiguration,
    };
  }
  const waited = o.nowMs - o.configuredAtMs;
  const what =
    ageSec === undefined
      ? `no WireGuard handshake with ${o.peer.endpoint}`
      : `last WireGuard handshake with ${o.peer.endpoint} was ${ageSec} s ago`;
  if (waited > o.handshakeTimeoutMs) {
    return {
      status: ConnectionStatus.Error,
      statusMessage: `${what} (waited ${Math.round(waited / 1000)} s); check that the peer's gateway answers on UDP ${o.peer.endpoint} and that its public key ${o.peer.publicKey} is current`,
      peerConfiguration,
    };
  }
  return { status: ConnectionStatus.Connecting, statusMessage: `${what} yet`, peerConfiguration };
}

/** Status fields compared to decide whether to write (timestamps inside the same state do not churn). */
export function sameConnection(a: TunnelEndpointStatus["connection"], b: TunnelEndpointStatus["connection"]): boolean {
  if (!a || !b) return a === b;
  // The handshake time (every 2 minutes) and the latency change while Connected: written on state changes only.
  const strip = (c: NonNullable<typeof a>) =>
    JSON.stringify([
      c.status,
      c.status === ConnectionStatus.Error ? c.statusMessage?.replace(/waited \d+ s/, "") : c.statusMessage,
      c.peerConfiguration?.endpoint,
      c.peerConfiguration?.allowedIPs,
      // Set once when the pings stop, removed when one answers: both are news for service continuity.
      c.peerConfiguration?.unreachableSince,
    ]);
  return strip(a) === strip(b);
}
