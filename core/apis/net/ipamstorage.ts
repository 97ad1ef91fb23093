// IpamStorage (net.liqo.io/v1alpha1, cluster-scoped, one per cluster): the persisted state of the
// IPAM, so networks assigned to peers survive a restart of the network manager. The field names
// are Liqo's; the network manager maps them to and from netfabric/ipam's snapshot.
import * as v from "valibot";
import { defineKind } from "../define.ts";
import { cidr, ipAddress } from "../fields.ts";
import { NET_GROUP } from "./group.ts";

/** Labels Liqo puts on the IpamStorage (pkg/consts IpamStorageResourceLabelKey/Value). */
export const IPAM_STORAGE_LABEL = { key: "net.liqo.io/ipamstorage", value: "true" } as const;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// Liqo stores sets as maps to empty structs.
const emptyObject = v.object({});
// Liqo creates the object with "" in every network and fills them in as it learns them; "None"
// means no remapping is needed.
const subnet = (description: string) => cidr(description, ["None", ""]);

export const SubnetsSchema = v.object({
  localNATPodCIDR: subnet("The network the remote cluster uses for our pods, or None when it uses our pod CIDR."),
  remotePodCIDR: subnet("The network used for the remote cluster's pods."),
  localNATExternalCIDR: subnet(
    "The network the remote cluster uses for our endpoints, or None when it uses our external CIDR.",
  ),
  remoteExternalCIDR: subnet("The network used in the local cluster for the remote cluster's endpoints."),
});

export const EndpointMappingSchema = v.object({
  ip: ipAddress("The address of the external CIDR assigned to this endpoint."),
  clusterMappings: v.pipe(
    v.record(v.string(), emptyObject),
    v.description("The clusters this endpoint is reflected to; only the keys (cluster IDs) matter."),
  ),
});

export const IpamSpecSchema = v.object({
  prefixes: v.pipe(
    v.record(
      v.string(),
      v.pipe(
        v.string(),
        v.check((s) => BASE64.test(s), "must be base64"),
        v.metadata({ openapi: { format: "byte" } }),
      ),
    ),
    v.description("Allocator state by prefix (base64); Liqo stores go-ipam's state here."),
  ),
  pools: v.pipe(
    v.array(cidr("A network pool.")),
    v.description("The network pools remote networks are remapped into."),
  ),
  reservedSubnets: v.pipe(v.array(cidr("A reserved network.")), v.description("Networks never used for remapping.")),
  clusterSubnets: v.pipe(
    v.record(v.string(), SubnetsSchema),
    v.description("By remote cluster ID: the networks used with that cluster."),
  ),
  externalCIDR: cidr("The external CIDR of this cluster.", [""]),
  endpointMappings: v.pipe(
    v.record(v.string(), EndpointMappingSchema),
    v.description("By local endpoint address: its external CIDR address and the clusters it is active for."),
  ),
  natMappingsConfigured: v.pipe(
    v.record(v.string(), emptyObject),
    v.description("The remote clusters whose NatMappings are configured; only the keys (cluster IDs) matter."),
  ),
  podCIDR: cidr("The pod CIDR of this cluster.", [""]),
  serviceCIDR: cidr("The service CIDR of this cluster.", [""]),
});

export const IpamStorageKind = defineKind({
  group: NET_GROUP,
  kind: "IpamStorage",
  plural: "ipamstorages",
  scope: "Cluster",
  categories: ["liqo"],
  description: "The persisted state of this cluster's IP address management.",
  spec: IpamSpecSchema,
});

export type IpamStorage = v.InferOutput<typeof IpamStorageKind.schema>;
export type IpamSpec = v.InferOutput<typeof IpamSpecSchema>;
export type Subnets = v.InferOutput<typeof SubnetsSchema>;
export type EndpointMapping = v.InferOutput<typeof EndpointMappingSchema>;

export const IpamStorageResource = IpamStorageKind.resource;
export const IpamStorageCrd = IpamStorageKind.crd;
export const parseIpamStorage = IpamStorageKind.parse;
