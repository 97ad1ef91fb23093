// What a process of the rig uses, from /proc: CPU-seconds so far, peak RSS (the kernel's VmHWM) and
// RSS now. NaN for a process that is gone.
import { existsSync, readFileSync } from "node:fs";

export interface ProcessUsage {
  cpuS: number;
  peakMiB: number;
  rssMiB: number;
}

export function processUsage(pid: number): ProcessUsage {
  if (!existsSync(`/proc/${pid}/stat`)) return { cpuS: NaN, peakMiB: NaN, rssMiB: NaN };
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8")
    .replace(/^.*\) /, "")
    .split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime (fields 14, 15 of stat)
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const mib = (field: string) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"))?.[1] ?? NaN) / 1024;
  return { cpuS: ticks / 100, peakMiB: mib("VmHWM"), rssMiB: mib("VmRSS") };
}
