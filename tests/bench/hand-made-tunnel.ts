// A WireGuard tunnel made by hand between two network namespaces (no liqo in the path): the floor
// the fabric is compared against. `binary` chooses the wireguard-go build, so the floor uses the same
// one as the gateways. Shared by the fabric benchmarks on real nodes.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeyPair } from "../../netfabric/os/wireguard-keys.ts";
import { waitFor } from "../support/wait.ts";

export interface TunnelEnd {
  /** /var/run/netns/<netns> */
  netns: string;
  /** Address the other end sends its UDP packets to. */
  ip: string;
}

export interface Throughput {
  gbps: number;
  rttMs: number;
  retransmits: number;
  /** Datagrams the receiving side's kernel dropped because the socket's buffer was full. */
  udpRcvbufErrors?: number;
}

export function sh(cmd: string[]): { out: string; code: number } {
  const r = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  return { out: r.stdout.toString() + r.stderr.toString(), code: r.exitCode };
}

/** The kernel's UdpRcvbufErrors counter inside a network namespace (`nsenter` arguments). */
export function udpRcvbufErrors(ns: string[]): number {
  const m = /UdpRcvbufErrors\s+(\d+)/.exec(sh([...ns, "nstat", "-az", "UdpRcvbufErrors"]).out);
  return m ? Number(m[1]) : Number.NaN;
}

/**
 * iperf3 (10 s) and ping (20 probes) from one namespace to an address served from another; UDP
 * buffer drops counted in `dropsAt` (default: the server's namespace).
 */
export async function iperf(
  client: string[],
  server: string[],
  target: string,
  dropsAt = server,
  seconds = 10,
): Promise<Throughput> {
  // A server that outlives a failed attempt (a run that loses its control connection is retried).
  const srv = Bun.spawn([...server, "iperf3", "-s", "-p", "5299"], { stdout: "ignore", stderr: "ignore" });
  try {
    await waitFor(
      `iperf3 reachable at ${target}`,
      () => sh([...client, "ping", "-c", "1", "-W", "1", target]).code === 0,
      { timeoutMs: 30_000 },
    );
    const drops = udpRcvbufErrors(dropsAt);
    let last = "";
    const j = await waitFor(
      `iperf3 to ${target}`,
      () => {
        const run = sh([...client, "iperf3", "-c", target, "-p", "5299", "-t", String(seconds), "-J"]);
        try {
          const parsed = JSON.parse(run.out);
          if (parsed.end?.sum_received) return parsed;
          last = parsed.error ?? run.out.slice(0, 300);
        } catch {
          last = run.out.slice(0, 300);
        }
        return undefined;
      },
      { timeoutMs: 90_000, intervalMs: 1000, describe: () => last },
    );
    const ping = sh([...client, "ping", "-c", "20", "-i", "0.2", "-q", target]).out;
    return {
      gbps: j.end.sum_received.bits_per_second / 1e9,
      retransmits: j.end.sum_sent.retransmits ?? 0,
      rttMs: Number(/= [\d.]+\/([\d.]+)\//.exec(ping)?.[1] ?? Number.NaN),
      udpRcvbufErrors: udpRcvbufErrors(dropsAt) - drops,
    };
  } finally {
    srv.kill();
  }
}

/** wireguard-go between two namespaces, as the gateways run it but with no liqo; device names must be unique on the host. */
export async function handMadeTunnel(
  a: TunnelEnd,
  b: TunnelEnd,
  binary = "wireguard-go",
  tag = "bench",
): Promise<Throughput> {
  const ka = generateKeyPair();
  const kb = generateKeyPair();
  const keyFile = (dir: string, key: string) => {
    const f = join(dir, "key");
    writeFileSync(f, key, { mode: 0o600 });
    return f;
  };
  // Distinct names: wireguard-go's UAPI sockets share the host's /var/run/wireguard.
  const ends = [
    { n: a, k: ka, peer: kb, peerEnd: b, addr: "192.168.251.1", dev: `${tag}0.wg` },
    { n: b, k: kb, peer: ka, peerEnd: a, addr: "192.168.251.2", dev: `${tag}1.wg` },
  ];
  const procs: { kill(): void }[] = [];
  const ns = (n: TunnelEnd) => ["nsenter", `--net=/var/run/netns/${n.netns}`, "--"];
  try {
    for (const e of ends) {
      const { dev } = e;
      sh([...ns(e.n), "ip", "link", "del", dev]);
      procs.push(
        Bun.spawn([...ns(e.n), binary, "-f", dev], {
          stdout: "ignore",
          stderr: "ignore",
          env: { ...process.env, WG_PROCESS_FOREGROUND: "1" },
        }),
      );
      await waitFor(`${dev} in ${e.n.netns}`, () => sh([...ns(e.n), "ip", "link", "show", dev]).code === 0, {
        timeoutMs: 10_000,
      });
      const dir = mkdtempSync(join(tmpdir(), "bench-wg-"));
      const set = sh([
        ...ns(e.n),
        "wg",
        "set",
        dev,
        "listen-port",
        "51999",
        "private-key",
        keyFile(dir, e.k.privateKey),
        "peer",
        e.peer.publicKey,
        "endpoint",
        `${e.peerEnd.ip}:51999`,
        "allowed-ips",
        "192.168.251.0/24",
      ]);
      if (set.code !== 0) throw new Error(`wg set in ${e.n.netns}: ${set.out}`);
      sh([...ns(e.n), "ip", "addr", "add", `${e.addr}/24`, "dev", dev]);
      sh([...ns(e.n), "ip", "link", "set", dev, "mtu", "1440", "up"]);
    }
    return await iperf(ns(a), ns(b), "192.168.251.2");
  } finally {
    for (const p of procs) p.kill();
    for (const e of ends) sh([...ns(e.n), "ip", "link", "del", e.dev]);
  }
}
