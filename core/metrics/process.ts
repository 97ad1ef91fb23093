// The standard process_* metrics, read at scrape so they cost nothing between scrapes. Names and
// units match what Prometheus' own clients export, so stock dashboards work unchanged.
import type { Registry } from "./registry.ts";

/** Where the numbers come from; tests replace it to get exact values. */
export interface ProcessSource {
  cpuUsage(): { user: number; system: number }; // microseconds
  rssBytes(): number;
  heapBytes(): number;
  /** Seconds since the epoch at which the process started. */
  startTimeSeconds(): number;
}

export function bunProcessSource(): ProcessSource {
  // Fixed at registration: uptime and the wall clock move together, and recomputing on every
  // scrape would make the start time jitter when the wall clock is stepped.
  const start = Date.now() / 1000 - process.uptime();
  return {
    cpuUsage: () => process.cpuUsage(),
    rssBytes: () => process.memoryUsage.rss(),
    heapBytes: () => process.memoryUsage().heapTotal,
    startTimeSeconds: () => start,
  };
}

export function registerProcessMetrics(registry: Registry, source: ProcessSource = bunProcessSource()): void {
  registry.callbackCounter({
    name: "process_cpu_seconds_total",
    help: "Total user and system CPU time spent in seconds.",
    collect: () => {
      const usage = source.cpuUsage();
      return (usage.user + usage.system) / 1e6;
    },
  });
  registry.callbackGauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
    collect: () => source.rssBytes(),
  });
  registry.callbackGauge({
    name: "process_heap_bytes",
    help: "Process heap size in bytes (JavaScript heap of the Bun runtime).",
    collect: () => source.heapBytes(),
  });
  registry.callbackGauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since unix epoch in seconds.",
    collect: () => source.startTimeSeconds(),
  });
}
