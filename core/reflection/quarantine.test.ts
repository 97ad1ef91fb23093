import { describe, expect, test } from "bun:test";
import { ensureBuilt, wasmPath } from "../../reflectors/build.ts";
import { PluginError } from "./errors.ts";
import { DROPIN_RETRY_BUDGET_FACTOR, loadPlugin, type Trust } from "./host.ts";
import { BUILTIN_OVERRUNS_TO_QUARANTINE } from "./main-runner.ts";
import { validatePlugin } from "./validate.ts";

const fixture = (name: string) => Bun.file(wasmPath(`fixture-${name}`)).bytes();
const ctx = { localClusterId: "home", remoteClusterId: "far", localNamespace: "a", remoteNamespace: "a-far" };
const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg", namespace: "a" }, data: { k: "v" } };
// Build (if stale) at load time: compiling takes longer than a test's time limit.
await ensureBuilt(["fixture-misbehave", "fixture-badjson", "fixture-wrongabi", "fixture-stallonce", "networkpolicy"]);
const misbehave = await fixture("misbehave");

async function expectQuarantine(trust: Trust, mode: string, code: string, reason: RegExp) {
  const quarantined: string[] = [];
  const p = await loadPlugin(misbehave, { trust, budgetMs: 5_000, onQuarantine: (r) => quarantined.push(r) });
  try {
    const err = await p.forward(cm, null, { ...ctx, mode }).catch((e) => e);
    expect(err).toBeInstanceOf(PluginError);
    expect(err.code).toBe(code);
    expect(err.message).toMatch(reason);
    expect(err.object).toBe("a/cfg");
    expect(p.state).toBe("quarantined");
    expect(p.quarantineReason).toMatch(reason);
    expect(quarantined).toHaveLength(1);
    const next = await p.forward(cm, null, ctx).catch((e) => e);
    expect(next.code).toBe("quarantined");
  } finally {
    await p.close();
  }
}

describe("quarantine", () => {
  test("a well-behaved call is not quarantined (control)", async () => {
    const p = await loadPlugin(misbehave, { trust: "builtin" });
    expect((await p.forward(cm, null, ctx)).decision).toBe("apply");
    expect(p.state).toBe("ready");
    await p.close();
  });
  for (const trust of ["builtin", "dropin"] as const) {
    test(`${trust}: trap → quarantined with the abort message`, () =>
      expectQuarantine(trust, "trap", "trap", /fixture trap/));
    test(`${trust}: answer in another namespace → violation`, () =>
      expectQuarantine(trust, "wrong-namespace", "violation", /namespace "kube-system"/));
    test(`${trust}: answer for another cluster → violation`, () =>
      expectQuarantine(trust, "wrong-cluster", "violation", /someone-else/));
    test(`${trust}: malformed edits → invalid-output`, () =>
      expectQuarantine(trust, "bad-decision", "invalid-output", /not a JSON object/));
  }
  test("overwriting a remote object it does not own → violation", async () => {
    const p = await loadPlugin(misbehave, { trust: "builtin" });
    const theirs = { ...cm, metadata: { name: "cfg", namespace: "a-far", labels: { app: "x" } } };
    const err = await p.forward(cm, theirs, { ...ctx, mode: "overwrite" }).catch((e) => e);
    expect(err.code).toBe("violation");
    expect(err.message).toContain("does not own");
    expect(p.state).toBe("quarantined");
    await p.close();
  });
  test("dropin: an endless loop is cut at the budget and quarantined; the main thread stays free", async () => {
    const p = await loadPlugin(misbehave, { trust: "dropin", budgetMs: 100 });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const started = performance.now();
    const err = await p.forward(cm, null, { ...ctx, mode: "loop" }).catch((e) => e);
    clearInterval(timer);
    expect(err.code).toBe("timeout");
    expect(err.message).toContain("budget");
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(ticks).toBeGreaterThan(0); // the event loop kept running during the loop
    expect(p.state).toBe("quarantined");
    await p.close();
  });
  describe("dropin: a batch cut at the budget runs once more on a fresh worker", () => {
    /** The ConfigMap whose presence makes the stallonce fixture loop (its lookup of a/stall). */
    const stallMarker = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "stall", namespace: "a" } };
    test("stalled once (as a loaded node can): the fresh worker answers, and the plugin is not quarantined", async () => {
      let stalls = 1;
      const asked: string[] = [];
      const p = await loadPlugin(await fixture("stallonce"), {
        trust: "dropin",
        budgetMs: 100,
        lookup: (req) => {
          asked.push(req.name);
          return stalls-- > 0 ? stallMarker : null;
        },
      });
      try {
        expect((await p.forward(cm, null, ctx)).decision).toBe("apply");
        expect(p.state).toBe("ready");
        // The first worker asked and looped; the fresh one asked again and answered.
        expect(asked).toEqual(["stall", "stall"]);
        const next = { ...cm, metadata: { ...cm.metadata, name: "cfg2" } };
        expect((await p.forward(next, null, ctx)).decision).toBe("apply");
      } finally {
        await p.close();
      }
    });
    test("stalled again on the fresh worker: quarantined, naming both budgets", async () => {
      const p = await loadPlugin(await fixture("stallonce"), {
        trust: "dropin",
        budgetMs: 100,
        lookup: () => stallMarker,
      });
      try {
        const err = await p.forward(cm, null, ctx).catch((e) => e);
        expect(err.code).toBe("timeout");
        expect(err.message).toContain("ran past its 100 ms budget");
        expect(err.message).toContain(
          `again on a fresh worker: a batch of 1 call(s) ran past its ${100 * DROPIN_RETRY_BUDGET_FACTOR} ms budget`,
        );
        expect(p.state).toBe("quarantined");
      } finally {
        await p.close();
      }
    });
  });
  test("invalid JSON output → invalid-output", async () => {
    const p = await loadPlugin(await fixture("badjson"), { trust: "builtin" });
    const err = await p.forward(cm, null, ctx).catch((e) => e);
    expect(err.code).toBe("invalid-output");
    expect(err.message).toContain("invalid JSON");
    expect(p.state).toBe("quarantined");
    await p.close();
  });
  test("wrong ABI version is refused at load", async () => {
    const err = await loadPlugin(await fixture("wrongabi")).catch((e) => e);
    expect(err).toBeInstanceOf(PluginError);
    expect(err.code).toBe("abi-mismatch");
    expect(err.message).toContain("version 99");
  });
  test("bytes that are not wasm are refused at load", async () => {
    const err = await loadPlugin(new TextEncoder().encode("not wasm")).catch((e) => e);
    expect(err.code).toBe("invalid-manifest");
  });
});

describe("validatePlugin (drop-in files)", () => {
  test("accepts the example plugin", async () => {
    const v = await validatePlugin(await Bun.file(wasmPath("networkpolicy")).bytes());
    expect(v.ok ? v.manifest.name : v.problems).toBe("networkpolicies");
  });
  test("refuses a wrong ABI with the reason", async () => {
    const v = await validatePlugin(await fixture("wrongabi"));
    expect(v.ok).toBe(false);
    expect(!v.ok && v.problems.join()).toContain("ABI version 99");
  });
  test("refuses a plugin whose trial call misbehaves", async () => {
    const v = await validatePlugin(await fixture("badjson"));
    expect(!v.ok && v.problems.join()).toContain("invalid JSON");
  });
});

describe("time budget of built-ins (checked after the call)", () => {
  // A clock that says every call took a full second: the plugin is slow as far as the host can tell.
  const slowClock = () => {
    let t = 0;
    return { now: () => (t += 1000) };
  };

  test(`a slow call is tolerated; ${BUILTIN_OVERRUNS_TO_QUARANTINE} in a row quarantine`, async () => {
    const p = await loadPlugin(misbehave, { trust: "builtin", budgetMs: 250, clock: slowClock(), memoEntries: 0 });
    try {
      for (let i = 1; i < BUILTIN_OVERRUNS_TO_QUARANTINE; i++) {
        const d = await p.forward(cm, null, ctx);
        expect(d.decision).toBe("apply");
        expect(p.state).toBe("ready");
      }
      const err = await p.forward(cm, null, ctx).catch((e) => e);
      expect(err.code).toBe("timeout");
      expect(err.message).toContain(`${BUILTIN_OVERRUNS_TO_QUARANTINE} calls in a row`);
      expect(p.state).toBe("quarantined");
    } finally {
      await p.close();
    }
  });

  test("runs are timed one in eight while fast, every one once a run was slow", async () => {
    let reads = 0;
    let t = 0;
    let slow = false;
    const clock = {
      now: () => {
        reads++;
        return (t += slow ? 1000 : 1);
      },
    };
    const p = await loadPlugin(misbehave, { trust: "builtin", budgetMs: 250, clock, memoEntries: 0 });
    try {
      for (let i = 0; i < 64; i++) p.forwardSync(cm, null, ctx);
      expect(reads).toBe(16); // 8 timed runs, two clock reads each
      slow = true;
      // The next sampled run is slow: from then on every run is timed, and the fifth slow one in a row quarantines.
      let calls = 0;
      while (p.state === "ready" && calls < 100) {
        calls++;
        try {
          p.forwardSync(cm, null, ctx);
        } catch {
          /* the quarantining call */
        }
      }
      expect(p.state).toBe("quarantined");
      expect(calls).toBeLessThanOrEqual(8 + BUILTIN_OVERRUNS_TO_QUARANTINE);
    } finally {
      await p.close();
    }
  });

  test("a fast call in between resets the count", async () => {
    let t = 0;
    let slow = true;
    const clock = { now: () => (t += slow ? 1000 : 1) };
    const p = await loadPlugin(misbehave, { trust: "builtin", budgetMs: 250, clock, memoEntries: 0 });
    try {
      for (let round = 0; round < 3; round++) {
        slow = true;
        for (let i = 1; i < BUILTIN_OVERRUNS_TO_QUARANTINE; i++) await p.forward(cm, null, ctx);
        slow = false;
        await p.forward(cm, null, ctx);
      }
      expect(p.state).toBe("ready");
    } finally {
      await p.close();
    }
  });
});
