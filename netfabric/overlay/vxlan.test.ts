import { describe, expect, test } from "bun:test";
import { planVxlan, type VxlanObserved, type VxlanSpec } from "./vxlan.ts";

const spec: VxlanSpec = {
  name: "liqo.vxlan",
  vni: 7,
  localIp: "198.19.0.1",
  dev: "eth0",
  address: "240.7.0.1/24",
  remoteVteps: ["198.19.0.2"],
  routes: [{ to: "10.201.0.0/16", via: "240.7.0.2" }],
};
const inSync: VxlanObserved = {
  link: { kind: "vxlan", vni: 7, localIp: "198.19.0.1", port: 4789, mtu: 1450, up: true },
  addresses: ["240.7.0.1/24"],
  fdbDsts: ["198.19.0.2"],
  routes: [{ to: "10.201.0.0/16", via: "240.7.0.2" }],
};

describe("planVxlan", () => {
  test("creates everything from nothing", () => {
    expect(planVxlan(spec, { addresses: [], fdbDsts: [], routes: [] })).toEqual({
      ip: [
        "link add liqo.vxlan type vxlan id 7 local 198.19.0.1 dstport 4789 dev eth0 nolearning",
        "link set liqo.vxlan mtu 1450 up",
        "addr replace 240.7.0.1/24 dev liqo.vxlan",
        "route replace 10.201.0.0/16 via 240.7.0.2 dev liqo.vxlan onlink",
      ],
      bridge: [["fdb", "append", "00:00:00:00:00:00", "dev", "liqo.vxlan", "dst", "198.19.0.2"]],
    });
  });

  test("does nothing when in sync", () => {
    expect(planVxlan(spec, inSync)).toEqual({ ip: [], bridge: [] });
  });

  test.each([
    ["wrong VNI", { link: { ...inSync.link!, vni: 8 } }, "link del liqo.vxlan"],
    ["wrong local address", { link: { ...inSync.link!, localIp: "1.1.1.1" } }, "link del liqo.vxlan"],
    ["not vxlan", { link: { ...inSync.link!, kind: "veth" } }, "link del liqo.vxlan"],
    ["down", { link: { ...inSync.link!, up: false } }, "link set liqo.vxlan mtu 1450 up"],
    ["stray address", { addresses: ["240.7.0.1/24", "240.7.0.9/24"] }, "addr del 240.7.0.9/24 dev liqo.vxlan"],
    [
      "stale route",
      { routes: [...inSync.routes, { to: "10.99.0.0/16", via: "240.7.0.5" }] },
      "route del 10.99.0.0/16 dev liqo.vxlan",
    ],
  ])("%s", (_name, patch, first) => {
    expect(planVxlan(spec, { ...inSync, ...patch }).ip[0]).toBe(first);
  });

  test("a fixed MAC is set at creation and repaired live", () => {
    expect(planVxlan({ ...spec, mac: "02:4c:c6:13:00:01" }, { addresses: [], fdbDsts: [], routes: [] }).ip[0]).toBe(
      "link add liqo.vxlan address 02:4c:c6:13:00:01 type vxlan id 7 local 198.19.0.1 dstport 4789 dev eth0 nolearning",
    );
    expect(
      planVxlan(
        { ...spec, mac: "02:4c:c6:13:00:01" },
        { ...inSync, link: { ...inSync.link!, mac: "aa:bb:cc:dd:ee:ff" } },
      ).ip,
    ).toEqual(["link set liqo.vxlan address 02:4c:c6:13:00:01"]);
    expect(
      planVxlan(
        { ...spec, mac: "02:4c:c6:13:00:01" },
        { ...inSync, link: { ...inSync.link!, mac: "02:4c:c6:13:00:01" } },
      ).ip,
    ).toEqual([]);
  });
  test("FDB entries follow the VTEP list", () => {
    expect(planVxlan({ ...spec, remoteVteps: ["198.19.0.3"] }, inSync).bridge).toEqual([
      ["fdb", "append", "00:00:00:00:00:00", "dev", "liqo.vxlan", "dst", "198.19.0.3"],
      ["fdb", "del", "00:00:00:00:00:00", "dev", "liqo.vxlan", "dst", "198.19.0.2"],
    ]);
  });
});
