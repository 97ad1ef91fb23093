import { describe, expect, test } from "bun:test";
import { findFreeNetwork } from "./free-network.ts";
import { formatCidr, parseCidr } from "./ipv4.ts";

const cidrs = (list: readonly string[]) => list.map((c) => parseCidr(c));

describe("findFreeNetwork", () => {
  test.each([
    { pools: ["10.0.0.0/8"], used: [], prefix: 16, want: "10.0.0.0/16" },
    { pools: ["10.0.0.0/8"], used: ["10.0.0.0/16"], prefix: 16, want: "10.1.0.0/16" },
    // A small used network still blocks the whole aligned block around it.
    { pools: ["10.0.0.0/8"], used: ["10.0.3.0/24"], prefix: 16, want: "10.1.0.0/16" },
    // A big used network is skipped in one step.
    { pools: ["10.0.0.0/8"], used: ["10.0.0.0/9"], prefix: 16, want: "10.128.0.0/16" },
    { pools: ["10.0.0.0/8", "172.16.0.0/12"], used: ["10.0.0.0/8"], prefix: 16, want: "172.16.0.0/16" },
    // Pools smaller than the wanted network are skipped.
    { pools: ["192.168.0.0/16", "10.0.0.0/8"], used: [], prefix: 12, want: "10.0.0.0/12" },
    { pools: ["10.0.0.0/30"], used: ["10.0.0.1/32"], prefix: 31, want: "10.0.0.2/31" },
    { pools: ["10.0.0.0/30"], used: ["10.0.0.0/31", "10.0.0.2/31"], prefix: 31, want: undefined },
    { pools: ["255.255.255.0/24"], used: ["255.255.255.0/25"], prefix: 25, want: "255.255.255.128/25" },
  ])("$pools minus $used, /$prefix → $want", ({ pools, used, prefix, want }) => {
    const got = findFreeNetwork(cidrs(pools), cidrs(used), prefix);
    expect(got && formatCidr(got)).toBe(want);
  });
});
