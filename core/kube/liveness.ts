// Watches that notice silence. A peer's API server whose packets are dropped (not refused) leaves a
// watch open and quiet until TCP gives up, a quarter of an hour later. client-go finds such a
// connection by pinging it over HTTP/2 after 30 s without a frame and dropping it when the ping
// is not answered within 15 s. Bun's fetch speaks HTTP/1.1, where a connection cannot be pinged,
// so a silent watch pings the server on a new request instead, and is abandoned (the informer
// re-watches from its last resourceVersion) when that goes unanswered. A ping proves the path, not
// the watch's own connection; a watch that asked for bookmarks (the API server sends one about
// every minute) and hears nothing for longer than that is abandoned even while pings answer.

export interface WatchLivenessOptions {
  /** Without a byte (event or bookmark) for this long, the API server is pinged; 0 turns liveness off (default 30 s). */
  watchIdleMs?: number;
  /** An unanswered ping abandons the watch after this long (default 15 s, client-go's PingTimeout). */
  watchPingTimeoutMs?: number;
  /** A watch with bookmarks silent for this long is abandoned even if pings answer (default 120 s). */
  watchMaxSilenceMs?: number;
}

export function watchLiveness(o: WatchLivenessOptions = {}): Required<WatchLivenessOptions> {
  const pick = (name: keyof WatchLivenessOptions, dflt: number) => {
    const v = o[name] ?? dflt;
    if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a number of milliseconds ≥ 0, got ${o[name]}`);
    return v;
  };
  return {
    watchIdleMs: pick("watchIdleMs", 30_000),
    watchPingTimeoutMs: pick("watchPingTimeoutMs", 15_000),
    watchMaxSilenceMs: pick("watchMaxSilenceMs", 120_000),
  };
}

export interface SilenceGuard {
  /** Aborts the watch's request when the watch is abandoned. */
  readonly signal: AbortSignal;
  /** Bytes arrived: the watch is alive. */
  touch(): void;
  /** Why the watch was abandoned, once it was. */
  readonly reason: string | undefined;
  stop(): void;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Guards one watch. `ping` answers undefined when the server answered (any HTTP status), else why
 * not. Checks run on a timer, never per byte, so a busy watch pays one assignment per chunk.
 */
export function watchSilenceGuard(options: {
  liveness: Required<WatchLivenessOptions>;
  bookmarks: boolean;
  ping: (timeoutMs: number) => Promise<string | undefined>;
  onSilent?: (reason: string) => void;
  now?: () => number;
}): SilenceGuard {
  const { liveness: l, ping } = options;
  const now = options.now ?? Date.now;
  const controller = new AbortController();
  let last = now();
  let reason: string | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let done = false;

  const abandon = (why: string) => {
    if (done || reason) return;
    reason = why;
    options.onSilent?.(why);
    controller.abort(new Error(why));
  };
  const schedule = (ms: number) => {
    timer = setTimeout(() => void check(), ms);
  };
  async function check() {
    timer = undefined;
    if (done) return;
    const silent = now() - last;
    if (silent < l.watchIdleMs) return schedule(l.watchIdleMs - silent);
    if (options.bookmarks && silent >= l.watchMaxSilenceMs)
      return abandon(`no event or bookmark for ${seconds(silent)}`);
    const failure = await ping(l.watchPingTimeoutMs);
    if (done) return;
    const still = now() - last;
    if (failure !== undefined && still >= l.watchIdleMs) {
      return abandon(
        `silent for ${seconds(still)} and the API server did not answer a ping within ${seconds(l.watchPingTimeoutMs)} (${failure})`,
      );
    }
    // Answered: still silent, the next ping is a whole idle period away; else count from the last byte.
    const since = now() - last;
    schedule(since >= l.watchIdleMs ? l.watchIdleMs : l.watchIdleMs - since);
  }
  if (l.watchIdleMs > 0) schedule(l.watchIdleMs);
  return {
    signal: controller.signal,
    touch() {
      last = now();
    },
    get reason() {
      return reason;
    },
    stop() {
      done = true;
      if (timer) clearTimeout(timer);
    },
  };
}
