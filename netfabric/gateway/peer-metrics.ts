// Per-peer WireGuard figures on the gateway's /metrics: what the admin API's `tunnels` view shows
// (latest handshake, bytes each way, the probe's round trip), labelled by the peer's cluster ID.
// Read at scrape time from what the last reconcile pass read off the device, so nothing is kept
// twice; a standby (no device) and a peer the device does not list yet have no series. Also which
// WireGuard implementation the active replica's device runs (kernel module or wireguard-go).
import type { LabeledValue, Registry } from "../../core/metrics/index.ts";
import type { WireguardStatus } from "../os/wireguard-uapi.ts";
import type { WireguardImplementation } from "./device.ts";

type PeerLabel = "remote_cluster_id";

export interface PeerMetricsSource {
  /** The peers configured on the device (cluster ID and public key), or none while standby. */
  peers(): readonly { clusterId: string; publicKey: string }[];
  /** What the device reported at the last pass. */
  live(): WireguardStatus | undefined;
  /** Round trip of the last probe per peer, milliseconds; undefined: no answer. */
  latencyMs(clusterId: string): number | undefined;
}

export interface PeerSample {
  clusterId: string;
  /** Seconds since the latest handshake; undefined: none yet. */
  handshakeAgeSeconds?: number;
  rxBytes: number;
  txBytes: number;
  rttSeconds?: number;
}

/** One row per configured peer the device lists; `nowMs` is the scrape's clock. */
export function peerSamples(src: PeerMetricsSource, nowMs: number): PeerSample[] {
  const live = src.live();
  if (!live) return [];
  const out: PeerSample[] = [];
  for (const p of src.peers()) {
    const wg = live.peers.find((x) => x.publicKey === p.publicKey);
    if (!wg) continue;
    const latency = src.latencyMs(p.clusterId);
    out.push({
      clusterId: p.clusterId,
      // WireGuard reports 0 for a peer it never shook hands with: that is no age, not 56 years.
      handshakeAgeSeconds: wg.lastHandshakeSec > 0 ? Math.max(0, nowMs / 1000 - wg.lastHandshakeSec) : undefined,
      rxBytes: wg.rxBytes,
      txBytes: wg.txBytes,
      rttSeconds: latency === undefined ? undefined : latency / 1000,
    });
  }
  return out;
}

export function registerPeerMetrics(registry: Registry, src: PeerMetricsSource, now: () => number = Date.now): void {
  const series = (pick: (s: PeerSample) => number | undefined): LabeledValue<PeerLabel>[] =>
    peerSamples(src, now()).flatMap((s) => {
      const value = pick(s);
      return value === undefined ? [] : [{ labels: { remote_cluster_id: s.clusterId }, value }];
    });
  registry.callbackGauge({
    name: "liqo_gateway_peer_last_handshake_age_seconds",
    help: "Seconds since the latest WireGuard handshake with the peer (none before the first).",
    labelNames: ["remote_cluster_id"] as const,
    collect: () => series((s) => s.handshakeAgeSeconds),
  });
  registry.callbackCounter({
    name: "liqo_gateway_peer_received_bytes_total",
    help: "Bytes received from the peer through the WireGuard device (reset when the device is re-opened).",
    labelNames: ["remote_cluster_id"] as const,
    collect: () => series((s) => s.rxBytes),
  });
  registry.callbackCounter({
    name: "liqo_gateway_peer_transmitted_bytes_total",
    help: "Bytes sent to the peer through the WireGuard device (reset when the device is re-opened).",
    labelNames: ["remote_cluster_id"] as const,
    collect: () => series((s) => s.txBytes),
  });
  registry.callbackGauge({
    name: "liqo_gateway_peer_rtt_seconds",
    help: "Round trip of the last ICMP echo through the tunnel to the peer (none when it went unanswered).",
    labelNames: ["remote_cluster_id"] as const,
    collect: () => series((s) => s.rttSeconds),
  });
}

/** Info-style: one series, value 1, labelled with the open device's implementation; none on a standby. */
export function registerImplementationMetric(
  registry: Registry,
  implementation: () => WireguardImplementation | undefined,
): void {
  registry.callbackGauge({
    name: "liqo_gateway_wireguard_implementation",
    help: "1, labelled with the WireGuard implementation of the active gateway's device: kernel (the module) or userspace (wireguard-go).",
    labelNames: ["implementation"] as const,
    collect: () => {
      const current = implementation();
      return current ? [{ labels: { implementation: current }, value: 1 }] : [];
    },
  });
}
