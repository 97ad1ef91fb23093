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
