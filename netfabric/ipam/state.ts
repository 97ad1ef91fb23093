// The IPAM's in-memory state, parsed once so translations are integer arithmetic only.
import type { Cidr } from "./ipv4.ts";

export interface ClusterEntry {
  /** The remote cluster's networks as it declared them in its NetworkConfig. */
  remotePod: Cidr;
  remoteExternal: Cidr;
  /** Where this cluster sees them: equal to the remote ones unless remapped. */
  pod: Cidr;
  external: Cidr;
  /** How the remote cluster sees *our* pod and external CIDRs; unknown until it reports back. */
  natPod?: Cidr;
  natExternal?: Cidr;
}

export interface EndpointEntry {
  /** Address given to the endpoint inside the local external CIDR. */
  external: number;
  /** Clusters the endpoint has been reflected to through that address. */
  clusters: Set<string>;
}

export interface IpamState {
  pools: Cidr[];
  pod: Cidr;
  service: Cidr;
  external: Cidr;
  reserved: Cidr[];
  clusters: Map<string, ClusterEntry>;
  /** Keyed by the endpoint's address as the local cluster sees it. */
  endpoints: Map<number, EndpointEntry>;
  /** Reverse index: external address → endpoint address. */
  externalInUse: Map<number, number>;
}

/** Addresses of the external CIDR never handed to endpoints: the network address and the
 * gateway's own masquerade address (first host), used for hub-and-spoke forwarding. */
export const externalReservedHosts = 2;
