// Property-style checks: many seeded random allocate/release cycles, then invariants. The seed
// is in the test name so a failure can be replayed.
import { describe, expect, test } from "bun:test";
import { IpamError } from "./errors.ts";
import { createIpam, restoreIpam, type Ipam } from "./ipam.ts";
import { contains, formatCidr, overlaps, parseCidr, parseIpv4 } from "./ipv4.ts";

function mulberry32(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomCidr(rand: () => number, prefix: number): string {
  // Bias towards a few popular ranges so collisions are frequent.
  const starts = [0x0a000000, 0x0ac80000, 0xac100000, 0xc0a80000];
  const start = starts[Math.floor(rand() * starts.length)]!;
  const size = 2 ** (32 - prefix);
  const base = start + Math.floor(rand() * 16) * size;
  return formatCidr({ base: base - (base % size), prefix });
}

function assertDisjoint(ipam: Ipam) {
  const used = ipam.usedNetworks();
  for (let i = 0; i < used.length; i++) {
    for (let j = i + 1; j < used.length; j++) {
      if (overlaps(parseCidr(used[i]!.cidr), parseCidr(used[j]!.cidr))) {
        throw new Error(`${used[i]!.owner} ${used[i]!.cidr} overlaps ${used[j]!.owner} ${used[j]!.cidr}`);
      }
    }
  }
}

describe.each([1, 7, 42, 1234, 987654])("random peering cycles, seed %d", (seed) => {
  test("no two networks overlap, translations stay inside the mapped networks, snapshots restore", () => {
    const rand = mulberry32(seed);
    let ipam = createIpam({
      podCidr: "10.200.0.0/16",
      serviceCidr: "10.96.0.0/12",
      externalCidr: "10.210.0.0/16",
      pools: ["10.0.0.0/10", "192.168.0.0/16"],
    });
    const clusters = Array.from({ length: 12 }, (_, i) => `c${i}`);
    let exhausted = 0;
    let remapped = 0;
    for (let step = 0; step < 600; step++) {
      const id = clusters[Math.floor(rand() * clusters.length)]!;
      const roll = rand();
      if (roll < 0.5) {
        const remote = {
          podCidr: randomCidr(rand, 14 + Math.floor(rand() * 6)),
          externalCidr: randomCidr(rand, 16 + Math.floor(rand() * 8)),
        };
        if (overlaps(parseCidr(remote.podCidr), parseCidr(remote.externalCidr))) continue;
        try {
          const mapped = ipam.mapRemoteNetworks(id, remote);
          expect(parseCidr(mapped.podCidr).prefix).toBe(parseCidr(remote.podCidr).prefix);
          expect(parseCidr(mapped.externalCidr).prefix).toBe(parseCidr(remote.externalCidr).prefix);
          if (mapped.podRemapped || mapped.externalRemapped) remapped++;
          ipam.setLocalNetworksSeenBy(id, { podCidr: rand() < 0.5 ? "None" : "10.199.0.0/16", externalCidr: "None" });
          const seen = ipam.remotePodIp(id, remote.podCidr.split("/")[0]!);
          expect(contains(parseCidr(mapped.podCidr), parseIpv4(seen))).toBe(true);
        } catch (err) {
          if (!(err instanceof IpamError) || err.code !== "PoolExhausted") throw err;
          exhausted++;
        }
      } else if (roll < 0.8) {
        ipam.releaseCluster(id);
      } else if (ipam.mappedNetworks(id)) {
        const endpoint = `192.0.2.${Math.floor(rand() * 20)}`;
        const seen = ipam.endpointIpFor(id, endpoint);
        expect(ipam.endpointIpFor(id, endpoint)).toBe(seen);
        if (rand() < 0.3) ipam.releaseEndpointIp(id, endpoint);
      }
      assertDisjoint(ipam);
      if (step % 50 === 0) {
        const text = JSON.stringify(ipam.snapshot());
        ipam = restoreIpam(JSON.parse(text));
        expect(JSON.stringify(ipam.snapshot())).toBe(text);
      }
    }
    // Sanity: the run really exercised both outcomes.
    expect(ipam.usedNetworks().length).toBeGreaterThan(3);
    expect(remapped).toBeGreaterThan(0);
  });
});
