// The gateway's per-peer WireGuard series, read from the device's last status at scrape time.
import { describe, expect, test } from "bun:test";
import { createRegistry, parsePrometheusText } from "../../core/metrics/index.ts";
import type { WireguardStatus } from "../os/wireguard-uapi.ts";
import type { WireguardImplementation } from "./device.ts";
import {
  peerSamples,
  registerImplementationMetric,
  registerPeerMetrics,
  type PeerMetricsSource,
} from "./peer-metrics.ts";

const NOW_MS = 1_800_000_000_000;
const peers = [
  { clusterId: "rome", publicKey: "key-rome" },
  { clusterId: "milan", publicKey: "key-milan" },
  { clusterId: "turin", publicKey: "key-turin" },
];
const status: WireguardStatus = {
  peers: [
    { publicKey: "key-rome", allowedIps: [], lastHandshakeSec: NOW_MS / 1000 - 42, rxBytes: 1500, txBytes: 900 },
    // Configured but never shaken hands with: bytes sent (handshake initiations), none received.
    { publicKey: "key-milan", allowedIps: [], lastHandshakeSec: 0, rxBytes: 0, txBytes: 148 },
    // A key the device lists that no configured peer has (left from a previous plan): not exported.
    { publicKey: "key-stale", allowedIps: [], lastHandshakeSec: NOW_MS / 1000 - 5, rxBytes: 7, txBytes: 7 },
  ],
};
const source = (over: Partial<PeerMetricsSource> = {}): PeerMetricsSource => ({
  peers: () => peers,
  live: () => status,
  latencyMs: (id) => (id === "rome" ? 12.5 : undefined),
  ...over,
});

describe("peerSamples", () => {
  test("one row per configured peer the device lists; no handshake yet is no age; the round trip in seconds", () => {
    expect(peerSamples(source(), NOW_MS)).toEqual([
      { clusterId: "rome", handshakeAgeSeconds: 42, rxBytes: 1500, txBytes: 900, rttSeconds: 0.0125 },
      { clusterId: "milan", handshakeAgeSeconds: undefined, rxBytes: 0, txBytes: 148, rttSeconds: undefined },
    ]);
  });

  test("a standby (no device status) has no rows", () => {
    expect(peerSamples(source({ live: () => undefined }), NOW_MS)).toEqual([]);
  });

  test("a handshake stamped a little after the scrape's clock is age 0, never negative", () => {
    const ahead: WireguardStatus = {
      peers: [{ publicKey: "key-rome", allowedIps: [], lastHandshakeSec: NOW_MS / 1000 + 2, rxBytes: 1, txBytes: 1 }],
    };
    expect(peerSamples(source({ live: () => ahead }), NOW_MS)[0]!.handshakeAgeSeconds).toBe(0);
  });
});

describe("registerPeerMetrics", () => {
  test("/metrics carries the four families labelled remote_cluster_id, only the series that have a value", async () => {
    const registry = createRegistry();
    registerPeerMetrics(registry, source(), () => NOW_MS);
    const families = parsePrometheusText(await registry.expose());
    const byName = Object.fromEntries(
      families.map((f) => [
        f.name,
        { type: f.type, samples: f.samples.map((s) => [s.labels.remote_cluster_id, s.value]) },
      ]),
    );
    expect(byName).toEqual({
      liqo_gateway_peer_last_handshake_age_seconds: { type: "gauge", samples: [["rome", 42]] },
      liqo_gateway_peer_received_bytes_total: {
        type: "counter",
        samples: [
          ["rome", 1500],
          ["milan", 0],
        ],
      },
      liqo_gateway_peer_rtt_seconds: { type: "gauge", samples: [["rome", 0.0125]] },
      liqo_gateway_peer_transmitted_bytes_total: {
        type: "counter",
        samples: [
          ["rome", 900],
          ["milan", 148],
        ],
      },
    });
  });

  test("the age follows the scrape's clock, not the pass that read the device", async () => {
    let now = NOW_MS;
    const registry = createRegistry();
    registerPeerMetrics(registry, source(), () => now);
    now += 10_000;
    expect(await registry.expose()).toContain(
      'liqo_gateway_peer_last_handshake_age_seconds{remote_cluster_id="rome"} 52\n',
    );
  });
});

describe("registerImplementationMetric", () => {
  test("one series with value 1 naming the open device's implementation; none on a standby", async () => {
    let current: WireguardImplementation | undefined;
    const registry = createRegistry();
    registerImplementationMetric(registry, () => current);
    const samples = async () =>
      parsePrometheusText(await registry.expose())
        .filter((f) => f.name === "liqo_gateway_wireguard_implementation")
        .flatMap((f) => f.samples.map((s) => [s.labels.implementation, s.value]));
    expect(await samples()).toEqual([]);
    current = "userspace";
    expect(await samples()).toEqual([["userspace", 1]]);
    current = "kernel";
    expect(await samples()).toEqual([["kernel", 1]]);
    expect(await registry.expose()).toContain('liqo_gateway_wireguard_implementation{implementation="kernel"} 1\n');
  });
});
