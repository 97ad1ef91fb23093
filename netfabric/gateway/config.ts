// What the gateway is asked to do: one WireGuard device, one peer per remote cluster. The fields
// mirror Liqo's TunnelEndpoint (LocalNATPodCIDR = how the peer sees our pod CIDR, and so on).

export interface PeerTunnel {
  clusterId: string;
  /** Our networks as the peer sees them; equal to ours (or "None") when it did not remap them. */
  localNatPodCidr: string;
  localNatExternalCidr: string;
  /** The peer's networks as we see them: routed into the tunnel, accepted from it. */
  remoteNatPodCidr: string;
  remoteNatExternalCidr: string;
  /** IPAM NatMapping for this peer: endpoint address (local view) → address in our external CIDR. */
  natMappings?: Record<string, string>;
  publicKey: string;
  /** host:port of the peer's gateway on the underlay. */
  endpoint: string;
  /** Seconds between keepalives; 0 turns them off. Default `defaultKeepaliveSec`. */
  persistentKeepalive?: number;
}

/** Liqo's interval (its WireGuard driver's KeepAliveInterval), on both sides of every tunnel:
 * the side behind NAT keeps its router's mapping open and lets the reachable side roam to it;
 * the reachable side's keepalives are harmless and cover the case where both are behind NAT
 * with a forwarded port. 10 s sits well under common UDP NAT timeouts (30 s and up). */
export const defaultKeepaliveSec = 10;

export interface GatewayConfig {
  device: string;
  localPodCidr: string;
  localExternalCidr: string;
  /** Base64 private key. */
  privateKey: string;
  listenPort: number;
  /** Overrides the computed tunnel MTU. */
  mtu?: number;
  /** The interface the encrypted packets leave through. */
  underlay: { mtu: number; ipv6: boolean };
  peers: PeerTunnel[];
}

export interface GatewayOptions {
  /** Dedicated routing table, so the CNI's main table is never touched (Liqo uses 18952). */
  routingTable: number;
  rulePriority: number;
  /** nftables table (family ip) owned by the gateway. */
  natTable: string;
  /** nftables table (family ip) of the IntraClusterTrafficSegregation security mode; absent in FullPodToPod. */
  filterTable: string;
}

export const defaultGatewayOptions: GatewayOptions = {
  routingTable: 18952,
  rulePriority: 1800,
  natTable: "liqo_gateway",
  filterTable: "liqo_filter",
};

/** WireGuard's per-packet cost: outer IP header (20 or 40) + UDP 8 + WireGuard 32. */
export function tunnelMtu(config: Pick<GatewayConfig, "mtu" | "underlay">): number {
  if (config.mtu !== undefined) return config.mtu;
  return config.underlay.mtu - (config.underlay.ipv6 ? 80 : 60);
}
