// Which interface carries the node's VXLAN underlay. The chart leaves `route.vtepDevice` empty: the
// agent finds the interface holding the node's InternalIP (the --vtep-address the DaemonSet passes
// from status.hostIP), else the interface of the route to it, so VMs with ens*/enp* interfaces need
// no setting. An explicit name is kept, but must exist.
import type { IpAdapter } from "../os/ip.ts";

/** What `ip -json addr show` says about one interface (the fields used here). */
export interface LinkAddrs {
  ifname: string;
  addr_info?: { family?: string; local?: string }[];
}

export interface VtepDeviceInput {
  /** --vtep-device / route.vtepDevice; empty or undefined = detect. */
  explicit?: string;
  /** The node's InternalIP (--vtep-address). */
  address: string;
  links: readonly LinkAddrs[];
  /** `dev` of `ip route get <address>`, when there is one. */
  routeDev?: string;
}

export type VtepDeviceChoice =
  | { ok: true; dev: string; how: "explicit" | "address" | "route" | "fallback" }
  | { ok: false; reason: string };

/** The interface used when nothing better is found, as before detection existed. */
export const FALLBACK_VTEP_DEVICE = "eth0";
const FIX = "set route.vtepDevice in the chart's values (--vtep-device of `liqo route`), or leave it empty to detect";

function existing(links: readonly LinkAddrs[]): string {
  const names = links.map((l) => l.ifname);
  return names.length > 0 ? names.join(", ") : "none";
}

/** Pure: picks the underlay interface, or says why none fits and what to change. */
export function selectVtepDevice(i: VtepDeviceInput): VtepDeviceChoice {
  const explicit = i.explicit?.trim();
  if (explicit) {
    if (i.links.some((l) => l.ifname === explicit)) return { ok: true, dev: explicit, how: "explicit" };
    return {
      ok: false,
      reason: `interface ${JSON.stringify(explicit)} (route.vtepDevice) does not exist on this node; interfaces: ${existing(i.links)}; ${FIX}`,
    };
  }
  // Loopback never carries the overlay: a host route to a local address points at lo.
  const usable = (name: string | undefined) => name !== undefined && name !== "lo";
  const holder = i.links.find((l) => usable(l.ifname) && l.addr_info?.some((a) => a.local === i.address));
  if (holder) return { ok: true, dev: holder.ifname, how: "address" };
  if (usable(i.routeDev) && i.links.some((l) => l.ifname === i.routeDev))
    return { ok: true, dev: i.routeDev!, how: "route" };
  if (i.links.some((l) => l.ifname === FALLBACK_VTEP_DEVICE))
    return { ok: true, dev: FALLBACK_VTEP_DEVICE, how: "fallback" };
  return {
    ok: false,
    reason: `no interface holds or routes the node address ${i.address} and there is no ${FALLBACK_VTEP_DEVICE}; interfaces: ${existing(i.links)}; ${FIX}`,
  };
}

/** Reads the interfaces (and the route to the address) through `ip`, then selects. */
export async function detectVtepDevice(
  ip: IpAdapter,
  o: { explicit?: string; address: string },
): Promise<VtepDeviceChoice> {
  const links = await ip.json<LinkAddrs>(["addr", "show"]);
  let routeDev: string | undefined;
  if (!o.explicit?.trim()) {
    try {
      const [route] = await ip.json<{ dev?: string }>(["route", "get", o.address]);
      routeDev = route?.dev;
    } catch {
      // No route to the address: the other rules decide.
    }
  }
  return selectVtepDevice({ explicit: o.explicit, address: o.address, links, routeDev });
}
