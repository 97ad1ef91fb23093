import { expect, test } from "bun:test";
import { createRegistry, parsePrometheusText, registerProcessMetrics } from "./index.ts";

test("process metrics come from the source at scrape time", async () => {
  const r = createRegistry();
  let user = 1_500_000;
  registerProcessMetrics(r, {
    cpuUsage: () => ({ user, system: 500_000 }),
    rssBytes: () => 4096,
    heapBytes: () => 2048,
    startTimeSeconds: () => 1700000000.25,
  });
  user += 1_000_000;
  const values = Object.fromEntries(
    parsePrometheusText(await r.expose()).map((f) => [f.name, [f.type, f.samples[0]!.value]]),
  );
  expect(values).toEqual({
    process_cpu_seconds_total: ["counter", 3],
    process_heap_bytes: ["gauge", 2048],
    process_resident_memory_bytes: ["gauge", 4096],
    process_start_time_seconds: ["gauge", 1700000000.25],
  });
});

test("the Bun source reports plausible numbers for this process", async () => {
  const r = createRegistry();
  registerProcessMetrics(r);
  const values = Object.fromEntries((await r.collect()).map((f) => [f.name, f.samples[0]!.value]));
  expect(values.process_resident_memory_bytes).toBeGreaterThan(1 << 20);
  expect(values.process_heap_bytes).toBeGreaterThan(0);
  expect(values.process_cpu_seconds_total).toBeGreaterThan(0);
  const start = values.process_start_time_seconds!;
  expect(start).toBeLessThanOrEqual(Date.now() / 1000);
  // This test process started well within the last hour.
  expect(start).toBeGreaterThan(Date.now() / 1000 - 3600);
});
