// Validation of drop-ins runs the plugin only in a worker, under a deadline: a plugin whose start
// function never returns is refused in bounded time while this thread keeps running.
import { expect, test } from "bun:test";
import { ensureBuilt, wasmPath } from "../../reflectors/build.ts";
import { loadPlugin } from "./host.ts";
import { validatePlugin } from "./validate.ts";

await ensureBuilt(["fixture-loopstart", "networkpolicy"]);
const loopstart = await Bun.file(wasmPath("fixture-loopstart")).bytes();

test("a plugin whose start function loops is refused, and the main thread is never stalled", async () => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 50);
  const started = performance.now();
  const verdict = await validatePlugin(loopstart, { label: "loopstart.wasm", startTimeoutMs: 1_500 });
  const took = performance.now() - started;
  clearInterval(timer);
  expect(verdict.ok).toBe(false);
  expect(!verdict.ok && verdict.problems.join("\n")).toMatch(
    /loopstart\.wasm: did not finish starting \(its start function\) within 1500 ms; its worker was terminated/,
  );
  expect(took).toBeLessThan(5_000);
  // A stalled thread would not have ticked at all while the plugin spun.
  expect(ticks).toBeGreaterThanOrEqual(Math.floor(1_500 / 50 / 2));
}, 15_000);

test("loading a looping drop-in for the engine fails the same way (no main-thread probe)", async () => {
  const err = await loadPlugin(loopstart, { trust: "dropin", startTimeoutMs: 1_000 }).catch((e) => e);
  expect(err.code).toBe("timeout");
  expect(err.message).toContain("did not finish starting");
}, 15_000);

test("a valid drop-in still validates, its manifest read in the worker", async () => {
  const verdict = await validatePlugin(await Bun.file(wasmPath("networkpolicy")).bytes());
  expect(verdict.ok && verdict.manifest.name).toBe("networkpolicies");
}, 15_000);

test("bytes that are not WebAssembly are refused with the reason", async () => {
  const verdict = await validatePlugin(new TextEncoder().encode("#!/bin/sh\necho not wasm\n"), {
    label: "script.wasm",
  });
  expect(!verdict.ok && verdict.problems[0]).toMatch(/script\.wasm: is not a valid WebAssembly module/);
});
