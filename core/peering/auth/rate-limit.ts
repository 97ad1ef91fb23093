// Failed token attempts per client address, over a sliding window. Only failures count, so a
// consumer that retries a correct exchange is never throttled; a guesser is stopped after a few.
export interface FailureLimiterOptions {
  /** Failures allowed per window before requests are refused (default 5). */
  maxFailures?: number;
  windowMs?: number;
  now?: () => number;
  /** Addresses tracked at most; the oldest are forgotten first (bounds memory under a spray). */
  maxClients?: number;
}

export interface FailureLimiter {
  /** 0 when the client may try; otherwise the milliseconds until it may try again. */
  blockedFor(client: string): number;
  fail(client: string): void;
  /** A success clears the client's record. */
  succeed(client: string): void;
  readonly size: number;
}

export function createFailureLimiter(options: FailureLimiterOptions = {}): FailureLimiter {
  const max = options.maxFailures ?? 5;
  const windowMs = options.windowMs ?? 60_000;
  const now = options.now ?? Date.now;
  const maxClients = options.maxClients ?? 10_000;
  const failures = new Map<string, number[]>();

  const recent = (client: string) => {
    const cutoff = now() - windowMs;
    const times = (failures.get(client) ?? []).filter((t) => t > cutoff);
    if (times.length) failures.set(client, times);
    else failures.delete(client);
    return times;
  };

  return {
    blockedFor(client) {
      const times = recent(client);
      if (times.length < max) return 0;
      return Math.max(1, times[times.length - max]! + windowMs - now());
    },
    fail(client) {
      const times = recent(client);
      times.push(now());
      failures.delete(client);
      failures.set(client, times.slice(-max));
      if (failures.size > maxClients) failures.delete(failures.keys().next().value!);
    },
    succeed(client) {
      failures.delete(client);
    },
    get size() {
      return failures.size;
    },
  };
}
