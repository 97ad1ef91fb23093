// Small helpers every benchmark shares: percentiles, process memory, and aligned printing.
import { existsSync, readFileSync } from "node:fs";

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function summarize(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s[s.length - 1] ?? NaN };
}

/** Resident memory of a process, in MiB, read from /proc (0 when it is gone). */
export function rssMiB(pid: number): number {
  const file = `/proc/${pid}/status`;
  if (!existsSync(file)) return 0;
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(file, "utf8"));
  return m ? Number(m[1]) / 1024 : 0;
}

export function row(label: string, value: string | number, unit = "") {
  const v = typeof value === "number" ? (Number.isInteger(value) ? String(value) : value.toFixed(2)) : value;
  console.log(`  ${label.padEnd(48)} ${v.padStart(12)} ${unit}`);
}

export function heading(text: string) {
  console.log(`\n== ${text}`);
}

export type Trend = "flat" | "levels off" | "grows";

/**
 * Whether a series sampled at regular intervals leaks: split in thirds, the first is warm-up. It
 * "grows" when the last third's median is above the middle third's by more than `relative` and
 * by more than `absolute` (growth that does not level off); it "levels off" when only the warm-up
 * was lower; else it is "flat". Fewer than 6 samples say nothing: undefined.
 */
export function trend(samples: number[], absolute: number, relative = 0.05): Trend | undefined {
  if (samples.length < 6) return undefined;
  const third = Math.floor(samples.length / 3);
  const median = (xs: number[]) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      50,
    );
  const [a, b, c] = [
    median(samples.slice(0, third)),
    median(samples.slice(third, samples.length - third)),
    median(samples.slice(samples.length - third)),
  ];
  const above = (x: number, y: number) => x - y > absolute && x > y * (1 + relative);
  if (above(c, b)) return "grows";
  if (above(b, a) || above(c, a)) return "levels off";
  return "flat";
}
