import { describe, expect, test } from "bun:test";
import { selectVtepDevice, type LinkAddrs } from "./device.ts";

const link = (ifname: string, ...locals: string[]): LinkAddrs => ({
  ifname,
  addr_info: locals.map((local) => ({ family: "inet", local })),
});
const vm = [link("lo", "127.0.0.1"), link("ens5", "10.0.1.7"), link("cni0", "10.244.0.1")];

describe("selectVtepDevice", () => {
  const cases: [string, Parameters<typeof selectVtepDevice>[0], string | RegExp][] = [
    ["the interface holding the address", { address: "10.0.1.7", links: vm }, "ens5/address"],
    ["the address wins over the route", { address: "10.0.1.7", links: vm, routeDev: "cni0" }, "ens5/address"],
    ["an empty explicit name detects", { explicit: " ", address: "10.0.1.7", links: vm }, "ens5/address"],
    ["an explicit name that exists", { explicit: "cni0", address: "10.0.1.7", links: vm }, "cni0/explicit"],
    [
      "the route's interface when no interface holds the address",
      { address: "192.0.2.9", links: vm, routeDev: "ens5" },
      "ens5/route",
    ],
    [
      "a route through lo is no answer",
      { address: "192.0.2.9", links: [...vm, link("eth0")], routeDev: "lo" },
      "eth0/fallback",
    ],
    ["an address only on lo is no answer", { address: "127.0.0.1", links: [...vm, link("eth0")] }, "eth0/fallback"],
    [
      "a route's interface that is not listed is no answer",
      { address: "192.0.2.9", links: [link("eth0")], routeDev: "gone" },
      "eth0/fallback",
    ],
    [
      "a wrong explicit name names it, the interfaces and the value to change",
      { explicit: "eth0", address: "10.0.1.7", links: vm },
      /^interface "eth0" \(route\.vtepDevice\) does not exist on this node; interfaces: lo, ens5, cni0; set route\.vtepDevice/,
    ],
    [
      "nothing fits and no eth0",
      { address: "192.0.2.9", links: vm },
      /^no interface holds or routes the node address 192\.0\.2\.9 and there is no eth0; interfaces: lo, ens5, cni0; set route\.vtepDevice/,
    ],
  ];
  for (const [name, input, want] of cases)
    test(name, () => {
      const got = selectVtepDevice(input);
      if (typeof want === "string") expect(got.ok ? `${got.dev}/${got.how}` : got.reason).toBe(want);
      else expect(got.ok ? `${got.dev}/${got.how}` : got.reason).toMatch(want);
    });
});
