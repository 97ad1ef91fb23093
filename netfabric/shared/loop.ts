// A single-flight reconcile loop: one pass at a time, run on a timer (so drift nobody announces,
// like a hand-deleted rule, is repaired) and on demand (kick() from informer events). Kicks that
// arrive during a pass coalesce into one more pass; a failing pass is retried with backoff.
import type { Logger } from "../../core/log.ts";

export interface LoopOptions {
  name: string;
  intervalMs: number;
  logger: Logger;
  pass(): Promise<void>;
  onError?(err: Error): void;
}

export function createLoop(o: LoopOptions) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = true;
  let failures = 0;

  function schedule(ms: number) {
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(() => void run(), ms);
  }

  function run(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await o.pass();
          failures = 0;
        } catch (err) {
          failures++;
          o.logger.warn(`${o.name} pass failed`, { err: (err as Error).message, failures });
          o.onError?.(err as Error);
        }
      } while (again && !stopped);
    })().finally(() => {
      running = undefined;
      // After failures, retry sooner than the interval, backing off up to it.
      schedule(failures > 0 ? Math.min(o.intervalMs, 200 * 2 ** Math.min(failures, 8)) : o.intervalMs);
    });
    return running;
  }

  return {
    start() {
      stopped = false;
      void run();
    },
    kick: () => {
      if (!stopped) void run();
    },
    /** One pass that starts after this call (waits for a running one first). */
    async runNow() {
      if (running) {
        again = true;
        await running;
      }
      await run();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
