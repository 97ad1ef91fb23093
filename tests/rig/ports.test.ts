import { expect, test } from "bun:test";
import { ephemeralLow, freePort, portIsFree, portWindow } from "./ports.ts";

test("freePort hands out loopback ports below the kernel's ephemeral range and the NodePort range, free and never twice", async () => {
  const low = ephemeralLow();
  const ports = await Promise.all(Array.from({ length: 50 }, () => freePort()));
  expect(new Set(ports).size).toBe(50);
  for (const port of ports) {
    // An outgoing connection's local port comes from the ephemeral range: it can never be one of these.
    expect(port).toBeLessThan(Math.min(low, 30000));
    expect(port).toBeGreaterThan(1024);
  }
  expect(await portIsFree(ports[0]!)).toBe(true);
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
