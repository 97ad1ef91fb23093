// ResourceOffer (sharing.liqo.io/v1alpha1, namespaced): a provider's answer to a ResourceRequest,
// saying what it offers; once Accepted, the consumer starts a virtual kubelet for it.
import * as v from "valibot";
import { ageColumn, localColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { clusterId, oneOfWithDefault, quantity, stringMap, text, timestamp } from "../fields.ts";

export const SHARING_GROUP = "sharing.liqo.io";

export const OfferPhase = {
  Pending: "Pending",
  ManualActionRequired: "ManualActionRequired",
  Accepted: "Accepted",
  Refused: "Refused",
} as const;
export type OfferPhase = (typeof OfferPhase)[keyof typeof OfferPhase];

export const VirtualKubeletStatus = { None: "None", Created: "Created", Deleting: "Deleting" } as const;
export type VirtualKubeletStatus = (typeof VirtualKubeletStatus)[keyof typeof VirtualKubeletStatus];

export const resourceList = (description: string) =>
  v.pipe(v.record(v.string(), quantity()), v.description(description));

const scopedResourceSelectorRequirement = v.object({
  scopeName: text("The name of the scope the selector applies to."),
  operator: text("In, NotIn, Exists or DoesNotExist."),
  values: v.optional(v.pipe(v.array(v.string()), v.description("The values; empty for Exists and DoesNotExist."))),
});

/** A core/v1 ResourceQuotaSpec. */
const resourceQuotaSpec = v.object({
  hard: v.optional(resourceList("The hard limits for each named resource.")),
  scopeSelector: v.optional(
    v.pipe(
      v.object({
        matchExpressions: v.optional(
          v.pipe(v.array(scopedResourceSelectorRequirement), v.description("Scope selector requirements.")),
        ),
      }),
      v.description("Filters on the scopes of the objects the quota tracks."),
    ),
  ),
  scopes: v.optional(v.pipe(v.array(v.string()), v.description("Filters every tracked object must match."))),
});

export const ResourceOfferSpecSchema = v.object({
  clusterId: clusterId("The identifier of the cluster sending this offer."),
  images: v.optional(
    v.pipe(
      v.array(
        v.object({
          names: v.optional(v.pipe(v.array(v.string()), v.description("The names the image is known by."))),
          sizeBytes: v.optional(
            v.pipe(
              v.number(),
              v.integer("must be a whole number of bytes"),
              v.metadata({ openapi: { format: "int64" } }),
              v.description("The size of the image in bytes."),
            ),
          ),
        }),
      ),
      v.description("The images already stored in the providing cluster."),
    ),
  ),
  resourceQuota: v.optional(
    v.pipe(resourceQuotaSpec, v.description("The resources the providing cluster makes available.")),
  ),
  labels: v.optional(stringMap("The labels to put on the virtual node.")),
  prices: v.optional(resourceList("The price of each kind of resource (cpu, memory, image).")),
  withdrawalTimestamp: v.optional(timestamp("Set when the provider asks for a graceful end of the offer.")),
  storageClasses: v.optional(
    v.pipe(
      v.array(
        v.object({
          storageClassName: text("The name of the storage class."),
          default: v.optional(
            v.pipe(v.boolean(), v.description("Whether this is the default storage class for Liqo.")),
          ),
        }),
      ),
      v.description("The storage classes the providing cluster offers."),
    ),
  ),
});

export const ResourceOfferStatusSchema = v.object({
  phase: oneOfWithDefault(
    ["Pending", "ManualActionRequired", "Accepted", "Refused"] as const,
    "Pending",
    "Whether the offer was accepted; once Accepted, a virtual kubelet is started for it.",
    true,
  ),
  virtualKubeletStatus: oneOfWithDefault(
    ["None", "Created", "Deleting"] as const,
    "None",
    "Whether the virtual kubelet for this offer exists.",
  ),
});

export const ResourceOfferKind = defineKind({
  group: SHARING_GROUP,
  kind: "ResourceOffer",
  plural: "resourceoffers",
  scope: "Namespaced",
  shortNames: ["offer"],
  categories: ["liqo"],
  description: "The resources a provider cluster offers to a consumer cluster.",
  printerColumns: [
    { name: "Status", type: "string", jsonPath: ".status.phase" },
    { name: "VirtualKubeletStatus", type: "string", jsonPath: ".status.virtualKubeletStatus" },
    localColumn,
    ageColumn,
  ],
  spec: ResourceOfferSpecSchema,
  status: ResourceOfferStatusSchema,
});

export type ResourceOffer = v.InferOutput<typeof ResourceOfferKind.schema>;
export type ResourceOfferSpec = v.InferOutput<typeof ResourceOfferSpecSchema>;
export type ResourceOfferStatus = v.InferOutput<typeof ResourceOfferStatusSchema>;

export const ResourceOfferResource = ResourceOfferKind.resource;
export const ResourceOfferCrd = ResourceOfferKind.crd;
export const parseResourceOffer = ResourceOfferKind.parse;
