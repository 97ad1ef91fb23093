// First-fit search for a free network of a given size inside the remap pools.
import { lastOf, overlaps, type Cidr } from "./ipv4.ts";

/** Liqo's default pools: the RFC 1918 private ranges. */
export const defaultPools: readonly string[] = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"];

/**
 * Returns the lowest aligned network of `prefix` inside one of `pools` (tried in order) that
 * overlaps nothing in `used`, or undefined. Used networks are merged into sorted disjoint
 * intervals and walked once per pool, so the cost is O(n log n) in the number of used networks
 * and never depends on the size of the pool.
 */
export function findFreeNetwork(pools: readonly Cidr[], used: readonly Cidr[], prefix: number): Cidr | undefined {
  const size = 2 ** (32 - prefix);
  const busy = mergeIntervals(used);
  for (const pool of pools) {
    if (pool.prefix > prefix) continue;
    const end = lastOf(pool);
    let candidate = pool.base;
    let i = 0;
    while (candidate + size - 1 <= end) {
      // Intervals ending before the candidate can never matter again: candidates only grow.
      while (i < busy.length && busy[i]![1] < candidate) i++;
      const next = busy[i];
      if (!next || next[0] > candidate + size - 1) return { base: candidate, prefix };
      // Jump past the blocking interval, rounded up so the result stays a valid network address.
      candidate = Math.ceil((next[1] + 1) / size) * size;
    }
  }
  return undefined;
}

/** [first, last] address ranges, sorted and non-overlapping. */
function mergeIntervals(used: readonly Cidr[]): [number, number][] {
  const sorted = used.map((u): [number, number] => [u.base, lastOf(u)]).sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const r of sorted) {
    const top = out[out.length - 1];
    if (top && r[0] <= top[1] + 1) top[1] = Math.max(top[1], r[1]);
    else out.push(r);
  }
  return out;
}

export function isFree(cidr: Cidr, used: readonly Cidr[]): boolean {
  return !used.some((u) => overlaps(u, cidr));
}
