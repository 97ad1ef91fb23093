// NatMapping (net.liqo.io/v1alpha1, cluster-scoped): for one remote cluster, the addresses of the
// external CIDR that stand for local endpoints, so the gateway can translate them.
import * as v from "valibot";
import { defineKind } from "../define.ts";
import { cidr, clusterId, stringMap } from "../fields.ts";
import { NET_GROUP } from "./group.ts";

/** Labels Liqo puts on every NatMapping (pkg/consts NatMappingResourceLabelKey/Value). */
export const NAT_MAPPING_LABEL = { key: "net.liqo.io/natmapping", value: "true" } as const;

export const NatMappingSpecSchema = v.object({
  clusterID: clusterId("The remote cluster this mapping is for."),
  podCIDR: cidr("The network used for remote pods in the local cluster (the remote pod CIDR or its NAT)."),
  externalCIDR: cidr("The external CIDR the remote cluster uses for local resources (ours or its NAT)."),
  clusterMappings: stringMap("The active translations: an address of the external CIDR to the local endpoint address."),
});

export const NatMappingKind = defineKind({
  group: NET_GROUP,
  kind: "NatMapping",
  plural: "natmappings",
  scope: "Cluster",
  categories: ["liqo"],
  description: "The address translations active for one remote cluster.",
  spec: NatMappingSpecSchema,
  // Liqo declares an empty status with the status subresource; kept so clients that patch it work.
  status: v.object({}),
});

export type NatMapping = v.InferOutput<typeof NatMappingKind.schema>;
export type NatMappingSpec = v.InferOutput<typeof NatMappingSpecSchema>;

export const NatMappingResource = NatMappingKind.resource;
export const NatMappingCrd = NatMappingKind.crd;
export const parseNatMapping = NatMappingKind.parse;
