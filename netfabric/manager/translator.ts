// The IP translation a peering's reflectors use (core/reflection/abi.ts IpTranslator):
// backward = an address the remote cluster assigned (a pod IP) → the address we see;
// forward = an address we see (an endpoint) → the address the remote cluster must use.
// It answers synchronously inside a plugin call, where an exception would trap the plugin and
// quarantine the whole reflector, so a failure is reported and the address passed through.
import type { IpTranslator } from "../../core/reflection/abi.ts";
import { contains, IpamError, parseCidr, parseIpv4, type Ipam } from "../ipam/index.ts";

export interface TranslatorOptions {
  /** Told about every address that could not be translated (unknown peer, address out of range). */
  onError?: (error: Error, ip: string, direction: "forward" | "backward") => void;
  /**
   * Told when a forward translation may have handed out an external-CIDR address (an endpoint of a
   * third cluster), with a function that redoes it; the IPAM store persists it and the NatMapping.
   */
  onAllocate?: (replay: (ipam: Ipam) => void) => void;
}

/** `ipam` may be a function, so a translator outlives restores of the IPAM (the store's `ipam` getter). */
export function createIpTranslator(
  ipam: Ipam | (() => Ipam),
  remoteClusterId: string,
  options: TranslatorOptions = {},
): IpTranslator {
  const current = typeof ipam === "function" ? ipam : () => ipam;
  return (ip, direction) => {
    const state = current();
    try {
      if (direction === "backward") return state.remotePodIp(remoteClusterId, ip);
      const answer = state.endpointIpFor(remoteClusterId, ip);
      if (options.onAllocate && mayAllocate(state, remoteClusterId, ip)) {
        options.onAllocate((next) => void next.endpointIpFor(remoteClusterId, ip));
      }
      return answer;
    } catch (err) {
      const error = err instanceof Error ? err : new IpamError(String(err), "InvalidAddress", ip);
      options.onError?.(error, ip, direction);
      return ip;
    }
  };
}

/** Addresses outside our pod CIDR and the peer's own pod network get an external-CIDR address. */
function mayAllocate(ipam: Ipam, clusterId: string, ip: string): boolean {
  const address = parseIpv4(ip);
  if (contains(parseCidr(ipam.localPodCidr), address)) return false;
  const mapped = ipam.mappedNetworks(clusterId);
  return !mapped || !contains(parseCidr(mapped.podCidr), address);
}
