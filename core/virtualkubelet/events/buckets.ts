// Token buckets keyed by name, with an injected clock: how event reflection bounds what one object
// (or the whole peering) may write, however many Events the provider produces.
export interface TokenBuckets {
  /** Takes a token from the key's bucket; false when it is empty. */
  take(key: string): boolean;
  /** Milliseconds until the key's bucket holds a token again (0 when it does). */
  wait(key: string): number;
}

export function createTokenBuckets(o: {
  burst: number;
  refillMs: number;
  now?: () => number;
  maxKeys?: number;
}): TokenBuckets {
  const now = o.now ?? Date.now;
  const maxKeys = o.maxKeys ?? 10_000;
  const buckets = new Map<string, { tokens: number; at: number }>();
  function current(key: string) {
    const t = now();
    const b = buckets.get(key);
    if (!b) return { tokens: o.burst, at: t };
    const refilled = Math.floor((t - b.at) / o.refillMs);
    if (refilled <= 0) return b;
    const tokens = Math.min(o.burst, b.tokens + refilled);
    return { tokens, at: tokens === o.burst ? t : b.at + refilled * o.refillMs };
  }
  return {
    take(key) {
      const b = current(key);
      if (b.tokens < 1) {
        buckets.set(key, b);
        return false;
      }
      buckets.set(key, { tokens: b.tokens - 1, at: b.tokens === o.burst ? now() : b.at });
      // A full bucket is the same as no bucket: forget those first when there are too many keys.
      if (buckets.size > maxKeys)
        for (const [k] of buckets) if (buckets.size > maxKeys / 2 && current(k).tokens >= o.burst) buckets.delete(k);
      return true;
    },
    wait(key) {
      const b = current(key);
      return b.tokens >= 1 ? 0 : Math.max(1, b.at + o.refillMs - now());
    },
  };
}
