// Builds "clusters" in namespaces: each is a gateway namespace with one pod namespace behind a
// veth, all using the same pod and external CIDRs (the worst case for NAT). `connect` plays the
// network manager for one peering: underlay link, NetworkConfig exchange through both IPAMs,
// WireGuard keys, and a peer entry in each gateway's config.
import { createIpam, type Ipam, type MappedNetworks } from "../../netfabric/ipam/index.ts";
import type { GatewayConfig } from "../../netfabric/gateway/config.ts";
import { createGatewayReconciler } from "../../netfabric/gateway/reconcile.ts";
import { createIp } from "../../netfabric/os/ip.ts";
import { createNft } from "../../netfabric/os/nft.ts";
import { generateKeyPair } from "../../netfabric/os/wireguard-keys.ts";
import { createUapiClient } from "../../netfabric/os/wireguard-uapi.ts";
import { runner, type Lab } from "./lab.ts";

export const podCidr = "10.200.0.0/16";
export const externalCidr = "10.210.0.0/16";

export interface Cluster {
  name: string;
  gw: string;
  pod: string;
  podIp: string;
  device: string;
  ipam: Ipam;
  config: GatewayConfig;
  publicKey: string;
  reconciler: ReturnType<typeof createGatewayReconciler>;
  /** Underlay address the peer `name` uses to reach this gateway. */
  underlayFor: Map<string, string>;
}

export async function buildCluster(lab: Lab, name: string, podIp: string, reserved: string[] = []): Promise<Cluster> {
  const role = name.toLowerCase();
  const gw = await lab.netns(`g${role}`);
  const pod = await lab.netns(`p${role}`);
  // The gateway reaches its pods directly, standing in for the CNI and the overlay.
  await lab.sh(gw, ["ip", "link", "add", "pods", "type", "veth", "peer", "name", "eth0", "netns", pod]);
  await createIp(runner, gw).batch(["addr add 10.200.0.1/16 dev pods", "link set pods up"]);
  await createIp(runner, pod).batch([
    `addr add ${podIp}/16 dev eth0`,
    "link set eth0 up",
    "route add default via 10.200.0.1",
  ]);
  const device = (await lab.wireguard(gw, role)).name;
  return {
    name,
    gw,
    pod,
    podIp,
    device,
    ipam: createIpam({ podCidr, serviceCidr: "10.96.0.0/12", externalCidr, reserved }),
    ...gatewayEnd(gw, device, podCidr, externalCidr),
    underlayFor: new Map(),
  };
}

/** A gateway's configuration without peers, a fresh key pair and its reconciler, in netns `gw`. */
export function gatewayEnd(gw: string, device: string, localPodCidr: string, localExternalCidr: string) {
  const keys = generateKeyPair();
  return {
    config: {
      device,
      localPodCidr,
      localExternalCidr,
      privateKey: keys.privateKey,
      listenPort: 51820,
      underlay: { mtu: 1500, ipv6: false },
      peers: [] as GatewayConfig["peers"],
    } satisfies GatewayConfig,
    publicKey: keys.publicKey,
    reconciler: createGatewayReconciler({
      ip: createIp(runner, gw),
      nft: createNft(runner, gw),
      wireguard: createUapiClient(device),
      runner,
    }),
  };
}

function peerEntry(self: Cluster, other: Cluster, seenBySelf: MappedNetworks, seenByOther: MappedNetworks) {
  return {
    clusterId: other.name,
    localNatPodCidr: seenByOther.podCidr,
    localNatExternalCidr: seenByOther.externalCidr,
    remoteNatPodCidr: seenBySelf.podCidr,
    remoteNatExternalCidr: seenBySelf.externalCidr,
    publicKey: other.publicKey,
    endpoint: `${other.underlayFor.get(self.name)}:51820`,
    persistentKeepalive: 5,
  };
}

/** Peers x and y over a fresh veth in 198.18.<subnet>.0/24. */
export async function connect(lab: Lab, x: Cluster, y: Cluster, subnet: number) {
  const [xIp, yIp] = [`198.18.${subnet}.1`, `198.18.${subnet}.2`];
  const dev = `u${subnet}`;
  await lab.sh(x.gw, ["ip", "link", "add", dev, "type", "veth", "peer", "name", dev, "netns", y.gw]);
  await createIp(runner, x.gw).batch([`addr add ${xIp}/24 dev ${dev}`, `link set ${dev} up`]);
  await createIp(runner, y.gw).batch([`addr add ${yIp}/24 dev ${dev}`, `link set ${dev} up`]);
  x.underlayFor.set(y.name, xIp);
  y.underlayFor.set(x.name, yIp);
  const seenByX = x.ipam.mapRemoteNetworks(y.name, { podCidr, externalCidr });
  const seenByY = y.ipam.mapRemoteNetworks(x.name, { podCidr, externalCidr });
  x.ipam.setLocalNetworksSeenBy(y.name, { podCidr: seenByY.podCidr, externalCidr: seenByY.externalCidr });
  y.ipam.setLocalNetworksSeenBy(x.name, { podCidr: seenByX.podCidr, externalCidr: seenByX.externalCidr });
  x.config.peers.push(peerEntry(x, y, seenByX, seenByY));
  y.config.peers.push(peerEntry(y, x, seenByY, seenByX));
}

/** Copies the IPAM's NatMappings into the gateway config, as the tunnel operator does. */
export function syncNatMappings(c: Cluster) {
  for (const m of c.ipam.natMappings()) {
    const peer = c.config.peers.find((p) => p.clusterId === m.clusterId);
    if (peer) peer.natMappings = m.clusterMappings;
  }
}
