import { expect, test } from "bun:test";
import { strategyViolation } from "./strategy-enforcer.ts";

const virtual = new Set(["liqo-milan"]);

test("Local forbids virtual nodes only", () => {
  expect(strategyViolation("Local", "liqo-milan", virtual)).toContain("virtual node liqo-milan");
  expect(strategyViolation("Local", "worker-1", virtual)).toBeUndefined();
});

test("Remote forbids physical nodes only", () => {
  expect(strategyViolation("Remote", "worker-1", virtual)).toContain("physical node worker-1");
  expect(strategyViolation("Remote", "liqo-milan", virtual)).toBeUndefined();
});

test("LocalAndRemote forbids nothing, and an unscheduled pod never violates", () => {
  expect(strategyViolation("LocalAndRemote", "liqo-milan", virtual)).toBeUndefined();
  expect(strategyViolation("LocalAndRemote", "worker-1", virtual)).toBeUndefined();
  expect(strategyViolation("Local", undefined, virtual)).toBeUndefined();
  expect(strategyViolation("Remote", undefined, virtual)).toBeUndefined();
});
