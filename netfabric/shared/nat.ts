// Addresses across a NAT, as the manager, the gateway and the overlay each read them: a peer's view
// of our networks ("None" when it did not remap them) and the NatMappings' endpoint addresses.
import { formatIpv4, parseCidr, parseIpv4, remapIp } from "../ipam/index.ts";

/** The network as remapped, or our own when the peer did not remap it ("None" or empty). */
export function natOf(nat: string, own: string): string {
  return nat === "None" || nat === "" ? own : nat;
}

/** The reverse, for the gateway: endpoint → address in our own external CIDR (netfabric/gateway's PeerTunnel.natMappings). */
export function gatewayNatMappings(
  spec: { externalCIDR: string; clusterMappings: Record<string, string> },
  localExternalCidr: string,
): Record<string, string> {
  const own = parseCidr(localExternalCidr, "local externalCIDR");
  const seen = parseCidr(spec.externalCIDR, "NatMapping externalCIDR");
  const out: Record<string, string> = {};
  for (const [endpoint, external] of Object.entries(spec.clusterMappings))
    out[endpoint] = formatIpv4(remapIp(parseIpv4(external), seen, own));
  return out;
}
