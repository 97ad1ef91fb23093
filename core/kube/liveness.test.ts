import { describe, expect, test } from "bun:test";
import { watchLiveness, watchSilenceGuard } from "./liveness.ts";
import { waitFor } from "../../tests/support/wait.ts";

const fast = watchLiveness({ watchIdleMs: 20, watchPingTimeoutMs: 10, watchMaxSilenceMs: 200 });

describe("watchLiveness", () => {
  test("client-go's timings by default", () =>
    expect(watchLiveness()).toEqual({ watchIdleMs: 30_000, watchPingTimeoutMs: 15_000, watchMaxSilenceMs: 120_000 }));
  test("a negative time is refused, naming the option", () =>
    expect(() => watchLiveness({ watchIdleMs: -1 })).toThrow(/watchIdleMs must be/));
});

describe("watchSilenceGuard", () => {
  test("a silent watch whose ping goes unanswered is abandoned, saying why", async () => {
    const guard = watchSilenceGuard({ liveness: fast, bookmarks: true, ping: async () => "connect timed out" });
    await waitFor("abandoned", () => guard.signal.aborted, { timeoutMs: 5000, intervalMs: 5 });
    expect(guard.reason).toMatch(/did not answer a ping within 0\.0 s \(connect timed out\)/);
    guard.stop();
  });

  test("a silent watch whose pings answer is kept until the bookmark deadline", async () => {
    let pings = 0;
    const start = Date.now();
    const guard = watchSilenceGuard({
      liveness: fast,
      bookmarks: true,
      ping: async () => {
        pings++;
        return undefined;
      },
    });
    await waitFor("abandoned", () => guard.signal.aborted, { timeoutMs: 5000, intervalMs: 5 });
    expect(Date.now() - start).toBeGreaterThanOrEqual(200);
    expect(pings).toBeGreaterThan(0);
    expect(guard.reason).toMatch(/no event or bookmark for/);
  });

  test("without bookmarks, answered pings keep a silent watch forever", async () => {
    let pings = 0;
    const guard = watchSilenceGuard({
      liveness: fast,
      bookmarks: false,
      ping: async () => {
        pings++;
        return undefined;
      },
    });
    await waitFor("several pings", () => pings >= 12, { timeoutMs: 5000, intervalMs: 5 });
    expect(guard.signal.aborted).toBe(false);
    guard.stop();
  });

  test("bytes arriving keep the watch from being pinged at all", async () => {
    let pings = 0;
    const guard = watchSilenceGuard({
      liveness: fast,
      bookmarks: true,
      ping: async () => {
        pings++;
        return "down";
      },
    });
    const until = Date.now() + 300;
    while (Date.now() < until) {
      guard.touch();
      await Bun.sleep(2);
    }
    expect(pings).toBe(0);
    expect(guard.signal.aborted).toBe(false);
    guard.stop();
  });

  test("stopped, it never fires", async () => {
    let pings = 0;
    const guard = watchSilenceGuard({
      liveness: fast,
      bookmarks: true,
      ping: async () => {
        pings++;
        return "down";
      },
    });
    guard.stop();
    await Bun.sleep(100);
    expect(pings).toBe(0);
    expect(guard.signal.aborted).toBe(false);
  });
});
