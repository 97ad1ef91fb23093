// ServiceImport (multicluster.x-k8s.io/v1alpha1, namespaced): a service imported from the clusters
// of the clusterset that export it. Its schema follows sigs.k8s.io/mcs-api's v1alpha1 type: spec
// ports (name, protocol, appProtocol, port), ips (at most two), type ClusterSetIP or Headless,
// sessionAffinity and sessionAffinityConfig; status clusters[] {cluster} and conditions.
import * as v from "valibot";
import { ageColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { optionalText, text } from "../fields.ts";
import { MCS_GROUP } from "./group.ts";
import { MetaConditionSchema } from "./serviceexport.ts";

const int32 = (description: string) =>
  v.pipe(
    v.number(),
    v.integer("must be a whole number"),
    v.metadata({ openapi: { format: "int32" } }),
    v.description(description),
  );

export const McsServicePortSchema = v.object({
  name: optionalText("The name of this port within the service (a DNS label); must match the EndpointPort's name."),
  protocol: optionalText("The IP protocol for this port: TCP, UDP or SCTP (default TCP)."),
  appProtocol: optionalText("The application protocol for this port (a hint, as in a Service's port)."),
  port: int32("The port that will be exposed by this service."),
});
export type McsServicePort = v.InferOutput<typeof McsServicePortSchema>;

/** core/v1 SessionAffinityConfig: only clientIP.timeoutSeconds. */
export const SessionAffinityConfigSchema = v.object({
  clientIP: v.optional(
    v.object({
      timeoutSeconds: v.optional(
        v.pipe(
          int32("How long a ClientIP session sticks, in seconds (1-86400; default 10800)."),
          v.minValue(1),
          v.maxValue(86400),
        ),
      ),
    }),
  ),
});
export type SessionAffinityConfig = v.InferOutput<typeof SessionAffinityConfigSchema>;

export const ServiceImportSpecSchema = v.object({
  ports: v.pipe(
    v.array(McsServicePortSchema),
    v.metadata({ openapi: { "x-kubernetes-list-type": "atomic" } }),
    v.description("The ports of the imported service."),
  ),
  ips: v.optional(
    v.pipe(
      v.array(v.string()),
      v.maxLength(2, "must have at most 2 items"),
      v.metadata({ openapi: { maxItems: 2 } }),
      v.description("The VIP(s) of this service when type is ClusterSetIP."),
    ),
  ),
  type: v.pipe(
    v.picklist(["ClusterSetIP", "Headless"], "must be one of ClusterSetIP, Headless"),
    v.description("The type of this service: ClusterSetIP or Headless."),
  ),
  sessionAffinity: optionalText("ClientIP or None (default None); ignored when type is Headless."),
  sessionAffinityConfig: v.optional(
    v.pipe(SessionAffinityConfigSchema, v.description("Session affinity configuration.")),
  ),
  ipFamilies: v.optional(v.pipe(v.array(v.string()), v.description("The IP families assigned to this ServiceImport."))),
});

export const ServiceImportStatusSchema = v.object({
  clusters: v.optional(
    v.pipe(
      v.array(v.object({ cluster: text("The exporting cluster (its ID here); an RFC 1123 DNS label.") })),
      v.metadata({ openapi: { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["cluster"] } }),
      v.description("The exporting clusters this service was derived from."),
    ),
  ),
  conditions: v.optional(
    v.pipe(
      v.array(MetaConditionSchema),
      v.metadata({ openapi: { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] } }),
      v.description("The conditions of the import (Ready)."),
    ),
  ),
});

export const ServiceImportKind = defineKind({
  group: MCS_GROUP,
  kind: "ServiceImport",
  plural: "serviceimports",
  scope: "Namespaced",
  shortNames: ["svcim", "svcimport"],
  description: "ServiceImport describes a service imported from clusters in a ClusterSet.",
  printerColumns: [
    { name: "Type", type: "string", jsonPath: ".spec.type" },
    { name: "IP", type: "string", jsonPath: ".spec.ips" },
    ageColumn,
  ],
  spec: ServiceImportSpecSchema,
  status: ServiceImportStatusSchema,
});

export type ServiceImport = v.InferOutput<typeof ServiceImportKind.schema>;
export const ServiceImportResource = ServiceImportKind.resource;
export const parseServiceImport = ServiceImportKind.parse;
