// IP address management for one cluster: which networks are in use, how each peer's networks are
// remapped when they collide, and address translation for offloaded pods and reflected endpoints.
import {
  IpamError,
  externalCidrExhausted,
  outOfRange,
  overlapping,
  poolExhausted,
  remappingUnknown,
  unknownCluster,
} from "./errors.ts";
import { defaultPools, findFreeNetwork, isFree } from "./free-network.ts";
import {
  contains,
  formatCidr,
  formatIpv4,
  lastOf,
  overlaps,
  parseCidr,
  parseIpv4,
  remapIp,
  sameCidr,
  type Cidr,
} from "./ipv4.ts";
import { parseSnapshot, toSnapshot, type IpamSnapshot } from "./snapshot.ts";
import { externalReservedHosts, type ClusterEntry, type IpamState } from "./state.ts";

export interface IpamOptions {
  podCidr: string;
  serviceCidr: string;
  /** Allocated from the pools with the pod CIDR's size when omitted, as Liqo does. */
  externalCidr?: string;
  /** Networks used elsewhere (nodes, VPNs) that must never be given to a peer. */
  reserved?: readonly string[];
  pools?: readonly string[];
}

export interface RemoteNetworks {
  podCidr: string;
  externalCidr: string;
}

export interface MappedNetworks {
  /** Where the local cluster sees the remote pod CIDR. */
  podCidr: string;
  externalCidr: string;
  podRemapped: boolean;
  externalRemapped: boolean;
}

/** Liqo's NatMapping spec: endpoints reached through this cluster's external CIDR by one peer. */
export interface NatMappingSpec {
  clusterId: string;
  /** Our pod and external CIDRs as that peer sees them. */
  podCidr: string;
  externalCidr: string;
  /** Endpoint address (as seen locally) → address in our own external CIDR. */
  clusterMappings: Record<string, string>;
}

export interface UsedNetwork {
  cidr: string;
  owner: string;
}

export interface Ipam {
  mapRemoteNetworks(clusterId: string, remote: RemoteNetworks): MappedNetworks;
  /** Records how `clusterId` remapped our networks ("None" means it kept them). */
  setLocalNetworksSeenBy(clusterId: string, seen: { podCidr: string; externalCidr: string }): void;
  releaseCluster(clusterId: string): void;
  mappedNetworks(clusterId: string): MappedNetworks | undefined;
  /** Pod IP assigned by `clusterId` → the IP the local cluster sees (ShadowPod status). */
  remotePodIp(clusterId: string, ip: string): string;
  /** Endpoint IP as seen locally → the IP `clusterId` must use (EndpointSlice reflection). */
  endpointIpFor(clusterId: string, ip: string): string;
  releaseEndpointIp(clusterId: string, ip: string): void;
  natMappings(): NatMappingSpec[];
  usedNetworks(): UsedNetwork[];
  readonly localPodCidr: string;
  readonly localExternalCidr: string;
  snapshot(): IpamSnapshot;
}

export function createIpam(options: IpamOptions): Ipam {
  const pools = (options.pools ?? defaultPools).map((p) => parseCidr(p, "pool"));
  const pod = parseCidr(options.podCidr, "podCIDR");
  const service = parseCidr(options.serviceCidr, "serviceCIDR");
  const reserved = (options.reserved ?? []).map((r) => parseCidr(r, "reservedSubnets"));
  const fixed: [Cidr, string][] = [
    [pod, "podCIDR"],
    [service, "serviceCIDR"],
    ...reserved.map((r): [Cidr, string] => [r, "reserved subnet"]),
  ];
  for (let i = 0; i < fixed.length; i++) {
    for (let j = i + 1; j < fixed.length; j++) {
      const [a, aRole] = fixed[i]!;
      const [b, bRole] = fixed[j]!;
      if (overlaps(a, b)) throw overlapping(formatCidr(b), bRole, formatCidr(a), aRole);
    }
  }
  let external: Cidr;
  if (options.externalCidr !== undefined) {
    external = parseCidr(options.externalCidr, "externalCIDR");
    for (const [c, role] of fixed)
      if (overlaps(c, external)) throw overlapping(options.externalCidr, "externalCIDR", formatCidr(c), role);
  } else {
    const found = findFreeNetwork(
      pools,
      fixed.map(([c]) => c),
      pod.prefix,
    );
    if (!found) throw poolExhausted("local", `0.0.0.0/${pod.prefix}`, pools.map(formatCidr));
    external = found;
  }
  return ipamOver({
    pools,
    pod,
    service,
    external,
    reserved,
    clusters: new Map(),
    endpoints: new Map(),
    externalInUse: new Map(),
  });
}

/** Rebuilds an IPAM from a snapshot (e.g. the IpamStorage resource), validating every field. */
export function restoreIpam(snapshot: unknown): Ipam {
  return ipamOver(parseSnapshot(snapshot));
}

function ipamOver(state: IpamState): Ipam {
  // Lowest external address that may be free: allocation is lowest-first and deterministic.
  let externalHint = state.external.base + externalReservedHosts;

  const used = (except?: string): Cidr[] => {
    const list = [state.pod, state.service, state.external, ...state.reserved];
    for (const [id, c] of state.clusters) if (id !== except) list.push(c.pod, c.external);
    return list;
  };

  const cluster = (clusterId: string): ClusterEntry => {
    const c = state.clusters.get(clusterId);
    if (!c) throw unknownCluster(clusterId);
    return c;
  };

  const view = (c: ClusterEntry): MappedNetworks => ({
    podCidr: formatCidr(c.pod),
    externalCidr: formatCidr(c.external),
    podRemapped: !sameCidr(c.pod, c.remotePod),
    externalRemapped: !sameCidr(c.external, c.remoteExternal),
  });

  const remap = (clusterId: string, wanted: Cidr, taken: Cidr[]): Cidr => {
    const found = findFreeNetwork(state.pools, taken, wanted.prefix);
    if (!found) throw poolExhausted(clusterId, formatCidr(wanted), state.pools.map(formatCidr));
    return found;
  };

  const allocateExternal = (endpoint: number): number => {
    const last = lastOf(state.external);
    for (let ip = externalHint; ip <= last; ip++) {
      if (!state.externalInUse.has(ip)) {
        state.externalInUse.set(ip, endpoint);
        externalHint = ip + 1;
        return ip;
      }
    }
    throw externalCidrExhausted(formatCidr(state.external), formatIpv4(endpoint));
  };

  const forget = (clusterId: string, endpoint: number) => {
    const e = state.endpoints.get(endpoint);
    if (!e || !e.clusters.delete(clusterId) || e.clusters.size > 0) return;
    state.endpoints.delete(endpoint);
    state.externalInUse.delete(e.external);
    externalHint = Math.min(externalHint, e.external);
  };

  return {
    localPodCidr: formatCidr(state.pod),
    localExternalCidr: formatCidr(state.external),

    mapRemoteNetworks(clusterId, remote) {
      const remotePod = parseCidr(remote.podCidr, `podCIDR of cluster ${clusterId}`);
      const remoteExternal = parseCidr(remote.externalCidr, `externalCIDR of cluster ${clusterId}`);
      if (overlaps(remotePod, remoteExternal)) {
        throw overlapping(remote.externalCidr, `externalCIDR of cluster ${clusterId}`, remote.podCidr, "its podCIDR");
      }
      const existing = state.clusters.get(clusterId);
      if (existing && sameCidr(existing.remotePod, remotePod) && sameCidr(existing.remoteExternal, remoteExternal)) {
        return view(existing);
      }
      // A changed NetworkConfig is mapped afresh; the old networks are not counted as used.
      const taken = used(clusterId);
      // Networks that can be kept are claimed first, so a remap never lands on a network the
      // same peer could have kept.
      const keepPod = isFree(remotePod, taken);
      const keepExternal = isFree(remoteExternal, taken);
      if (keepPod) taken.push(remotePod);
      if (keepExternal) taken.push(remoteExternal);
      const podNet = keepPod ? remotePod : remap(clusterId, remotePod, taken);
      if (!keepPod) taken.push(podNet);
      const externalNet = keepExternal ? remoteExternal : remap(clusterId, remoteExternal, taken);
      const entry: ClusterEntry = { remotePod, remoteExternal, pod: podNet, external: externalNet };
      if (existing) {
        entry.natPod = existing.natPod;
        entry.natExternal = existing.natExternal;
      }
      state.clusters.set(clusterId, entry);
      return view(entry);
    },

    setLocalNetworksSeenBy(clusterId, seen) {
      const c = cluster(clusterId);
      const natPod =
        seen.podCidr === "None" ? state.pod : parseCidr(seen.podCidr, `podCIDR NAT reported by ${clusterId}`);
      const natExternal =
        seen.externalCidr === "None"
          ? state.external
          : parseCidr(seen.externalCidr, `externalCIDR NAT reported by ${clusterId}`);
      if (natPod.prefix !== state.pod.prefix || natExternal.prefix !== state.external.prefix) {
        throw new IpamError(
          `cluster ${clusterId} reported our networks as ${seen.podCidr} and ${seen.externalCidr}, but ours are ` +
            `${formatCidr(state.pod)} and ${formatCidr(state.external)}; a remap must keep the prefix length, fix the peer's IPAM`,
          "InvalidCidr",
          `${seen.podCidr}, ${seen.externalCidr}`,
        );
      }
      c.natPod = natPod;
      c.natExternal = natExternal;
    },

    releaseCluster(clusterId) {
      if (!state.clusters.has(clusterId)) return;
      for (const [endpoint, e] of [...state.endpoints]) if (e.clusters.has(clusterId)) forget(clusterId, endpoint);
      state.clusters.delete(clusterId);
    },

    mappedNetworks(clusterId) {
      const c = state.clusters.get(clusterId);
      return c && view(c);
    },

    remotePodIp(clusterId, ipText) {
      const c = cluster(clusterId);
      const ip = parseIpv4(ipText, `pod IP from cluster ${clusterId}`);
      if (!contains(c.remotePod, ip))
        throw outOfRange(ipText, formatCidr(c.remotePod), `the podCIDR of cluster ${clusterId}`);
      return formatIpv4(remapIp(ip, c.remotePod, c.pod));
    },

    endpointIpFor(clusterId, ipText) {
      const c = cluster(clusterId);
      const ip = parseIpv4(ipText, `endpoint IP reflected to ${clusterId}`);
      if (!c.natPod || !c.natExternal) throw remappingUnknown(clusterId);
      if (contains(state.pod, ip)) return formatIpv4(remapIp(ip, state.pod, c.natPod));
      // The destination's own pod: give it back its real address instead of hairpinning through us.
      if (contains(c.pod, ip)) return formatIpv4(remapIp(ip, c.pod, c.remotePod));
      let e = state.endpoints.get(ip);
      if (!e) {
        e = { external: allocateExternal(ip), clusters: new Set() };
        state.endpoints.set(ip, e);
      }
      e.clusters.add(clusterId);
      return formatIpv4(remapIp(e.external, state.external, c.natExternal));
    },

    releaseEndpointIp(clusterId, ipText) {
      forget(clusterId, parseIpv4(ipText, `endpoint IP released for ${clusterId}`));
    },

    natMappings() {
      const out: NatMappingSpec[] = [];
      for (const [clusterId, c] of [...state.clusters].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        const clusterMappings: Record<string, string> = {};
        for (const [endpoint, e] of [...state.endpoints].sort(([a], [b]) => a - b)) {
          if (e.clusters.has(clusterId)) clusterMappings[formatIpv4(endpoint)] = formatIpv4(e.external);
        }
        out.push({
          clusterId,
          podCidr: formatCidr(c.natPod ?? state.pod),
          externalCidr: formatCidr(c.natExternal ?? state.external),
          clusterMappings,
        });
      }
      return out;
    },

    usedNetworks() {
      const out: UsedNetwork[] = [
        { cidr: formatCidr(state.pod), owner: "podCIDR" },
        { cidr: formatCidr(state.service), owner: "serviceCIDR" },
        { cidr: formatCidr(state.external), owner: "externalCIDR" },
        ...state.reserved.map((r) => ({ cidr: formatCidr(r), owner: "reserved" })),
      ];
      for (const [id, c] of state.clusters) {
        out.push(
          { cidr: formatCidr(c.pod), owner: `podCIDR of ${id}` },
          { cidr: formatCidr(c.external), owner: `externalCIDR of ${id}` },
        );
      }
      return out;
    },

    snapshot: () => toSnapshot(state),
  };
}
