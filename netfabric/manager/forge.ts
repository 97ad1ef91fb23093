// Pure builders of the network manager's objects, named by what they produce, as Liqo's
// netcfgcreator and tunnelendpointcreator fill them (v0.5.4 field names and labels).
import { createHash } from "node:crypto";
import { NO_NAT_CIDR } from "../../core/apis/net/group.ts";
import { NAT_MAPPING_LABEL } from "../../core/apis/net/natmapping.ts";
import type { NetworkConfig, NetworkConfigSpec, NetworkConfigStatus } from "../../core/apis/net/networkconfig.ts";
import type { TunnelEndpointSpec } from "../../core/apis/net/tunnelendpoint.ts";
import {
  OWNERSHIP_LABEL,
  REPLICATION_DESTINATION_LABEL,
  REPLICATION_ORIGIN_LABEL,
  REPLICATION_REQUESTED_LABEL,
  REPLICATION_STATUS_LABEL,
} from "../../core/apis/labels.ts";
import { formatIpv4, parseCidr, parseIpv4, remapIp, type MappedNetworks, type NatMappingSpec } from "../ipam/index.ts";
import { CLUSTER_ID_LABEL, PORT_FIELD, PUBLIC_KEY_FIELD, WIREGUARD_BACKEND } from "../shared/labels.ts";

/** Liqo's netcfgcreator component name, the value of liqo.io/ownership on local NetworkConfigs. */
export const NETCFG_OWNER = "netcfgCreator";
export const FIELD_MANAGER = "liqo-network-manager";

export interface Peer {
  remoteClusterId: string;
  /** DNS label shown to people; part of object names, as Liqo's UniqueName. */
  remoteClusterName: string;
  /** The local tenant namespace of this peering, where NetworkConfigs and the TunnelEndpoint live. */
  tenantNamespace: string;
}

export interface LocalNetworkParameters {
  podCidr: string;
  externalCidr: string;
  endpointIp: string;
  port: number;
  publicKey: string;
}

/** Liqo's UniqueName: the cluster name plus 6 hex digits of sha256(cluster ID). */
export function uniqueName(clusterName: string, clusterId: string): string {
  return `${clusterName}-${createHash("sha256").update(clusterId).digest("hex").slice(0, 6)}`;
}

export function localNetworkConfigLabels(peer: Peer): Record<string, string> {
  return {
    [REPLICATION_REQUESTED_LABEL]: "true",
    [OWNERSHIP_LABEL]: NETCFG_OWNER,
    [REPLICATION_DESTINATION_LABEL]: peer.remoteClusterId,
  };
}

export function localNetworkConfigSpec(peer: Peer, p: LocalNetworkParameters): NetworkConfigSpec {
  return {
    cluster: { clusterID: peer.remoteClusterId, clusterName: peer.remoteClusterName },
    podCIDR: p.podCidr,
    externalCIDR: p.externalCidr,
    endpointIP: p.endpointIp,
    backendType: WIREGUARD_BACKEND,
    backend_config: { [PUBLIC_KEY_FIELD]: p.publicKey, [PORT_FIELD]: String(p.port) },
  };
}

/** The NetworkConfig this cluster sends to `peer` (the CRD replicator copies it there). */
export function localNetworkConfig(peer: Peer, p: LocalNetworkParameters): NetworkConfig {
  return {
    apiVersion: "net.liqo.io/v1alpha1",
    kind: "NetworkConfig",
    metadata: {
      name: uniqueName(peer.remoteClusterName, peer.remoteClusterId),
      namespace: peer.tenantNamespace,
      labels: localNetworkConfigLabels(peer),
    },
    spec: localNetworkConfigSpec(peer, p),
  };
}

/** Which peering a NetworkConfig belongs to and whether we sent it or received it; undefined when neither. */
export function networkConfigRole(
  labels: Record<string, string> | undefined,
): { clusterId: string; local: boolean } | undefined {
  if (!labels) return undefined;
  if (labels[REPLICATION_REQUESTED_LABEL] === "true" && labels[REPLICATION_DESTINATION_LABEL]) {
    return { clusterId: labels[REPLICATION_DESTINATION_LABEL]!, local: true };
  }
  if (labels[REPLICATION_ORIGIN_LABEL] && labels[REPLICATION_STATUS_LABEL] === "true") {
    return { clusterId: labels[REPLICATION_ORIGIN_LABEL]!, local: false };
  }
  return undefined;
}

/** The status we write on a received NetworkConfig: where we put the peer's networks, "None" when kept. */
export function remoteNetworkConfigStatus(mapped: MappedNetworks): NetworkConfigStatus {
  return {
    processed: true,
    podCIDRNAT: mapped.podRemapped ? mapped.podCidr : NO_NAT_CIDR,
    externalCIDRNAT: mapped.externalRemapped ? mapped.externalCidr : NO_NAT_CIDR,
  };
}

/** Both halves of a peering agree once each cluster has processed the other's NetworkConfig. */
export function bothProcessed(local: NetworkConfig | undefined, remote: NetworkConfig | undefined): boolean {
  return local?.status?.processed === true && remote?.status?.processed === true;
}

/** Liqo's fillTunnelEndpointSpec: our networks with the peer's remapping of them, the peer's with ours. */
export function tunnelEndpointSpec(local: NetworkConfig, remote: NetworkConfig): TunnelEndpointSpec {
  return {
    clusterID: local.spec.cluster.clusterID,
    localPodCIDR: local.spec.podCIDR,
    localNATPodCIDR: local.status?.podCIDRNAT || NO_NAT_CIDR,
    localExternalCIDR: local.spec.externalCIDR,
    localNATExternalCIDR: local.status?.externalCIDRNAT || NO_NAT_CIDR,
    remotePodCIDR: remote.spec.podCIDR,
    remoteNATPodCIDR: remote.status?.podCIDRNAT || NO_NAT_CIDR,
    remoteExternalCIDR: remote.spec.externalCIDR,
    remoteNATExternalCIDR: remote.status?.externalCIDRNAT || NO_NAT_CIDR,
    endpointIP: remote.spec.endpointIP,
    backendType: remote.spec.backendType,
    backend_config: { ...remote.spec.backend_config },
  };
}

export function tunnelEndpointLabels(clusterId: string): Record<string, string> {
  return { [CLUSTER_ID_LABEL]: clusterId };
}

export function natMappingLabels(clusterId: string): Record<string, string> {
  return { [NAT_MAPPING_LABEL.key]: NAT_MAPPING_LABEL.value, [CLUSTER_ID_LABEL]: clusterId };
}

/**
 * Liqo's NatMapping spec from the IPAM's: podCIDR is the peer's pod network as used here,
 * externalCIDR ours as the peer sees it, and each mapping goes from the endpoint's address to the
 * address the peer uses for it (our external address, remapped into the peer's view).
 */
export function natMappingSpec(ipam: NatMappingSpec, peerPodCidrHere: string, localExternalCidr: string) {
  const own = parseCidr(localExternalCidr, "local externalCIDR");
  const seen = parseCidr(ipam.externalCidr, `externalCIDR as seen by ${ipam.clusterId}`);
  const clusterMappings: Record<string, string> = {};
  for (const [endpoint, external] of Object.entries(ipam.clusterMappings)) {
    clusterMappings[endpoint] = formatIpv4(remapIp(parseIpv4(external), own, seen));
  }
  return { clusterID: ipam.clusterId, podCIDR: peerPodCidrHere, externalCIDR: ipam.externalCidr, clusterMappings };
}
