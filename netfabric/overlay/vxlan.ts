// The in-cluster overlay: a VXLAN interface per node towards the gateway (and back), with one
// all-zero FDB entry per remote VTEP (head-end replication, no multicast) and routes for the
// remote clusters' networks through the peer's overlay address.
import type { IpAdapter } from "../os/ip.ts";

export interface VxlanSpec {
  name: string;
  vni: number;
  /** Underlay address of this VTEP and the device it lives on. */
  localIp: string;
  dev: string;
  port?: number;
  mtu?: number;
  /** Fixed MAC of the interface. A replacement at the same VTEP (a gateway failover) keeps it, so
   * the other ends' neighbour entries stay valid instead of pointing at a dead MAC for ~30 s. */
  mac?: string;
  /** Overlay address of this end, e.g. 240.1.0.1/24. */
  address: string;
  /** Underlay addresses of the other VTEPs. */
  remoteVteps: string[];
  /** Networks reached through another overlay address. */
  routes: { to: string; via: string }[];
}

/** What the adapter reads back, reduced to the fields the plan compares. */
export interface VxlanObserved {
  link?: {
    vni: number;
    localIp?: string;
    port: number;
    dev?: string;
    mtu: number;
    up: boolean;
    kind: string;
    mac?: string;
  };
  addresses: string[];
  fdbDsts: string[];
  routes: { to: string; via?: string }[];
}

const zeroMac = "00:00:00:00:00:00";

/** Pure: the `ip -batch` lines and `bridge` commands that turn `observed` into `spec`. */
export function planVxlan(spec: VxlanSpec, observed: VxlanObserved): { ip: string[]; bridge: string[][] } {
  const ip: string[] = [];
  const bridge: string[][] = [];
  const port = spec.port ?? 4789;
  const link = observed.link;
  // VNI, local address and port cannot be changed on a live vxlan link: recreate it.
  const recreate =
    !link || link.kind !== "vxlan" || link.vni !== spec.vni || link.localIp !== spec.localIp || link.port !== port;
  if (recreate) {
    if (link) ip.push(`link del ${spec.name}`);
    ip.push(
      `link add ${spec.name}${spec.mac ? ` address ${spec.mac}` : ""} type vxlan id ${spec.vni} local ${spec.localIp} dstport ${port} dev ${spec.dev} nolearning`,
    );
  } else if (spec.mac && link!.mac !== spec.mac) {
    ip.push(`link set ${spec.name} address ${spec.mac}`);
  }
  const mtu = spec.mtu ?? 1450;
  if (recreate || link!.mtu !== mtu || !link!.up) ip.push(`link set ${spec.name} mtu ${mtu} up`);
  const addresses = recreate ? [] : observed.addresses;
  if (!addresses.includes(spec.address)) ip.push(`addr replace ${spec.address} dev ${spec.name}`);
  for (const a of addresses) if (a !== spec.address) ip.push(`addr del ${a} dev ${spec.name}`);
  const routes = recreate ? [] : observed.routes;
  for (const r of spec.routes) {
    if (!routes.some((o) => o.to === r.to && o.via === r.via))
      ip.push(`route replace ${r.to} via ${r.via} dev ${spec.name} onlink`);
  }
  for (const o of routes) {
    if (o.via && !spec.routes.some((r) => r.to === o.to)) ip.push(`route del ${o.to} dev ${spec.name}`);
  }
  const fdb = recreate ? [] : observed.fdbDsts;
  for (const dst of spec.remoteVteps)
    if (!fdb.includes(dst)) bridge.push(["fdb", "append", zeroMac, "dev", spec.name, "dst", dst]);
  for (const dst of fdb)
    if (!spec.remoteVteps.includes(dst)) bridge.push(["fdb", "del", zeroMac, "dev", spec.name, "dst", dst]);
  return { ip, bridge };
}

interface LinkJson {
  ifname: string;
  mtu: number;
  flags: string[];
  address?: string;
  linkinfo?: { info_kind: string; info_data?: { id: number; local?: string; port: number } };
  addr_info?: { family: string; local: string; prefixlen: number; scope: string }[];
}

export async function observeVxlan(ip: IpAdapter, name: string): Promise<VxlanObserved> {
  const links = await ip.json<LinkJson>(["-d", "link", "show"]);
  const l = links.find((x) => x.ifname === name);
  if (!l) return { addresses: [], fdbDsts: [], routes: [] };
  const [addr] = await ip.json<LinkJson>(["addr", "show", "dev", name]);
  const fdb = await ip.bridgeJson<{ mac: string; dst?: string }>(["fdb", "show", "dev", name]);
  const routes = await ip.json<{ dst: string; gateway?: string; protocol?: string }>(["route", "show", "dev", name]);
  const data = l.linkinfo?.info_data;
  return {
    link: {
      kind: l.linkinfo?.info_kind ?? "unknown",
      vni: data?.id ?? -1,
      localIp: data?.local,
      port: data?.port ?? -1,
      mtu: l.mtu,
      up: l.flags.includes("UP"),
      mac: l.address,
    },
    addresses: (addr?.addr_info ?? []).filter((a) => a.family === "inet").map((a) => `${a.local}/${a.prefixlen}`),
    fdbDsts: fdb.filter((f) => f.mac === zeroMac && f.dst).map((f) => f.dst!),
    // Kernel routes (the connected overlay subnet) belong to the address, not to us.
    routes: routes.filter((r) => r.protocol !== "kernel").map((r) => ({ to: r.dst, via: r.gateway })),
  };
}

/** Level-triggered: reads the interface, applies only the difference, returns what it changed. */
export async function reconcileVxlan(ip: IpAdapter, spec: VxlanSpec): Promise<string[]> {
  const plan = planVxlan(spec, await observeVxlan(ip, spec.name));
  await ip.batch(plan.ip);
  for (const args of plan.bridge) await ip.bridge(args);
  return [...plan.ip, ...plan.bridge.map((a) => a.join(" "))];
}
