// ResourceRequest (discovery.liqo.io/v1alpha1, namespaced): a consumer asks a provider for
// resources; it lives in the tenant namespace and is replicated to the provider. Liqo v0.5 keeps
// it in discovery.liqo.io (not sharing.liqo.io, where its answer, the ResourceOffer, lives).
import * as v from "valibot";
import { ageColumn, localColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { oneOfWithDefault, text, timestamp } from "../fields.ts";
import { ClusterIdentitySchema, DISCOVERY_GROUP } from "./identity.ts";
import { resourceAmounts } from "./foreigncluster.ts";

/** Whether the provider has answered with a ResourceOffer. */
export const OfferState = { None: "None", Created: "Created" } as const;
export type OfferState = (typeof OfferState)[keyof typeof OfferState];

// Not in Liqo v0.5 (an optional extension): the drop-in reflector plugins installed on the
// consumer, so that the provider can grant its peer identity what they reflect, and say what it refused.
const ReflectorPluginRequestSchema = v.object({
  name: text("The plugin's name (its manifest's name)."),
  version: v.optional(text("The plugin's own version.")),
  resources: v.pipe(
    v.array(
      v.object({
        group: text("API group of the kind (empty for the core group)."),
        version: text("API version of the kind."),
        kind: text("The kind the plugin reflects."),
        direction: oneOfWithDefault(
          ["forward", "backward", "both"] as const,
          "forward",
          "forward writes the provider's copy; backward only reads it.",
          true,
        ),
      }),
    ),
    v.description("The kinds the plugin reflects, as its manifest declares them."),
  ),
});

const ReflectorPluginGrantSchema = v.object({
  name: text("The plugin's name."),
  state: oneOfWithDefault(
    ["Granted", "Refused"] as const,
    "Refused",
    "Whether the provider granted what the plugin reflects.",
    true,
  ),
  message: v.optional(text("What was granted, or why it was refused and how to fix it.")),
  rules: v.optional(
    v.pipe(
      v.array(
        v.object({
          apiGroups: v.array(v.string()),
          resources: v.array(v.string()),
          verbs: v.array(v.string()),
        }),
      ),
      v.description("The RBAC rules granted to the peer identity in its twin namespaces for this plugin."),
    ),
  ),
});

export const ResourceRequestSpecSchema = v.object({
  clusterIdentity: v.pipe(ClusterIdentitySchema, v.description("The identity of the cluster asking for resources.")),
  authUrl: text("The URL of the requesting cluster's authentication service."),
  withdrawalTimestamp: v.optional(timestamp("Set when the user asks for a graceful end of the peering.")),
  reflectorPlugins: v.optional(
    v.pipe(
      v.array(ReflectorPluginRequestSchema),
      v.description("Drop-in reflector plugins the consumer runs, and what they reflect."),
    ),
  ),
  // Not in Liqo v0.5: from the consumer's ForeignCluster spec.requestedResources.
  requestedResources: v.optional(
    resourceAmounts(
      "The amounts the consumer asks for, by resource name; resources not named get what the provider's rule gives.",
    ),
  ),
});

const ResourceGrantSchema = v.object({
  name: text("The resource."),
  asked: text("What the consumer asked for."),
  granted: text("What the offer gives."),
  capped: v.pipe(v.boolean(), v.description("True when the provider gave less than asked.")),
});

export const ResourceRequestStatusSchema = v.object({
  offerWithdrawalTimestamp: v.optional(timestamp("When the ResourceOffer answering this request was withdrawn.")),
  offerState: oneOfWithDefault(
    ["None", "Created"] as const,
    "None",
    "Whether the ResourceOffer answering this request exists.",
    true,
  ),
  reflectorPlugins: v.optional(
    v.pipe(
      v.array(ReflectorPluginGrantSchema),
      v.description("The provider's answer for each plugin of spec.reflectorPlugins."),
    ),
  ),
  // Not in Liqo v0.5: replicated back, so the consumer sees what it got of what it asked for.
  resourceGrants: v.optional(
    v.pipe(
      v.array(ResourceGrantSchema),
      v.description("The provider's answer to spec.requestedResources, per resource: asked, granted, capped."),
    ),
  ),
  resourceRefusal: v.optional(
    text("Why asked amounts were not read (a malformed or unknown resource), and the fix; the last offer stands."),
  ),
  // Not in Liqo v0.5: the consumer shows it in its OutgoingPeering condition.
  refusal: v.optional(
    text("Why the provider makes no ResourceOffer for this request, and what fixes it (empty when it does)."),
  ),
});

export type ReflectorPluginRequest = v.InferOutput<typeof ReflectorPluginRequestSchema>;
export type ReflectorPluginGrant = v.InferOutput<typeof ReflectorPluginGrantSchema>;

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
