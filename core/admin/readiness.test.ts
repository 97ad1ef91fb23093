import { describe, expect, test } from "bun:test";
import { createReadiness } from "./readiness.ts";

describe("readiness checks", () => {
  test("answers map to pass or fail with a reason", async () => {
    const r = createReadiness();
    r.add("plain", () => {});
    r.add("true", () => true);
    r.add("async-ok", async () => ({ ok: true }));
    r.add("false", () => false);
    r.add("reasoned", async () => ({ ok: false, reason: "informer for pods not synced" }));
    r.add("throws", () => {
      throw new Error("lease lost");
    });
    r.add("rejects", () => Promise.reject(new Error("api server unreachable")));
    r.add("odd", () => "yes" as never);
    const report = await r.run();
    expect(report.ready).toBe(false);
    expect(report.checks.map((c) => [c.name, c.ok, c.reason])).toEqual([
      ["plain", true, undefined],
      ["true", true, undefined],
      ["async-ok", true, undefined],
      ["false", false, "check returned false"],
      ["reasoned", false, "informer for pods not synced"],
      ["throws", false, "lease lost"],
      ["rejects", false, "api server unreachable"],
      ["odd", false, "check returned an unexpected value (string)"],
    ]);
  });

  test("no checks means ready", async () => {
    expect(await createReadiness().run()).toEqual({ ready: true, checks: [] });
  });

  test("a hung check fails by its deadline, is aborted, and the next run starts afresh", async () => {
    const r = createReadiness({ timeoutMs: 5000 });
    const signals: AbortSignal[] = [];
    r.add(
      "hangs",
      ({ signal }) => {
        signals.push(signal);
        return new Promise<void>(() => {});
      },
      { timeoutMs: 25 },
    );
    r.add("fine", () => {});
    const began = performance.now();
    const report = await r.run();
    expect(performance.now() - began).toBeLessThan(2000);
    expect(report.checks.find((c) => c.name === "hangs")).toMatchObject({ ok: false, reason: "timed out after 25ms" });
    expect(report.checks.find((c) => c.name === "fine")?.ok).toBe(true);
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(true);
    await r.run();
    expect(signals).toHaveLength(2);
  });

  test("concurrent runs join the check already in flight", async () => {
    const r = createReadiness();
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    r.add("slow", async () => {
      calls++;
      await gate;
    });
    const first = r.run();
    const second = r.run();
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(calls).toBe(1);
    expect(a.ready && b.ready).toBe(true);
    await r.run();
    expect(calls).toBe(2);
  });

  test("exclude and only select checks", async () => {
    const r = createReadiness();
    r.add("leader", () => false);
    r.add("caches-synced", () => true);
    expect((await r.run({ exclude: ["leader"] })).ready).toBe(true);
    expect((await r.run({ only: "leader" })).checks.map((c) => c.name)).toEqual(["leader"]);
  });

  test("registration rejects bad names, duplicates and bad timeouts; removal works", () => {
    const r = createReadiness();
    expect(() => r.add("Caches Synced", () => {})).toThrow(/must be lowercase/);
    const remove = r.add("leader", () => {});
    expect(() => r.add("leader", () => {})).toThrow("readiness check leader is already registered");
    expect(() => r.add("other", () => {}, { timeoutMs: 0 })).toThrow(RangeError);
    remove();
    expect(r.names()).toEqual([]);
    expect(() => createReadiness({ timeoutMs: -1 })).toThrow(RangeError);
  });
});
