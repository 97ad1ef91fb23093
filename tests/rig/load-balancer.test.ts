import { expect, test } from "bun:test";
import { nextAddress } from "./load-balancer.ts";

test("the rig's load balancer hands out .200 and up in the rig's /24, skipping what is taken, and none past its 50", () => {
  expect(nextAddress("172.31.3", new Set())).toBe("172.31.3.200");
  expect(nextAddress("172.31.3", new Set(["172.31.3.200", "172.31.3.202"]))).toBe("172.31.3.201");
  const all = new Set(Array.from({ length: 50 }, (_, i) => `172.31.3.${200 + i}`));
  expect(nextAddress("172.31.3", all)).toBeUndefined();
});
