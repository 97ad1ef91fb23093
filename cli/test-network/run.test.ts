import { expect, test } from "bun:test";
import { addressSeenByPeer, namespaceFor } from "./run.ts";

test("our pod's address as the peer reaches it: remapped into localNATPodCIDR, or as is with None", () => {
  expect(addressSeenByPeer("10.200.3.7", "10.200.0.0/16", "10.1.0.0/16")).toBe("10.1.3.7");
  expect(addressSeenByPeer("10.100.0.5", "10.100.0.0/16", "None")).toBe("10.100.0.5");
});

test("test namespaces are valid DNS labels that say what they are", () => {
  const ns = namespaceFor(Date.parse("2026-11-25T18:00:00Z"));
  expect(ns).toMatch(/^liqo-netcheck-[a-z0-9]+$/);
  expect(ns.length).toBeLessThanOrEqual(63);
});
