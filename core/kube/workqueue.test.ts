import { describe, expect, test } from "bun:test";
import { backoffDelay, createWorkQueue } from "./workqueue.ts";
import { RetryAfterError } from "./errors.ts";
import { waitFor } from "../../tests/support/wait.ts";

describe("backoffDelay", () => {
  test.each([
    [1, 5],
    [2, 10],
    [3, 20],
    [8, 640],
    [9, 1000],
    [40, 1000],
  ])("failure %d → %d ms (base 5, max 1000)", (failures, expected) => {
    expect(backoffDelay(failures, 5, 1000)).toBe(expected);
  });
});

describe("createWorkQueue", () => {
  test("a key added many times before a worker takes it is handled once", async () => {
    const seen: string[] = [];
    const q = createWorkQueue({ name: "t", handler: async (k) => void seen.push(k) });
    for (let i = 0; i < 5; i++) q.add("a");
    q.add("b");
    expect(q.depth).toBe(2);
    q.start();
    await q.idle();
    expect(seen).toEqual(["a", "b"]);
    await q.shutdown();
  });

  test("a key is never handled by two workers at once, and an add during handling runs again", async () => {
    let active = 0;
    let maxActive = 0;
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const q = createWorkQueue({
      name: "t",
      workers: 4,
      handler: async () => {
        active++;
        calls++;
        maxActive = Math.max(maxActive, active);
        if (calls === 1) await gate;
        active--;
      },
    });
    q.start();
    q.add("k");
    while (calls === 0) await Promise.resolve();
    q.add("k");
    q.add("k");
    release();
    await q.idle();
    expect(maxActive).toBe(1);
    expect(calls).toBe(2);
    await q.shutdown();
  });

  test("failures retry with growing delays until success, then the count is forgotten", async () => {
    let attempts = 0;
    const q = createWorkQueue({
      name: "t",
      baseDelayMs: 1,
      maxDelayMs: 4,
      handler: async () => {
        attempts++;
        if (attempts < 4) throw new Error("boom");
      },
    });
    q.start();
    q.add("k");
    await q.idle();
    expect(attempts).toBe(4);
    expect(q.stats.failed).toBe(3);
    expect(q.failures("k")).toBe(0);
    await q.shutdown();
  });

  test("RetryAfterError delays the key without counting a failure", async () => {
    let attempts = 0;
    const outcomes: string[] = [];
    const q = createWorkQueue({
      name: "t",
      handler: async () => {
        if (++attempts === 1) throw new RetryAfterError(2);
      },
      observe: (_k, outcome) => outcomes.push(outcome),
    });
    q.start();
    q.add("k");
    await q.idle();
    expect(outcomes).toEqual(["retry", "success"]);
    expect(q.stats.failed).toBe(0);
    await q.shutdown();
  });

  test("N workers handle distinct keys concurrently", async () => {
    let active = 0;
    let maxActive = 0;
    const releases: (() => void)[] = [];
    const q = createWorkQueue({
      name: "t",
      workers: 3,
      handler: () =>
        new Promise<void>((resolve) => {
          active++;
          maxActive = Math.max(maxActive, active);
          releases.push(() => {
            active--;
            resolve();
          });
        }),
    });
    q.start();
    for (const k of ["a", "b", "c", "d"]) q.add(k);
    while (releases.length < 3) await Promise.resolve();
    expect(maxActive).toBe(3);
    while (releases.length) releases.shift()!();
    while (releases.length < 1) await Promise.resolve();
    releases.shift()!();
    await q.idle();
    await q.shutdown();
  });

  test("shutdown drops delayed keys and returns", async () => {
    const q = createWorkQueue({ name: "t", handler: async () => {} });
    q.start();
    q.addAfter("later", 60_000);
    await q.shutdown();
    await q.idle();
    expect(q.depth).toBe(0);
  });
  test("addFirst goes ahead of plain adds, moves a waiting key ahead once, and keeps one worker per key", async () => {
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const q = createWorkQueue({
      name: "t",
      handler: async (k) => {
        seen.push(k);
        if (k === "busy" && seen.length === 1) await gate;
      },
    });
    q.add("busy");
    q.start();
    await waitFor("the worker to take busy", () => seen.length === 1, { timeoutMs: 5_000, intervalMs: 1 });
    expect(seen).toEqual(["busy"]);
    q.add("a");
    q.add("b");
    q.add("c");
    q.addFirst("c"); // already waiting: moves ahead, handled once
    q.addFirst("d");
    q.addFirst("d"); // twice: still once
    q.addFirst("busy"); // being handled: handled again when that ends, ahead of a and b
    expect(q.depth).toBe(4); // busy is being handled, not waiting
    release();
    await q.idle();
    expect(seen).toEqual(["busy", "c", "d", "busy", "a", "b"]);
    await q.shutdown();
  });
});
