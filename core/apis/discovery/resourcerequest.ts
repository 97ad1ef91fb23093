// ResourceRequest (discovery.liqo.io/v1alpha1, namespaced): a consumer asks a provider for
// resources; it lives in the tenant namespace and is replicated to the provider. Liqo v0.5 keeps
// it in discovery.liqo.io (not sharing.liqo.io, where its answer, the ResourceOffer, lives).
import * as v from "valibot";
import { ageColumn, localColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { oneOfWithDefault, text, timestamp } from "../fields.ts";
import { ClusterIdentitySchema, DISCOVERY_GROUP } from "./identity.ts";

/** Whether the provider has answered with a ResourceOffer. */
export const OfferState = { None: "None", Created: "Created" } as const;
export type OfferState = (typeof OfferState)[keyof typeof OfferState];

export const ResourceRequestSpecSchema = v.object({
  clusterIdentity: v.pipe(ClusterIdentitySchema, v.description("The identity of the cluster asking for resources.")),
  authUrl: text("The URL of the requesting cluster's authentication service."),
  withdrawalTimestamp: v.optional(timestamp("Set when the user asks for a graceful end of the peering.")),
});

export const ResourceRequestStatusSchema = v.object({
  offerWithdrawalTimestamp: v.optional(timestamp("When the ResourceOffer answering this request was withdrawn.")),
  offerState: oneOfWithDefault(["None", "Created"] as const, "None", "Whether the ResourceOffer answering this request exists.", true),
});

export const ResourceRequestKind = defineKind({
  group: DISCOVERY_GROUP,
  kind: "ResourceRequest",
  plural: "resourcerequests",
  scope: "Namespaced",
  categories: ["liqo"],
  description: "A request for resources from a consumer cluster to a provider cluster.",
  printerColumns: [localColumn, ageColumn],
  spec: ResourceRequestSpecSchema,
  status: ResourceRequestStatusSchema,
});

export type ResourceRequest = v.InferOutput<typeof ResourceRequestKind.schema>;
export type ResourceRequestSpec = v.InferOutput<typeof ResourceRequestSpecSchema>;
export type ResourceRequestStatus = v.InferOutput<typeof ResourceRequestStatusSchema>;

export const ResourceRequestResource = ResourceRequestKind.resource;
export const ResourceRequestCrd = ResourceRequestKind.crd;
export const parseResourceRequest = ResourceRequestKind.parse;
