import { expect, test } from "bun:test";
import { ensureBuilt } from "../../reflectors/build.ts";
import { loadBuiltin } from "../../reflectors/index.ts";
import { configMap, ctx } from "../../reflectors/samples.ts";

// Build (if stale) at load time: compiling takes longer than a test's time limit.
await ensureBuilt(["configmaps", "services"]);

// @extism/extism 1.0.3 breaks a plugin after ~16k calls through plugin.call; the host must
// outlive that with flat memory. 40k calls, recycling every 5k, yielding to the event loop
// now and then as the engine's workers do (the recycled instance is swapped in between calls).
test("survives 40,000 calls (past the 16k breakage) with flat plugin memory", async () => {
  const plugin = await loadBuiltin("configmaps", { recycleAfterCalls: 5_000, memoEntries: 0 });
  const memory: number[] = [];
  try {
    for (let i = 1; i <= 40_000; i++) {
      const d = plugin.forwardSync(configMap, null, ctx);
      if (d.decision !== "apply") throw new Error(`call ${i}: ${d.decision} ${d.reason}`);
      if (i % 1_000 === 0) {
        memory.push(plugin.stats().memoryBytes);
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    const stats = plugin.stats();
    expect(stats.calls).toBeGreaterThanOrEqual(40_000);
    expect(stats.recycles).toBeGreaterThanOrEqual(4);
    // The arena is rewound per call: memory never grows past the first call's high-water mark.
    expect(Math.max(...memory)).toBe(Math.min(...memory));
    expect(Math.max(...memory)).toBeLessThanOrEqual(1024 * 1024);
    expect(plugin.state).toBe("ready");
  } finally {
    await plugin.close();
  }
}, 60_000); // 40k calls: seconds on a busy shared machine

test("without recycling, calls still do not grow memory (the arena is rewound per call)", async () => {
  const plugin = await loadBuiltin("services", { recycleAfterCalls: Number.MAX_SAFE_INTEGER, memoEntries: 0 });
  try {
    const service = (nodePort: number) => ({
      ...configMap,
      kind: "Service",
      spec: { ports: [{ port: 80, nodePort }] },
    });
    plugin.forwardSync(service(30000), null, ctx);
    const before = plugin.stats().memoryBytes;
    for (let i = 0; i < 20_000; i++) plugin.forwardSync(service(30000 + (i % 100)), null, ctx);
    expect(plugin.stats().memoryBytes).toBe(before);
    expect(plugin.stats().recycles).toBe(0);
  } finally {
    await plugin.close();
  }
}, 60_000);
