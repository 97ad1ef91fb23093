import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isAlive } from "./process.ts";
import { RigError } from "./errors.ts";

/** The first port of the kernel's ephemeral range (ip_local_port_range; Linux's default 32768). */
export function ephemeralLow(text = readProcRange()): number {
  const low = Number(text.trim().split(/\s+/)[0]);
  return Number.isInteger(low) && low > 1024 ? low : 32768;
}
function readProcRange(): string {
  try {
    return readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8");
  } catch {
    return "";
  }
}

/**
 * Where freePort picks: below the ephemeral range and below Kubernetes' NodePort range
 * (30000-32767), so no outgoing connection is ever given a rig port as its local port. A component
 * restarted on its port (an API server in a fault test) found it taken by one that way.
 */
export function portWindow(low = ephemeralLow()): { from: number; to: number } {
  const to = Math.min(low, 30000) - 1;
  return { from: Math.max(1025, to - 9999), to };
}

/** Where ports handed out are reserved, one file per port naming the process: shared by every
 * process on the machine (the suite's shards, their rigs), so two never get the same port. */
export function portReservations(env = process.env): string {
  return env.LIQO_RIG_PORTS ?? join(tmpdir(), "liqo-rig-ports");
}

/** Reserves a port for this process: false when a live process holds it. A dead holder's is taken over. */
function reserve(dir: string, port: number): boolean {
  const file = join(dir, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = Number(readFileSync(file, "utf8"));
      if (holder === process.pid || isAlive(holder)) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

/**
 * A free port outside the ephemeral range (portWindow), checked by binding it on every address, and
 * reserved for this process so no other process of the machine is handed it while this one lives.
 * A process that binds it later could still come first; the components' health waits then fail
 * with their log, which says so.
 */
export async function freePort(o: { window?: { from: number; to: number }; dir?: string } = {}): Promise<number> {
  const { from, to } = o.window ?? portWindow();
  const dir = o.dir ?? portReservations();
  mkdirSync(dir, { recursive: true });
  for (let tries = 0; tries < 200; tries++) {
    const port = from + Math.floor(Math.random() * (to - from + 1));
    if (!reserve(dir, port)) continue;
    if (await portIsFree(port, "0.0.0.0")) return port;
  }
  throw new RigError(
    `no free port between ${from} and ${to} after 200 tries: what holds them? (ss -ltn; reservations in ${dir})`,
  );
}

/** Whether a port can be bound: on 127.0.0.1, or on every address with "0.0.0.0" (taken on any one fails it). */
export function portIsFree(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** Ports from a fixed base (stable kubeconfigs), each checked free; or freePort's. */
export async function allocatePorts(count: number, base?: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    if (base === undefined) {
      out.push(await freePort()); // never one this process was handed before
      continue;
    }
    const port = base + i;
    if (!(await portIsFree(port))) {
      throw new RigError(
        `port ${port} on 127.0.0.1 is taken; stop what uses it (ss -ltnp 'sport = :${port}') or pass another --base-port`,
      );
    }
    out.push(port);
  }
  return out;
}
