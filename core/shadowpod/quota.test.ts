import { describe, expect, test } from "bun:test";
import type { Amounts } from "../peering/sharing/offer.ts";
import { exceeded, formatAmounts, parseDefaultRequests, QuotaLedger, withDefaultRequests } from "./quota.ts";

const a = (cpu: bigint, memory = 0n, pods = 1000n): Amounts => ({ cpu, memory, pods, "ephemeral-storage": 0n });

describe("QuotaLedger", () => {
  test("sums a consumer's ShadowPods, each once, apart from other consumers", () => {
    const l = new QuotaLedger();
    l.set("rome", "u1", a(500n));
    l.set("rome", "u2", a(250n));
    l.set("rome", "u2", a(300n)); // counted again with new amounts: replaced, not added
    l.set("turin", "u3", a(1000n));
    expect(l.used("rome")).toEqual(a(800n, 0n, 2000n));
    expect(l.used("rome", "u1")).toEqual(a(300n, 0n, 1000n));
    expect(l.used("milan")).toEqual(a(0n, 0n, 0n));
  });

  test("delete answers the consumer it was counted for, once", () => {
    const l = new QuotaLedger();
    l.set("rome", "u1", a(500n));
    expect(l.delete("u1")).toBe("rome");
    expect(l.delete("u1")).toBeUndefined();
    expect(l.used("rome")).toEqual(a(0n, 0n, 0n));
  });

  test("a UID moved to another consumer leaves the first", () => {
    const l = new QuotaLedger();
    l.set("rome", "u1", a(500n));
    l.set("turin", "u1", a(500n));
    expect(l.used("rome").cpu).toBe(0n);
    expect(l.used("turin").cpu).toBe(500n);
  });
});

describe("exceeded", () => {
  const hard = { cpu: "1", memory: "1Gi", pods: "3" };
  test("fits exactly: nothing", () => {
    expect(exceeded(a(500n, 0n, 2000n), a(500n), hard)).toEqual([]);
  });
  test("one line per resource past the offer, with the amounts", () => {
    expect(exceeded(a(800n, 0n, 3000n), a(500n), hard)).toEqual([
      "cpu: asks 500m with 800m of 1 in use",
      "pods: asks 1 with 3 of 3 in use",
    ]);
  });
  test("resources the offer does not state are not bounded", () => {
    expect(exceeded(a(10_000_000n, 0n, 0n), a(1_000_000n, 0n, 0n), { pods: "3" })).toEqual([]);
  });
  test("a malformed quantity in the offer bounds that resource to nothing", () => {
    expect(exceeded(a(0n, 0n, 0n), a(1n, 0n, 0n), { cpu: "lots" })).toEqual(["cpu: asks 1m with 0 of 0 in use"]);
  });
  test("what a pod does not ask for never exceeds, even past the offer", () => {
    expect(exceeded(a(2000n, 0n, 0n), a(0n, 0n, 1000n), { cpu: "1", pods: "10" })).toEqual([]);
  });
  test("an extended resource is bounded by the offer, and not offered at all when the offer does not state it", () => {
    const gpu = (n: bigint) => ({ ...a(0n, 0n, 0n), "nvidia.com/gpu": n * 1000n });
    const offer = { pods: "10", "nvidia.com/gpu": "2" };
    expect(exceeded(gpu(1n), gpu(1n), offer)).toEqual([]);
    expect(exceeded(gpu(2n), gpu(1n), offer)).toEqual(["nvidia.com/gpu: asks 1 with 2 of 2 in use"]);
    expect(exceeded(a(0n, 0n, 0n), { ...a(0n, 0n, 0n), "example.com/dongle": 1000n }, offer)).toEqual([
      "example.com/dongle: asks 1 with 0 of 0 in use",
    ]);
  });
  test("the ledger sums extended resources with the rest", () => {
    const l = new QuotaLedger();
    l.set("rome", "u1", { ...a(100n), "nvidia.com/gpu": 1000n });
    l.set("rome", "u2", { ...a(100n), "nvidia.com/gpu": 2000n });
    expect(l.used("rome")).toEqual({ ...a(200n, 0n, 2000n), "nvidia.com/gpu": 3000n });
  });
});

describe("recorded amounts", () => {
  test("in canonical quantities", () => {
    const x = { cpu: 1500n, memory: 128n * 1024n * 1024n * 1000n, pods: 1000n, "ephemeral-storage": 0n };
    expect(formatAmounts(x)).toEqual({ cpu: "1500m", memory: "128Mi", pods: "1", "ephemeral-storage": "0" });
    expect(formatAmounts({ ...x, "nvidia.com/gpu": 2000n, "example.com/dongle": 0n })).toEqual({
      cpu: "1500m",
      memory: "128Mi",
      pods: "1",
      "ephemeral-storage": "0",
      "nvidia.com/gpu": "2",
    });
  });
});

describe("default requests", () => {
  test("parsed from cpu=…,memory=…", () => {
    expect(parseDefaultRequests("cpu=100m,memory=128Mi")).toEqual({ cpu: "100m", memory: "128Mi" });
    expect(parseDefaultRequests(" memory=1Gi , cpu=1 ")).toEqual({ cpu: "1", memory: "1Gi" });
  });
  test.each([
    ["cpu=100m", "give both"],
    ["cpu=100m,memory", '"memory" is not cpu=<quantity> or memory=<quantity>'],
    ["gpu=1,cpu=1,memory=1Gi", '"gpu=1" is not cpu=<quantity>'],
    ["cpu=lots,memory=1Gi", '"lots" is not a Kubernetes quantity'],
    ["cpu=0,memory=1Gi", "cpu must be more than 0"],
    ["cpu=-1,memory=1Gi", "cpu must be more than 0"],
  ])("%p is refused: %s", (text, message) => {
    expect(() => parseDefaultRequests(text)).toThrow(message);
  });

  test("written into containers that state neither request nor limit; the others keep theirs", () => {
    const spec = withDefaultRequests(
      {
        initContainers: [{ name: "init" }],
        containers: [
          { name: "bare", image: "x" },
          { name: "own", resources: { requests: { cpu: "1" } } },
          { name: "limited", resources: { limits: { memory: "64Mi" } } },
        ],
      },
      { cpu: "100m", memory: "128Mi" },
    );
    expect(spec.initContainers![0]!.resources).toEqual({ requests: { cpu: "100m", memory: "128Mi" } });
    expect(spec.containers![0]!.resources).toEqual({ requests: { cpu: "100m", memory: "128Mi" } });
    expect(spec.containers![1]!.resources).toEqual({ requests: { cpu: "1", memory: "128Mi" } });
    // A limit alone is its request (Kubernetes defaulting): left as it is.
    expect(spec.containers![2]!.resources).toEqual({ limits: { memory: "64Mi" }, requests: { cpu: "100m" } });
  });
});
