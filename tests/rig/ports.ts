import { readFileSync } from "node:fs";
import { createServer } from "node:net";
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

const handedOut = new Set<number>();

/**
 * A free loopback port outside the ephemeral range (portWindow), checked by binding it, and never
 * one this process has handed out before. Another process could still take it before the caller
 * binds it; the components' health waits then fail with their log, which says so.
 */
export async function freePort(): Promise<number> {
  const { from, to } = portWindow();
  for (let tries = 0; tries < 200; tries++) {
    const port = from + Math.floor(Math.random() * (to - from + 1));
    if (handedOut.has(port) || !(await portIsFree(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new RigError(`no free port on 127.0.0.1 between ${from} and ${to} after 200 tries: what holds them? (ss -ltn)`);
}

export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/** Ports from a fixed base (stable kubeconfigs), each checked free; or kernel-chosen ones. */
export async function allocatePorts(count: number, base?: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    if (base === undefined) {
      let port: number;
      do port = await freePort();
      while (out.includes(port));
      out.push(port);
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
