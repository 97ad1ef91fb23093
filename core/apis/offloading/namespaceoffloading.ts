// NamespaceOffloading (offloading.liqo.io/v1alpha1, namespaced, conventionally named "offloading"):
// enables offloading of its namespace, choosing remote names, where pods may run and which
// clusters are eligible; the status reports the outcome per remote cluster.
import * as v from "valibot";
import { ageColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { conditionFields, nodeSelector, oneOfWithDefault, optionalText } from "../fields.ts";

export const OFFLOADING_GROUP = "offloading.liqo.io";
/** Liqo only honours the NamespaceOffloading with this name in each namespace. */
export const DEFAULT_NAMESPACE_OFFLOADING_NAME = "offloading";

export const NamespaceMappingStrategy = { EnforceSameName: "EnforceSameName", DefaultName: "DefaultName" } as const;
export type NamespaceMappingStrategy = (typeof NamespaceMappingStrategy)[keyof typeof NamespaceMappingStrategy];

export const PodOffloadingStrategy = { Local: "Local", Remote: "Remote", LocalAndRemote: "LocalAndRemote" } as const;
export type PodOffloadingStrategy = (typeof PodOffloadingStrategy)[keyof typeof PodOffloadingStrategy];

export const OffloadingPhase = {
  Ready: "Ready",
  NoClusterSelected: "NoClusterSelected",
  InProgress: "InProgress",
  SomeFailed: "SomeFailed",
  AllFailed: "AllFailed",
  Terminating: "Terminating",
} as const;
export type OffloadingPhase = (typeof OffloadingPhase)[keyof typeof OffloadingPhase];

export const RemoteNamespaceConditionType = { OffloadingRequired: "OffloadingRequired", Ready: "Ready" } as const;
export type RemoteNamespaceConditionType =
  (typeof RemoteNamespaceConditionType)[keyof typeof RemoteNamespaceConditionType];

// The mapping strategy names the twin namespaces; changing it would orphan them, so the API server
// refuses the change (a CEL transition rule: no webhook has to be up for this to hold).
export const NamespaceOffloadingSpecSchema = v.pipe(
  v.object({
    namespaceMappingStrategy: oneOfWithDefault(
      ["EnforceSameName", "DefaultName"] as const,
      "DefaultName",
      "How remote namespaces are named: DefaultName (unique, localName-localClusterID) or EnforceSameName (same name, may conflict).",
    ),
    podOffloadingStrategy: oneOfWithDefault(
      ["Local", "Remote", "LocalAndRemote"] as const,
      "LocalAndRemote",
      "Where the pods of this namespace may run: Local, Remote or LocalAndRemote.",
    ),
    clusterSelector: v.optional(
      nodeSelector(
        "Selects the remote clusters (their virtual nodes) eligible for offloading, as a node selector; no terms selects all.",
      ),
    ),
  }),
  v.metadata({
    openapi: {
      "x-kubernetes-validations": [
        {
          rule: "self.namespaceMappingStrategy == oldSelf.namespaceMappingStrategy",
          message:
            "namespaceMappingStrategy is immutable: unoffload the namespace (liqoctl unoffload namespace) and offload it again to change it",
          fieldPath: ".namespaceMappingStrategy",
        },
      ],
    },
  }),
);

// Liqo declares no enum for these (they are corev1 ConditionStatus and a free type), so the
// checks stay in the parser.
export const RemoteNamespaceConditionSchema = v.object({
  type: v.pipe(
    v.string(),
    v.check((s) => s === "OffloadingRequired" || s === "Ready", "must be one of OffloadingRequired, Ready"),
    v.description("OffloadingRequired or Ready."),
  ),
  status: v.pipe(
    v.string(),
    v.check((s) => s === "True" || s === "False" || s === "Unknown", "must be one of True, False, Unknown"),
    v.description("True, False or Unknown."),
  ),
  ...conditionFields,
});

export const NamespaceOffloadingStatusSchema = v.object({
  remoteNamespaceName: optionalText("The name of the remote namespaces, chosen by the mapping strategy."),
  offloadingPhase: v.optional(
    v.pipe(
      v.string(),
      v.check((s) => s in OffloadingPhase, `must be one of ${Object.keys(OffloadingPhase).join(", ")}`),
      v.description("The overall state of the offloading."),
    ),
  ),
  remoteNamespacesConditions: v.optional(
    v.pipe(
      v.record(v.string(), v.array(RemoteNamespaceConditionSchema)),
      v.description("For each remote cluster, whether it was selected and whether its namespace is ready."),
    ),
  ),
  observedGeneration: v.optional(
    v.pipe(
      v.number(),
      v.integer("must be a whole number"),
      v.metadata({ openapi: { format: "int64" } }),
      v.description("The generation the controller last processed; lets liqoctl know the status is current."),
    ),
  ),
});

export const NamespaceOffloadingKind = defineKind({
  group: OFFLOADING_GROUP,
  kind: "NamespaceOffloading",
  plural: "namespaceoffloadings",
  scope: "Namespaced",
  shortNames: ["nsof"],
  categories: ["liqo"],
  description: "Enables and configures the offloading of its namespace to remote clusters.",
  printerColumns: [
    { name: "NamespaceMappingStrategy", type: "string", jsonPath: ".spec.namespaceMappingStrategy" },
    { name: "PodOffloadingStrategy", type: "string", jsonPath: ".spec.podOffloadingStrategy" },
    { name: "OffloadingPhase", type: "string", jsonPath: ".status.offloadingPhase" },
    { name: "RemoteNamespaceName", type: "string", priority: 10, jsonPath: ".status.remoteNamespaceName" },
    ageColumn,
  ],
  spec: NamespaceOffloadingSpecSchema,
  specRequired: true,
  status: NamespaceOffloadingStatusSchema,
});

export type NamespaceOffloading = v.InferOutput<typeof NamespaceOffloadingKind.schema>;
export type NamespaceOffloadingSpec = v.InferOutput<typeof NamespaceOffloadingSpecSchema>;
export type NamespaceOffloadingStatus = v.InferOutput<typeof NamespaceOffloadingStatusSchema>;
export type RemoteNamespaceCondition = v.InferOutput<typeof RemoteNamespaceConditionSchema>;

export const NamespaceOffloadingResource = NamespaceOffloadingKind.resource;
export const NamespaceOffloadingCrd = NamespaceOffloadingKind.crd;
export const parseNamespaceOffloading = NamespaceOffloadingKind.parse;
