import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ephemeralLow, freePort, portIsFree, portWindow } from "./ports.ts";

test("freePort hands out ports below the kernel's ephemeral range and the NodePort range, free and never twice", async () => {
  const low = ephemeralLow();
  const ports = await Promise.all(Array.from({ length: 50 }, () => freePort()));
  expect(new Set(ports).size).toBe(50);
  for (const port of ports) {
    // An outgoing connection's local port comes from the ephemeral range: it can never be one of these.
    expect(port).toBeLessThan(Math.min(low, 30000));
    expect(port).toBeGreaterThan(1024);
  }
  expect(await portIsFree(ports[0]!, "0.0.0.0")).toBe(true);
});

test("a port another live process reserved is never handed out; a dead one's is taken over; one bound on any address is skipped", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ports-"));
  try {
    const port = await freePort({ dir });
    const window = { from: port, to: port };
    rmSync(join(dir, String(port)));
    // pid 1 lives as long as the machine.
    writeFileSync(join(dir, String(port)), "1");
    await expect(freePort({ window, dir })).rejects.toThrow(/no free port between .* \(ss -ltn; reservations in/);
    const gone = Bun.spawnSync(["true"]).pid;
    writeFileSync(join(dir, String(port)), String(gone));
    expect(await freePort({ window, dir })).toBe(port);
    expect(readFileSync(join(dir, String(port)), "utf8")).toBe(String(process.pid));
    // Held by this process now: not handed out again.
    await expect(freePort({ window, dir })).rejects.toThrow(/no free port/);

    // Listening on another address only (127.0.0.2): 127.0.0.1 is free, but a wildcard bind (what an
    // API server on 0.0.0.0 does) would fail, so the port is not handed out.
    rmSync(join(dir, String(port)));
    const srv = createServer();
    await new Promise<void>((resolve) => srv.listen(port, "127.0.0.2", () => resolve()));
    try {
      expect(await portIsFree(port, "127.0.0.1")).toBe(true);
      expect(await portIsFree(port, "0.0.0.0")).toBe(false);
      await expect(freePort({ window, dir })).rejects.toThrow(/no free port/);
    } finally {
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the window follows ip_local_port_range, and stays below 30000 and above 1024", () => {
  expect(ephemeralLow("32768\t60999\n")).toBe(32768);
  expect(ephemeralLow("10000 20000")).toBe(10000);
  expect(ephemeralLow("")).toBe(32768);
  expect(ephemeralLow("garbage")).toBe(32768);
  expect(portWindow(32768)).toEqual({ from: 20000, to: 29999 });
  expect(portWindow(49152)).toEqual({ from: 20000, to: 29999 });
  expect(portWindow(10000)).toEqual({ from: 1025, to: 9999 });
  expect(portWindow(3000)).toEqual({ from: 1025, to: 2999 });
});
