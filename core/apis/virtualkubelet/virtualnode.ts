// VirtualNode (virtualkubelet.liqo.io/v1alpha1, namespaced; liqoctl puts it in the provider's
// tenant namespace): one more virtual node for an established outgoing peering, as in Liqo 1.x.
// It takes its share of the provider's offer (the peering's own node liqo-<name> keeps the rest),
// carries its own labels and taints, and can pin its pods to some of the provider's nodes. Every
// virtual node of a peering shares that peering's reflection: objects are reflected once.
import * as v from "valibot";
import { ageColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { clusterId, conditionFields, oneOf, optionalText, stringMap, text } from "../fields.ts";
import { resourceList } from "../sharing/resourceoffer.ts";
import { VIRTUALKUBELET_GROUP } from "./group.ts";

export const TaintSchema = v.object({
  key: text("The taint key."),
  value: optionalText("The taint value."),
  effect: oneOf(["NoSchedule", "PreferNoSchedule", "NoExecute"] as const, "What happens to pods not tolerating it."),
});

export const VirtualNodeSpecSchema = v.object({
  clusterID: clusterId("The provider: the cluster ID of an outgoing peering of this cluster."),
  resourceQuota: v.pipe(
    v.object({
      hard: resourceList(
        "This node's share of the provider's offer (cpu, memory, pods, ...); the peering's own node keeps the rest.",
      ),
    }),
    v.description("The capacity of this virtual node."),
  ),
  labels: v.optional(stringMap("Labels added to the node, besides the provider's.")),
  taints: v.optional(
    v.pipe(v.array(TaintSchema), v.description("Taints added to the node, besides virtual-node.liqo.io/not-allowed.")),
  ),
  offloadingPatch: v.optional(
    v.pipe(
      v.object({
        nodeSelector: v.optional(
          stringMap("Added to the nodeSelector of every pod this node offloads: where they run in the provider."),
        ),
      }),
      v.description("What changes in the pods offloaded through this node."),
    ),
  ),
});

export const VirtualNodeConditionSchema = v.object({
  type: oneOf(["Ready"] as const, "The aspect this condition describes."),
  status: oneOf(["True", "False", "Unknown"] as const, "Whether the node stands for the provider now."),
  ...conditionFields,
});

export const VirtualNodeStatusSchema = v.object({
  conditions: v.optional(v.pipe(v.array(VirtualNodeConditionSchema), v.description("The node's state."))),
  resources: v.optional(resourceList("The capacity the node has now (less than asked once the offer shrank).")),
});

export const VirtualNodeKind = defineKind({
  group: VIRTUALKUBELET_GROUP,
  kind: "VirtualNode",
  plural: "virtualnodes",
  scope: "Namespaced",
  shortNames: ["vn"],
  categories: ["liqo"],
  description: "One more virtual node for an outgoing peering, with its share of the provider's offer.",
  printerColumns: [
    { name: "ClusterID", type: "string", jsonPath: ".spec.clusterID" },
    { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: "Reason", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].reason', priority: 1 },
    ageColumn,
  ],
  spec: VirtualNodeSpecSchema,
  specRequired: true,
  status: VirtualNodeStatusSchema,
});

export type VirtualNodeCr = v.InferOutput<typeof VirtualNodeKind.schema>;
export type VirtualNodeSpec = v.InferOutput<typeof VirtualNodeSpecSchema>;
export type VirtualNodeTaint = v.InferOutput<typeof TaintSchema>;

export const VirtualNodeResource = VirtualNodeKind.resource;
export const VirtualNodeCrd = VirtualNodeKind.crd;
export const parseVirtualNode = VirtualNodeKind.parse;
/** On the Node of a VirtualNode ("true"): what a restarted controller manager may drain as a leftover. */
export const VIRTUAL_NODE_CR_LABEL = "virtualkubelet.liqo.io/virtualnode";
/** Held by each VirtualNode until its node is drained and deleted. */
export const VIRTUAL_NODE_FINALIZER = "virtualnode.liqo.io/drain";
