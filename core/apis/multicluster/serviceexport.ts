// ServiceExport (multicluster.x-k8s.io/v1alpha1, namespaced): marks the Service of the same
// namespace and name for export to the clusterset. Its schema follows sigs.k8s.io/mcs-api's
// v1alpha1 type (spec: optional exportedLabels/exportedAnnotations; status: metav1.Conditions).
import * as v from "valibot";
import { ageColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { stringMap, timestamp } from "../fields.ts";
import { MCS_GROUP } from "./group.ts";

/** metav1.Condition, with its required fields as upstream's CRDs declare them. */
export const MetaConditionSchema = v.object({
  type: v.pipe(v.string(), v.maxLength(316), v.description("The type of the condition, in CamelCase.")),
  status: v.pipe(
    v.picklist(["True", "False", "Unknown"], "must be one of True, False, Unknown"),
    v.description("True, False or Unknown."),
  ),
  observedGeneration: v.optional(
    v.pipe(
      v.number(),
      v.integer("must be a whole number"),
      v.minValue(0),
      v.metadata({ openapi: { format: "int64" } }),
      v.description("The generation of the object the condition was set from."),
    ),
  ),
  lastTransitionTime: timestamp("When the condition last changed status."),
  reason: v.pipe(v.string(), v.maxLength(1024), v.description("Machine-readable, CamelCase reason.")),
  message: v.pipe(v.string(), v.maxLength(32768), v.description("Human-readable details.")),
});
export type MetaCondition = v.InferOutput<typeof MetaConditionSchema>;

export const ServiceExportSpecSchema = v.object({
  exportedLabels: v.optional(
    stringMap("Labels exported with the service (optional for implementations; not used here)."),
  ),
  exportedAnnotations: v.optional(
    stringMap("Annotations exported with the service (optional for implementations; not used here)."),
  ),
});

export const ServiceExportStatusSchema = v.object({
  conditions: v.optional(
    v.pipe(
      v.array(MetaConditionSchema),
      v.metadata({ openapi: { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] } }),
      v.description("Valid, Ready and Conflict, as the MCS API defines them."),
    ),
  ),
});

export const ServiceExportKind = defineKind({
  group: MCS_GROUP,
  kind: "ServiceExport",
  plural: "serviceexports",
  scope: "Namespaced",
  shortNames: ["svcex", "svcexport"],
  description:
    "ServiceExport declares that the Service with the same name and namespace as this export should be consumable from other clusters.",
  printerColumns: [ageColumn],
  spec: ServiceExportSpecSchema,
  status: ServiceExportStatusSchema,
});

export type ServiceExport = v.InferOutput<typeof ServiceExportKind.schema>;
export const ServiceExportResource = ServiceExportKind.resource;
export const parseServiceExport = ServiceExportKind.parse;
