// A rate-limited work queue, as client-go's: a key is queued at most once, never handled by two
// workers at once, and a key added while it is being handled is handled again afterwards.
import { RetryAfterError } from "./errors.ts";
import { silentLogger, type Logger } from "../log.ts";

export type Outcome = "success" | "error" | "retry";

export interface WorkQueueOptions {
  name: string;
  handler: (key: string) => Promise<void>;
  workers?: number;
  /** First retry delay after a failure; doubles with each further failure of the same key. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  logger?: Logger;
  /** Called after each handling, for latency histograms and counters. */
  observe?: (key: string, outcome: Outcome, durationMs: number) => void;
}

export interface WorkQueue {
  add(key: string): void;
  /**
   * As add, but ahead of the keys added without it (in their own FIFO order): for work whose
   * latency users see (a new pod to offload, a pod turning Running) queued behind bulk updates.
   * A key already waiting moves ahead; the at-most-once and one-worker-per-key rules are unchanged.
   */
  addFirst(key: string): void;
  addAfter(key: string, delayMs: number): void;
  addRateLimited(key: string): void;
  forget(key: string): void;
  /** Keys waiting (not counting the ones being handled or delayed). */
  readonly depth: number;
  readonly stats: { handled: number; failed: number; retried: number };
  failures(key: string): number;
  start(): void;
  /** Stops taking keys and waits for the ones being handled. */
  shutdown(): Promise<void>;
  /** Resolves when nothing is queued, delayed or being handled. */
  idle(): Promise<void>;
}

export function backoffDelay(failures: number, baseDelayMs: number, maxDelayMs: number): number {
  return Math.min(maxDelayMs, baseDelayMs * 2 ** Math.max(0, failures - 1));
}

export function createWorkQueue(options: WorkQueueOptions): WorkQueue {
  const workers = options.workers ?? 1;
  const base = options.baseDelayMs ?? 5;
  const max = options.maxDelayMs ?? 300_000;
  const log = (options.logger ?? silentLogger).child({ queue: options.name });
  const queue: string[] = [];
  let head = 0;
  const urgent: string[] = [];
  let urgentHead = 0;
  /** Keys waiting in `urgent`: a key there may also still sit in `queue`, a stale copy take() skips. */
  const urgentKeys = new Set<string>();
  /** Keys addFirst-ed while being handled: re-queued ahead when the handling ends. */
  const urgentAfter = new Set<string>();
  const dirty = new Set<string>();
  const processing = new Set<string>();
  const delayed = new Map<string, { at: number; timer: ReturnType<typeof setTimeout> }>();
  const failureCount = new Map<string, number>();
  const stats = { handled: 0, failed: 0, retried: 0 };
  let running = false;
  let stopping = false;
  let wake: (() => void) | undefined;
  let idleWaiters: (() => void)[] = [];
  const loops: Promise<void>[] = [];

  const isIdle = () => dirty.size === 0 && processing.size === 0 && delayed.size === 0;
  const checkIdle = () => {
    if (!isIdle()) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  };

  function add(key: string) {
    if (stopping || dirty.has(key)) return;
    dirty.add(key);
    if (processing.has(key)) return;
    queue.push(key);
    wake?.();
  }

  function addFirst(key: string) {
    if (stopping || urgentKeys.has(key)) return;
    if (processing.has(key)) {
      // Handled again when this handling ends, ahead of the others.
      dirty.add(key);
      urgentAfter.add(key);
      return;
    }
    // A copy already in `queue` stays there and is skipped once this one has been taken.
    dirty.add(key);
    urgentKeys.add(key);
    urgent.push(key);
    wake?.();
  }

  function addAfter(key: string, delayMs: number) {
    if (stopping) return;
    if (delayMs <= 0) return add(key);
    const at = Date.now() + delayMs;
    const existing = delayed.get(key);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      delayed.delete(key);
      add(key);
      checkIdle();
    }, delayMs);
    delayed.set(key, { at, timer });
  }

  function take(): string | undefined {
    while (urgentHead < urgent.length) {
      const key = urgent[urgentHead++]!;
      if (urgentHead > 1024 && urgentHead * 2 > urgent.length) {
        urgent.splice(0, urgentHead);
        urgentHead = 0;
      }
      urgentKeys.delete(key);
      if (!dirty.has(key) || processing.has(key)) continue;
      return key;
    }
    while (head < queue.length) {
      const key = queue[head++]!;
      // Compact now and then so a long-lived queue does not grow without bound.
      if (head > 1024 && head * 2 > queue.length) {
        queue.splice(0, head);
        head = 0;
      }
      // A copy left behind when the key moved ahead (addFirst) and was handled from there.
      if (!dirty.has(key) || processing.has(key)) continue;
      return key;
    }
    return undefined;
  }

  async function worker() {
    while (!stopping) {
      const key = take();
      if (key === undefined) {
        await new Promise<void>((resolve) => {
          const prev = wake;
          wake = () => {
            wake = undefined;
            prev?.();
            resolve();
          };
        });
        continue;
      }
      dirty.delete(key);
      processing.add(key);
      const started = performance.now();
      let outcome: Outcome = "success";
      try {
        await options.handler(key);
        failureCount.delete(key);
      } catch (err) {
        if (err instanceof RetryAfterError) {
          outcome = "retry";
          stats.retried++;
          addAfter(key, err.delayMs);
        } else {
          outcome = "error";
          stats.failed++;
          log.warn("reconcile failed, will retry", { key, err, failures: (failureCount.get(key) ?? 0) + 1 });
          addRateLimited(key);
        }
      }
      stats.handled++;
      processing.delete(key);
      options.observe?.(key, outcome, performance.now() - started);
      if (dirty.has(key)) {
        if (urgentAfter.delete(key)) {
          urgentKeys.add(key);
          urgent.push(key);
        } else {
          queue.push(key);
        }
        wake?.();
      } else {
        urgentAfter.delete(key);
      }
      checkIdle();
    }
  }

  function addRateLimited(key: string) {
    const n = (failureCount.get(key) ?? 0) + 1;
    failureCount.set(key, n);
    addAfter(key, backoffDelay(n, base, max));
  }

  return {
    add,
    addFirst,
    addAfter,
    addRateLimited,
    forget: (key) => void failureCount.delete(key),
    get depth() {
      let n = dirty.size;
      for (const k of processing) if (dirty.has(k)) n--;
      return n;
    },
    stats,
    failures: (key) => failureCount.get(key) ?? 0,
    start() {
      if (running) return;
      running = true;
      for (let i = 0; i < workers; i++) loops.push(worker());
    },
    async shutdown() {
      stopping = true;
      for (const { timer } of delayed.values()) clearTimeout(timer);
      delayed.clear();
      while (wake) wake();
      await Promise.all(loops);
      checkIdle();
    },
    idle() {
      return isIdle() ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
  };
}
