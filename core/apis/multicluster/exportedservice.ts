// ExportedService (multicluster.liqo.io/v1alpha1, namespaced): liqo's carrier of one exported
// Service between two peered clusters. It lives in the tenant namespace of the peering in the
// provider (the only place the consumer's identity may write), one per exported service and
// exporting cluster: the consumer pushes its exports there and the provider publishes its own
// there, so a one-way peering carries the MCS API both ways (docs/mcs.md). Endpoint addresses are
// the exporter's own; the importing cluster remaps them through its IPAM.
import * as v from "valibot";
import { ageColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { optionalText, text, timestamp } from "../fields.ts";
import { McsServicePortSchema, SessionAffinityConfigSchema } from "./serviceimport.ts";

export const MCS_LIQO_GROUP = "multicluster.liqo.io";

/** On every ExportedService: the ID of the cluster that exports the service (the writer). */
export const EXPORTED_SERVICE_ORIGIN_LABEL = "multicluster.liqo.io/origin-cluster-id";

const EndpointSchema = v.object({
  addresses: v.pipe(
    v.array(v.string()),
    v.description("The endpoint's addresses, as the exporting cluster sees them."),
  ),
  ready: v.optional(v.pipe(v.boolean(), v.description("Whether the endpoint is ready."))),
  serving: v.optional(v.pipe(v.boolean(), v.description("Whether the endpoint is serving."))),
  terminating: v.optional(v.pipe(v.boolean(), v.description("Whether the endpoint is terminating."))),
  hostname: optionalText("The endpoint's hostname (headless services)."),
});

const EndpointPortSchema = v.object({
  name: optionalText("The port's name (the Service port's)."),
  port: v.optional(
    v.pipe(v.number(), v.integer(), v.metadata({ openapi: { format: "int32" } }), v.description("The target port.")),
  ),
  protocol: optionalText("TCP, UDP or SCTP."),
  appProtocol: optionalText("The application protocol."),
});

const SliceSchema = v.object({
  addressType: text("IPv4, IPv6 or FQDN."),
  ports: v.optional(v.pipe(v.array(EndpointPortSchema), v.description("The slice's ports."))),
  endpoints: v.pipe(v.array(EndpointSchema), v.description("The slice's endpoints.")),
});

export const ExportedServiceSpecSchema = v.object({
  serviceNamespace: text("The namespace of the exported Service (the same in every cluster: namespace sameness)."),
  serviceName: text("The name of the exported Service."),
  exportedAt: timestamp(
    "When the ServiceExport was created; the oldest export wins a conflict (MCS KEP conflict resolution).",
  ),
  type: v.pipe(
    v.picklist(["ClusterSetIP", "Headless"], "must be one of ClusterSetIP, Headless"),
    v.description("ClusterSetIP or Headless."),
  ),
  ports: v.pipe(v.array(McsServicePortSchema), v.description("The Service's ports.")),
  sessionAffinity: optionalText("ClientIP or None."),
  sessionAffinityConfig: v.optional(SessionAffinityConfigSchema),
  slices: v.pipe(v.array(SliceSchema), v.description("The Service's EndpointSlices in the exporting cluster.")),
});
export type ExportedServiceSpec = v.InferOutput<typeof ExportedServiceSpecSchema>;
export type CarriedSlice = v.InferOutput<typeof SliceSchema>;

export const ExportedServiceKind = defineKind({
  group: MCS_LIQO_GROUP,
  kind: "ExportedService",
  plural: "exportedservices",
  scope: "Namespaced",
  categories: ["liqo"],
  description:
    "A Service exported by one cluster to a peer (Multi-Cluster Services API), carried through the peering's tenant namespace.",
  printerColumns: [
    { name: "Namespace", type: "string", jsonPath: ".spec.serviceNamespace" },
    { name: "Service", type: "string", jsonPath: ".spec.serviceName" },
    { name: "Origin", type: "string", jsonPath: `.metadata.labels.multicluster\\.liqo\\.io/origin-cluster-id` },
    ageColumn,
  ],
  specRequired: true,
  spec: ExportedServiceSpecSchema,
});

export type ExportedService = v.InferOutput<typeof ExportedServiceKind.schema>;
export const ExportedServiceResource = ExportedServiceKind.resource;
export const parseExportedService = ExportedServiceKind.parse;
