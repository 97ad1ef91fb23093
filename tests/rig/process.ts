// Components run detached, in their own process group, so a rig brought up by `rig up` outlives
// the command, and `rig down` (or a test's cleanup) can kill each component with all its children.
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";

export function spawnDetached(
  cmd: string,
  args: string[],
  logFile: string,
  env?: Record<string, string>,
  uid?: number,
): number {
  const out = openSync(logFile, "a");
  const ids = uid === undefined ? {} : { uid, gid: uid };
  const child = spawn(cmd, args, {
    detached: true,
    stdio: ["ignore", out, out],
    env: { ...process.env, ...env },
    ...ids,
  });
  closeSync(out);
  child.unref();
  if (!child.pid) throw new Error(`could not start ${cmd}`);
  return child.pid;
}

export function isAlive(pid: number): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    // A zombie still answers signal 0; it is dead for our purposes.
    const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, "utf8") : "";
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
  try {
    process.kill(pid, signal);
  } catch {
    /* already gone */
  }
}

/** SIGTERM the process group, wait up to graceMs, then SIGKILL whatever is left. */
export async function killGroup(pid: number, graceMs = 5000): Promise<void> {
  if (!isAlive(pid)) return;
  signalGroup(pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await Bun.sleep(50);
  if (isAlive(pid)) signalGroup(pid, "SIGKILL");
  const hard = Date.now() + 5000;
  while (isAlive(pid) && Date.now() < hard) await Bun.sleep(20);
}

/** For exit handlers, where nothing asynchronous runs. */
export function killGroupNow(pid: number) {
  signalGroup(pid, "SIGKILL");
}

export function tailFile(path: string, lines = 25): string {
  if (!existsSync(path)) return "(no log)";
  const all = readFileSync(path, "utf8").trimEnd().split("\n");
  return all.slice(-lines).join("\n");
}

/**
 * Times the phases of a clean-up and says which were slow: a teardown that takes minutes on one
 * machine and seconds on another is otherwise impossible to diagnose from a test's time-out.
 */
export class PhaseClock {
  private readonly start = performance.now();
  private last = this.start;
  private readonly laps: string[] = [];

  constructor(
    private readonly what: string,
    private readonly slowMs = 15_000,
  ) {}

  lap(phase: string): void {
    const now = performance.now();
    this.laps.push(`${phase} ${((now - this.last) / 1000).toFixed(1)} s`);
    this.last = now;
  }

  reportIfSlow(): void {
    const total = performance.now() - this.start;
    if (total >= this.slowMs)
      console.error(`rig: stopping ${this.what} took ${(total / 1000).toFixed(1)} s (${this.laps.join(", ")})`);
  }
}
