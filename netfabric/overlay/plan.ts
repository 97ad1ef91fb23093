// The overlay's addressing and the two ends' VXLAN specs, derived from the API: every node (and
// the gateway) gets an overlay address from its underlay address (240.0.0.0/8 + the low three
// bytes, as Liqo's overlay does), nodes route the remote clusters' networks (as we see them) to
// the gateway's overlay address, and the gateway routes each node's pod CIDR back to that node.
import type { TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import { contains, parseCidr, parseIpv4 } from "../ipam/index.ts";
import { natOf } from "../shared/nat.ts";
import type { VxlanSpec } from "./vxlan.ts";

export const VXLAN_NAME = "liqo.vxlan";
export const VXLAN_VNI = 200;
/** The route agent writes its VTEP address on its Node; the gateway reads them. */
export const NODE_VTEP_ANNOTATION = "net.liqo.io/vtep";
/** The gateway leader writes its VTEP address on the gateway Service; route agents read it. */
export const GATEWAY_VTEP_ANNOTATION = "net.liqo.io/gateway-vtep";

export function overlayIp(vtepIp: string): string {
  const n = parseIpv4(vtepIp, "VTEP address");
  return `240.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** The peers' networks as this cluster sees them: what a node must send to the gateway. */
export function remoteNetworks(teps: TunnelEndpoint[]): string[] {
  const out = new Set<string>();
  for (const t of teps) {
    for (const cidr of [
      natOf(t.spec.remoteNATPodCIDR, t.spec.remotePodCIDR),
      natOf(t.spec.remoteNATExternalCIDR, t.spec.remoteExternalCIDR),
    ]) {
      try {
        parseCidr(cidr);
        out.add(cidr);
      } catch {
        /* reported by the gateway on the TunnelEndpoint */
      }
    }
  }
  return [...out].sort();
}

/** A locally administered MAC derived from the VTEP address: stable across restarts and failovers. */
export function overlayMac(vtepIp: string): string {
  const n = parseIpv4(vtepIp, "VTEP address");
  return ["02", "4c", ...[24, 16, 8, 0].map((shift) => ((n >>> shift) & 255).toString(16).padStart(2, "0"))].join(":");
}

export interface OverlayEnd {
  vtepIp: string;
  dev: string;
  vni?: number;
  mtu?: number;
}

export function nodeVxlan(self: OverlayEnd, gatewayVtep: string | undefined, teps: TunnelEndpoint[]): VxlanSpec {
  const via = gatewayVtep ? overlayIp(gatewayVtep) : undefined;
  return {
    name: VXLAN_NAME,
    vni: self.vni ?? VXLAN_VNI,
    localIp: self.vtepIp,
    dev: self.dev,
    mtu: self.mtu,
    address: `${overlayIp(self.vtepIp)}/8`,
    mac: overlayMac(self.vtepIp),
    remoteVteps: gatewayVtep && gatewayVtep !== self.vtepIp ? [gatewayVtep] : [],
    routes: via ? remoteNetworks(teps).map((to) => ({ to, via })) : [],
  };
}

export interface NodeVtep {
  vtepIp: string;
  podCidr?: string;
}

/** Whether `ip` lies in `cidr` (false for anything malformed). */
function within(ip: string, cidr: string): boolean {
  try {
    return contains(parseCidr(cidr), parseIpv4(ip));
  } catch {
    return false;
  }
}

export function gatewayVxlan(self: OverlayEnd, nodes: NodeVtep[]): VxlanSpec {
  const others = nodes.filter((n) => n.vtepIp !== self.vtepIp);
  return {
    name: VXLAN_NAME,
    vni: self.vni ?? VXLAN_VNI,
    localIp: self.vtepIp,
    dev: self.dev,
    mtu: self.mtu,
    address: `${overlayIp(self.vtepIp)}/8`,
    mac: overlayMac(self.vtepIp),
    remoteVteps: [...new Set(others.map((n) => n.vtepIp))].sort(),
    // The gateway pod's own node's pod CIDR holds its own address: that node's pods and its bridge
    // address (the source kube-proxy gives NodePort packets it hands to a pod on the same node) are
    // reached over the pod's own interface. A route through the overlay would replace the connected
    // route, and WireGuard's answers to the NodePort would leave over VXLAN past the NAT that expects them.
    routes: others
      .filter((n) => n.podCidr && !within(self.vtepIp, n.podCidr))
      .map((n) => ({ to: n.podCidr!, via: overlayIp(n.vtepIp) }))
      .sort((a, b) => a.to.localeCompare(b.to)),
  };
}
