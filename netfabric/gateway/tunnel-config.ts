// TunnelEndpoints (one per peer) and NatMappings → the gateway's desired config. Pure, so every
// bad TunnelEndpoint is reported with its reason while the good ones still get their tunnel.
import type { NatMapping } from "../../core/apis/net/natmapping.ts";
import type { TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import { objectKey } from "../../core/kube/resources.ts";
import { parseCidr, parseIpv4 } from "../ipam/index.ts";
import { gatewayNatMappings, natOf } from "../shared/nat.ts";
import { CLUSTER_ID_LABEL, PORT_FIELD, PUBLIC_KEY_FIELD } from "../shared/labels.ts";
import { keyToHex } from "../os/wireguard-keys.ts";
import type { GatewayConfig, PeerTunnel } from "./config.ts";

export interface LocalSettings {
  device: string;
  privateKey: string;
  listenPort: number;
  mtu?: number;
  underlay: { mtu: number; ipv6: boolean };
  persistentKeepalive?: number;
}

export interface TunnelPlan {
  config: GatewayConfig;
  /** TunnelEndpoint key (namespace/name) → peer cluster ID, for the ones in `config`. */
  accepted: Map<string, string>;
  /** TunnelEndpoint key → why it has no tunnel. */
  rejected: Map<string, string>;
}

/** The peer entry for one TunnelEndpoint, or a message naming the bad field and the fix. */
export function peerTunnel(
  tep: TunnelEndpoint,
  natMapping: NatMapping | undefined,
  persistentKeepalive?: number,
): PeerTunnel | string {
  const s = tep.spec;
  const where = `TunnelEndpoint ${objectKey(tep)}`;
  const publicKey = s.backend_config?.[PUBLIC_KEY_FIELD];
  if (!publicKey)
    return `${where}: backend_config.${PUBLIC_KEY_FIELD} is missing; the peer's gateway has not published its key`;
  try {
    keyToHex(publicKey, `backend_config.${PUBLIC_KEY_FIELD}`);
  } catch (err) {
    return `${where}: ${(err as Error).message}; the peer must send its gateway's public key in its NetworkConfig`;
  }
  const port = Number(s.backend_config?.[PORT_FIELD]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    return `${where}: backend_config.${PORT_FIELD} ${JSON.stringify(s.backend_config?.[PORT_FIELD])} is not a UDP port (1-65535)`;
  }
  try {
    parseIpv4(s.endpointIP, "endpointIP");
    for (const [field, value] of Object.entries({
      remoteNATPodCIDR: natOf(s.remoteNATPodCIDR, s.remotePodCIDR),
      remoteNATExternalCIDR: natOf(s.remoteNATExternalCIDR, s.remoteExternalCIDR),
    })) {
      parseCidr(value, field);
    }
  } catch (err) {
    return `${where}: ${(err as Error).message}`;
  }
  let natMappings: Record<string, string> | undefined;
  if (natMapping && Object.keys(natMapping.spec.clusterMappings ?? {}).length > 0) {
    try {
      natMappings = gatewayNatMappings(natMapping.spec, s.localExternalCIDR);
    } catch (err) {
      return `${where}: NatMapping ${natMapping.metadata.name}: ${(err as Error).message}`;
    }
  }
  return {
    clusterId: s.clusterID,
    localNatPodCidr: s.localNATPodCIDR,
    localNatExternalCidr: s.localNATExternalCIDR,
    remoteNatPodCidr: natOf(s.remoteNATPodCIDR, s.remotePodCIDR),
    remoteNatExternalCidr: natOf(s.remoteNATExternalCIDR, s.remoteExternalCIDR),
    natMappings,
    publicKey,
    endpoint: `${s.endpointIP}:${port}`,
    persistentKeepalive,
  };
}

export function planTunnels(teps: TunnelEndpoint[], natMappings: NatMapping[], local: LocalSettings): TunnelPlan {
  const accepted = new Map<string, string>();
  const rejected = new Map<string, string>();
  const peers: PeerTunnel[] = [];
  const sorted = [...teps].sort((a, b) => objectKey(a).localeCompare(objectKey(b)));
  const first = sorted[0]?.spec;
  const byCluster = new Map<string, string>();
  for (const tep of sorted) {
    const key = objectKey(tep);
    const id = tep.spec.clusterID;
    if (byCluster.has(id)) {
      rejected.set(
        key,
        `TunnelEndpoint ${key}: cluster ${id} already has TunnelEndpoint ${byCluster.get(id)}; delete the stale one`,
      );
      continue;
    }
    // Our own networks are the same in every TunnelEndpoint; one that disagrees is stale.
    if (tep.spec.localPodCIDR !== first!.localPodCIDR || tep.spec.localExternalCIDR !== first!.localExternalCIDR) {
      rejected.set(
        key,
        `TunnelEndpoint ${key}: local networks ${tep.spec.localPodCIDR}/${tep.spec.localExternalCIDR} differ from ${first!.localPodCIDR}/${first!.localExternalCIDR} of the other peers`,
      );
      continue;
    }
    const mapping = natMappings.find((m) => (m.metadata.labels?.[CLUSTER_ID_LABEL] ?? m.spec.clusterID) === id);
    const peer = peerTunnel(tep, mapping, local.persistentKeepalive);
    if (typeof peer === "string") {
      rejected.set(key, peer);
      continue;
    }
    // Two peers may never claim the same address space: WireGuard would route to one only.
    const clash = peers.find((p) => p.publicKey === peer.publicKey);
    if (clash) {
      rejected.set(key, `TunnelEndpoint ${key}: public key already used by cluster ${clash.clusterId}`);
      continue;
    }
    byCluster.set(id, key);
    accepted.set(key, id);
    peers.push(peer);
  }
  return {
    accepted,
    rejected,
    config: {
      device: local.device,
      localPodCidr: first?.localPodCIDR ?? "0.0.0.0/32",
      localExternalCidr: first?.localExternalCIDR ?? "0.0.0.0/32",
      privateKey: local.privateKey,
      listenPort: local.listenPort,
      mtu: local.mtu,
      underlay: local.underlay,
      peers,
    },
  };
}
