// TunnelEndpoint (net.liqo.io/v1alpha1, namespaced): the resolved parameters of the tunnel to one
// peer, local and remote networks with their NAT remappings; the gateway reports the connection.
import * as v from "valibot";
import { ageColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { cidr, clusterId, ipAddress, optionalText, stringMap, text } from "../fields.ts";
import { NET_GROUP, NO_NAT_CIDR } from "./group.ts";

export const ConnectionStatus = { Connected: "Connected", Connecting: "Connecting", Error: "Error" } as const;
export type ConnectionStatus = (typeof ConnectionStatus)[keyof typeof ConnectionStatus];

/** A NAT network, "None" when the original network is used as is. */
const natCidr = (description: string) => v.optional(cidr(description, [NO_NAT_CIDR]), NO_NAT_CIDR);
const optionalInt = (description: string) =>
  v.optional(v.pipe(v.number(), v.integer("must be a whole number"), v.description(description)));

export const TunnelEndpointSpecSchema = v.object({
  clusterID: clusterId("The ID of the remote cluster."),
  localPodCIDR: cidr("The pod CIDR of the local cluster."),
  localNATPodCIDR: natCidr("The network the remote cluster maps the local pod CIDR to, on conflicts."),
  localExternalCIDR: cidr("The external CIDR of the local cluster."),
  localNATExternalCIDR: natCidr("The network the remote cluster maps the local external CIDR to, on conflicts."),
  remotePodCIDR: cidr("The pod CIDR of the remote cluster."),
  remoteNATPodCIDR: natCidr("The network the local cluster maps the remote pod CIDR to, on conflicts."),
  remoteExternalCIDR: cidr("The external CIDR of the remote cluster."),
  remoteNATExternalCIDR: natCidr("The network the local cluster maps the remote external CIDR to, on conflicts."),
  endpointIP: ipAddress("The public IP address of the remote gateway."),
  backendType: text("The VPN technology interconnecting the clusters (wireguard)."),
  backend_config: stringMap("Parameters of the VPN backend."),
});

export const TunnelEndpointStatusSchema = v.object({
  tunnelIFaceIndex: optionalInt("The index of the tunnel interface."),
  tunnelIFaceName: optionalText("The name of the tunnel interface."),
  vethIFaceIndex: optionalInt("The index of the veth interface."),
  vethIFaceName: optionalText("The name of the veth interface."),
  vethIP: optionalText("The IP address of the veth interface."),
  gatewayIP: optionalText("The IP address of the gateway."),
  connection: v.optional(
    v.pipe(
      v.object({
        // Liqo declares no enum here; the parser checks the values Liqo writes.
        status: v.optional(
          v.pipe(
            v.string(),
            v.check((s) => s in ConnectionStatus, "must be one of Connected, Connecting, Error"),
            v.description("Connected, Connecting or Error."),
          ),
        ),
        statusMessage: optionalText("Details about the connection status."),
        peerConfiguration: v.optional(stringMap("The configuration of the peer as the VPN backend sees it.")),
      }),
      v.description("The state of the VPN connection."),
    ),
  ),
});

export const TunnelEndpointKind = defineKind({
  group: NET_GROUP,
  kind: "TunnelEndpoint",
  plural: "tunnelendpoints",
  scope: "Namespaced",
  categories: ["liqo"],
  description: "The parameters of the tunnel towards one remote cluster and the state of its connection.",
  printerColumns: [
    { name: "Peering Cluster ID", type: "string", jsonPath: ".spec.clusterID" },
    { name: "Endpoint IP", type: "string", priority: 1, jsonPath: ".spec.endpointIP" },
    { name: "Backend type", type: "string", jsonPath: ".spec.backendType" },
    { name: "Connection status", type: "string", jsonPath: ".status.connection.status" },
    ageColumn,
  ],
  spec: TunnelEndpointSpecSchema,
  status: TunnelEndpointStatusSchema,
});

export type TunnelEndpoint = v.InferOutput<typeof TunnelEndpointKind.schema>;
export type TunnelEndpointSpec = v.InferOutput<typeof TunnelEndpointSpecSchema>;
export type TunnelEndpointStatus = v.InferOutput<typeof TunnelEndpointStatusSchema>;

export const TunnelEndpointResource = TunnelEndpointKind.resource;
export const TunnelEndpointCrd = TunnelEndpointKind.crd;
export const parseTunnelEndpoint = TunnelEndpointKind.parse;
