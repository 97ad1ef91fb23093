// Test shorthand over the IPAM's IPv4 helpers.
import { contains, parseCidr, parseIpv4 } from "../../netfabric/ipam/index.ts";

export function inCidr(ip: string, cidr: string): boolean {
  return contains(parseCidr(cidr), parseIpv4(ip));
}
