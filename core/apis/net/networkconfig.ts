// NetworkConfig (net.liqo.io/v1alpha1, namespaced, in the tenant namespace): one cluster's network
// parameters sent to a peer; the peer fills the status with the NAT networks it chose for us.
import * as v from "valibot";
import { ageColumn, localColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { ClusterIdentitySchema } from "../discovery/identity.ts";
import { cidr, ipAddress, optionalText, stringMap, text } from "../fields.ts";
import { NET_GROUP } from "./group.ts";

/** Liqo's name prefix for NetworkConfigs (pkg/consts NetworkConfigNamePrefix). */
export const NETWORK_CONFIG_NAME_PREFIX = "net-config-";

export const NetworkConfigSpecSchema = v.object({
  cluster: v.pipe(ClusterIdentitySchema, v.description("The remote cluster that receives this NetworkConfig.")),
  podCIDR: cidr("The network of the pods in the sending cluster."),
  externalCIDR: cidr("The network the sending cluster uses for local service endpoints."),
  endpointIP: ipAddress("The public IP address of the sending cluster's gateway."),
  backendType: text("The VPN technology interconnecting the clusters (wireguard)."),
  // Liqo spells this one field in snake case; kept as is for compatibility.
  backend_config: stringMap("Parameters of the VPN backend, such as the public key and the port."),
});

export const NetworkConfigStatusSchema = v.object({
  // Required with a default, as Liqo declares it.
  processed: v.pipe(
    v.optional(
      v.pipe(v.boolean(), v.description("Whether the receiving cluster has processed this NetworkConfig.")),
      false,
    ),
    v.metadata({ crdRequired: true }),
  ),
  podCIDRNAT: optionalText("The network the receiving cluster remapped the sender's pod CIDR to, or None."),
  externalCIDRNAT: optionalText("The network the receiving cluster remapped the sender's external CIDR to, or None."),
});

export const NetworkConfigKind = defineKind({
  group: NET_GROUP,
  kind: "NetworkConfig",
  plural: "networkconfigs",
  scope: "Namespaced",
  categories: ["liqo"],
  description: "The network parameters one cluster sends to a peer, and the remapping the peer chose.",
  printerColumns: [
    { name: "Peering Cluster", type: "string", jsonPath: ".spec.cluster.clusterName" },
    { name: "Endpoint IP", type: "string", priority: 1, jsonPath: ".spec.endpointIP" },
    { name: "VPN Backend", type: "string", priority: 1, jsonPath: ".spec.backendType" },
    { name: "Processed", type: "string", jsonPath: ".status.processed" },
    localColumn,
    ageColumn,
  ],
  spec: NetworkConfigSpecSchema,
  status: NetworkConfigStatusSchema,
});

export type NetworkConfig = v.InferOutput<typeof NetworkConfigKind.schema>;
export type NetworkConfigSpec = v.InferOutput<typeof NetworkConfigSpecSchema>;
export type NetworkConfigStatus = v.InferOutput<typeof NetworkConfigStatusSchema>;

export const NetworkConfigResource = NetworkConfigKind.resource;
export const NetworkConfigCrd = NetworkConfigKind.crd;
export const parseNetworkConfig = NetworkConfigKind.parse;
