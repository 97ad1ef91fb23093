// The network manager's admin views: IPAM allocations, NetworkConfigs, TunnelEndpoints, peers.
import type { AdminExtension } from "../../core/admin/index.ts";
import { networkConfigRole } from "./forge.ts";
import type { NetworkManager } from "./manager.ts";

export function networkManagerViews(manager: NetworkManager): AdminExtension {
  return {
    views: {
      ipam: () => {
        const ipam = manager.store.ipam;
        const snapshot = ipam.snapshot();
        const object = manager.store.object;
        return {
          podCIDR: snapshot.podCidr,
          serviceCIDR: snapshot.serviceCidr,
          externalCIDR: snapshot.externalCidr,
          reservedSubnets: snapshot.reserved,
          pools: snapshot.pools,
          used: ipam.usedNetworks(),
          clusters: Object.entries(snapshot.clusters).map(([clusterId, c]) => ({ clusterId, ...c })),
          endpoints: snapshot.endpoints,
          natMappings: ipam.natMappings(),
          storage: {
            name: object?.metadata.name,
            resourceVersion: object?.metadata.resourceVersion,
            ...manager.store.stats,
          },
        };
      },
      networkconfigs: () =>
        manager.networkConfigs().map((o) => {
          const role = networkConfigRole(o.metadata.labels);
          return {
            namespace: o.metadata.namespace,
            name: o.metadata.name,
            direction: role ? (role.local ? "sent" : "received") : "unknown",
            clusterId: role?.clusterId,
            podCIDR: o.spec?.podCIDR,
            externalCIDR: o.spec?.externalCIDR,
            endpointIP: o.spec?.endpointIP,
            processed: o.status?.processed ?? false,
            podCIDRNAT: o.status?.podCIDRNAT,
            externalCIDRNAT: o.status?.externalCIDRNAT,
          };
        }),
      tunnelendpoints: () =>
        manager.tunnelEndpoints().map((o) => ({
          namespace: o.metadata.namespace,
          name: o.metadata.name,
          ...o.spec,
          connection: o.status?.connection?.status,
        })),
      peers: () => manager.peerStates(),
    },
    status: [
      {
        title: "Peers",
        view: "peers",
        empty: "no peers configured",
        columns: [
          { key: "clusterId", label: "Cluster" },
          { key: "phase", label: "Phase", format: "state" },
          { key: "message", label: "Message" },
        ],
      },
      {
        title: "TunnelEndpoints",
        view: "tunnelendpoints",
        empty: "no tunnel yet",
        columns: [
          { key: "clusterID", label: "Cluster" },
          { key: "remotePodCIDR", label: "Remote pods" },
          { key: "remoteNATPodCIDR", label: "Seen here as" },
          { key: "localNATPodCIDR", label: "Ours seen there as" },
          { key: "endpointIP", label: "Endpoint" },
          { key: "connection", label: "Connection", format: "state" },
        ],
      },
    ],
  };
}
