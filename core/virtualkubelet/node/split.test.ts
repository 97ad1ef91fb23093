import { describe, expect, test } from "bun:test";
import { splitOffer } from "./split.ts";

const offer = { cpu: "6", memory: "12Gi", pods: "110" };

describe("splitOffer", () => {
  test("each node takes what it asks, in order; the peering's node keeps the rest", () => {
    const s = splitOffer(offer, [
      { name: "a", asks: { cpu: "2", memory: "4Gi", pods: "20" }, running: false },
      { name: "b", asks: { cpu: "1500m", memory: "1Gi" }, running: true },
    ]);
    expect(s.given.get("a")).toEqual({ cpu: "2", memory: "4Gi", pods: "20" });
    expect(s.given.get("b")).toEqual({ cpu: "1500m", memory: "1Gi" });
    expect(s.rest).toEqual({ cpu: "2500m", memory: "7Gi", pods: "90" });
    expect(s.refused.size).toBe(0);
  });

  test("a new node asking for more than is left is refused, naming what it asked and what is left; the rest is untouched", () => {
    const s = splitOffer(
      offer,
      [
        { name: "a", asks: { cpu: "4" }, running: true },
        { name: "b", asks: { cpu: "3", pods: "10" }, running: false },
        { name: "c", asks: { cpu: "1" }, running: false },
      ],
      "milan's offer",
    );
    expect(s.given.has("b")).toBe(false);
    expect(s.refused.get("b")).toBe("asks cpu=3 but cpu=2 is left of milan's offer (cpu=6,memory=12Gi,pods=110)");
    // A later, smaller node still fits in what b did not take.
    expect(s.given.get("c")).toEqual({ cpu: "1" });
    expect(s.rest).toEqual({ cpu: "1", memory: "12Gi", pods: "110" });
  });

  test("a resource the offer does not have is refused for a new node", () => {
    const s = splitOffer(offer, [{ name: "gpu", asks: { "nvidia.com/gpu": "1" }, running: false }]);
    expect(s.refused.get("gpu")).toContain("asks nvidia.com/gpu=1 but nvidia.com/gpu=0 is left");
    expect(s.rest).toEqual({ cpu: "6", memory: "12Gi", pods: "110" });
  });

  test("when the offer shrinks, running nodes are capped in order (never refused) and the peering's node gets nothing", () => {
    const s = splitOffer({ cpu: "3", memory: "2Gi" }, [
      { name: "a", asks: { cpu: "2", memory: "1Gi" }, running: true },
      { name: "b", asks: { cpu: "2", memory: "4Gi" }, running: true },
    ]);
    expect(s.given.get("a")).toEqual({ cpu: "2", memory: "1Gi" });
    expect(s.given.get("b")).toEqual({ cpu: "1", memory: "1Gi" });
    expect(s.rest).toEqual({ cpu: "0", memory: "0" });
    expect(s.refused.size).toBe(0);
  });

  test("a node asking exactly what is left fits; bad quantities throw naming the node", () => {
    expect(splitOffer({ cpu: "1" }, [{ name: "a", asks: { cpu: "1000m" }, running: false }]).rest).toEqual({
      cpu: "0",
    });
    expect(() => splitOffer(offer, [{ name: "a", asks: { cpu: "lots" }, running: false }])).toThrow("a: cpu");
  });
});
