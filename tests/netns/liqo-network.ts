// The network side of liqo on a rig cluster, in the test process, next to the peering parts of
// tests/e2e/peering-rig.ts: the gateway's key Secret (as `liqo gateway` creates it), a network
// manager whose peers follow the ForeignClusters (netfabric/manager/fc-peers.ts), and nothing else:
// data-plane tests add gateways and route agents in network namespaces.
import { ensureKeys } from "../../netfabric/gateway/keys.ts";
import { createNetworkManager, watchForeignClusterPeers, type NetworkManager } from "../../netfabric/manager/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import type { Logger } from "../../core/log.ts";
import type { TestRig } from "../rig/testing.ts";
import { ensureNamespace } from "./fabric-rig.ts";

export interface NetworkSide {
  manager: NetworkManager;
  stop(): Promise<void>;
}

export async function startNetworkSide(
  rig: TestRig,
  name: string,
  client: KubeClient,
  o: {
    externalCidr: string;
    reserved?: string[];
    gatewayEndpoint?: { ip: string; port: number };
    logger?: Logger;
    resyncMs?: number;
  },
): Promise<NetworkSide> {
  const cluster = rig.clusters.find((c) => c.name === name)!;
  await ensureNamespace(client, "liqo");
  await ensureKeys(client, "liqo");
  const manager = createNetworkManager({
    client,
    liqoNamespace: "liqo",
    logger: o.logger,
    resyncMs: o.resyncMs ?? 5_000,
    gatewayEndpoint: o.gatewayEndpoint,
    ipam: {
      podCidr: cluster.podCIDR,
      serviceCidr: cluster.serviceCIDR,
      externalCidr: o.externalCidr,
      reserved: o.reserved ?? [],
    },
  });
  await manager.start();
  const peers = watchForeignClusterPeers({
    client,
    onPeers: (p) => manager.setPeers(p),
    logger: o.logger,
    resyncMs: 5_000,
  });
  await peers.start();
  return {
    manager,
    async stop() {
      await peers.stop();
      await manager.stop();
    },
  };
}
