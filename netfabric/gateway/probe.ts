// Tunnel latency, measured through the tunnel itself: each active gateway holds the first host of
// its own external CIDR (the address the IPAM never gives to endpoints, already its masquerade
// source), so a gateway can ping its peer's at the address it routes into the tunnel. The ping
// crosses the same NAT and WireGuard path as pod traffic.
import { CommandError } from "../os/errors.ts";
import type { IpAdapter } from "../os/ip.ts";
import type { CommandRunner } from "../os/run.ts";
import { formatIpv4, parseCidr } from "../ipam/index.ts";

export function firstHost(cidr: string): string {
  return formatIpv4(parseCidr(cidr).base + 1);
}

/** Puts `address`/32 on the device when missing; returns what it changed. */
export async function ensureDeviceAddress(ip: IpAdapter, device: string, address: string): Promise<string[]> {
  const [link] = await ip.json<{ addr_info?: { family: string; local: string; prefixlen: number }[] }>([
    "addr",
    "show",
    "dev",
    device,
  ]);
  if (link?.addr_info?.some((a) => a.family === "inet" && a.local === address && a.prefixlen === 32)) return [];
  await ip.batch([`addr replace ${address}/32 dev ${device}`]);
  return [`addr ${address}/32 dev ${device}`];
}

/** `rtt min/avg/max/mdev = 0.211/0.211/0.211/0.000 ms` → 0.211 */
export function parsePingRtt(output: string): number | undefined {
  const m = /= [\d.]+\/([\d.]+)\/[\d.]+\/[\d.]+ ms/.exec(output);
  return m ? Number(m[1]) : undefined;
}

/** One ICMP echo through the tunnel; undefined when nothing came back within a second. */
export async function probeLatency(
  runner: CommandRunner,
  netns: string | undefined,
  address: string,
): Promise<number | undefined> {
  try {
    return parsePingRtt(await runner.run(["ping", "-n", "-q", "-c", "1", "-W", "1", address], { netns }));
  } catch (err) {
    if (err instanceof CommandError) return undefined; // no reply: the handshake status says why
    throw err;
  }
}
