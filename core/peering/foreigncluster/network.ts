// NetworkStatus of a ForeignCluster. The network manager (netfabric/manager, `liqo network-manager`)
// owns the NetworkConfig exchange, since only it knows the local pod CIDR, gateway endpoint and keys;
// this controller only reports it honestly: None when networking is disabled, Established once both
// NetworkConfigs of the peer are processed, Pending (naming what is missing) otherwise.
import { NetworkConfigResource, type NetworkConfig } from "../../apis/index.ts";
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/resources.ts";
import { bothProcessed, networkConfigRole } from "../../../netfabric/manager/forge.ts";
import type { ConditionUpdate, ForeignClusterObject } from "./conditions.ts";

type NetCfg = NetworkConfig & KubeObject;

export async function networkStatus(
  client: KubeClient,
  fc: ForeignClusterObject,
  tenantNamespace: string | undefined,
): Promise<ConditionUpdate> {
  const type = "NetworkStatus" as const;
  if (fc.spec.networkingEnabled === "No")
    return {
      type,
      status: "None",
      reason: "NetworkingDisabled",
      message: "networking is handled outside liqo (spec.networkingEnabled No)",
    };
  const id = fc.spec.clusterIdentity?.clusterID;
  if (!tenantNamespace || !id)
    return {
      type,
      status: "Pending",
      reason: "WaitingForAuthentication",
      message: "the network interconnection starts once authentication is established",
    };
  const configs = (await client.list<NetCfg>(NetworkConfigResource, { namespace: tenantNamespace })).items;
  const mine = configs.find((c) => {
    const r = networkConfigRole(c.metadata.labels);
    return r?.local && r.clusterId === id;
  });
  const theirs = configs.find((c) => {
    const r = networkConfigRole(c.metadata.labels);
    return r && !r.local && r.clusterId === id;
  });
  if (bothProcessed(mine, theirs))
    return {
      type,
      status: "Established",
      reason: "NetworkConfigsProcessed",
      message: "both clusters processed each other's NetworkConfig",
    };
  const missing = !mine
    ? "this cluster's NetworkConfig (is liqo network-manager running with this peer?)"
    : !theirs
      ? "the remote cluster's NetworkConfig"
      : "both NetworkConfigs to be processed";
  return { type, status: "Pending", reason: "NetworkConfigPending", message: `waiting for ${missing}` };
}
