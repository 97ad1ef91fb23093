// NamespaceMap (virtualkubelet.liqo.io/v1alpha1, namespaced, one per remote cluster in its tenant
// namespace): which local namespaces map to which remote ones, desired and current.
import * as v from "valibot";
import { ageColumn, localColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { oneOf, optionalText, stringMap } from "../fields.ts";
import { VIRTUALKUBELET_GROUP } from "./group.ts";

export const MappingPhase = {
  Accepted: "Accepted",
  CreationLoopBackOff: "CreationLoopBackOff",
  Terminating: "Terminating",
} as const;
export type MappingPhase = (typeof MappingPhase)[keyof typeof MappingPhase];

export const NamespaceMapSpecSchema = v.object({
  desiredMapping: v.optional(
    stringMap("Local namespace name to remote namespace name, for every namespace to offload there."),
  ),
});

export const RemoteNamespaceStatusSchema = v.object({
  remoteNamespace: optionalText("The name of the remote namespace."),
  phase: v.optional(
    oneOf(["Accepted", "CreationLoopBackOff", "Terminating"] as const, "The state of the remote namespace."),
  ),
});

export const NamespaceMapStatusSchema = v.object({
  currentMapping: v.optional(
    v.pipe(
      v.record(v.string(), RemoteNamespaceStatusSchema),
      v.description("Local namespace name to the state of its remote namespace."),
    ),
  ),
});

export const NamespaceMapKind = defineKind({
  group: VIRTUALKUBELET_GROUP,
  kind: "NamespaceMap",
  plural: "namespacemaps",
  scope: "Namespaced",
  categories: ["liqo"],
  description: "The mapping between local and remote namespaces for one remote cluster.",
  printerColumns: [localColumn, ageColumn],
  spec: NamespaceMapSpecSchema,
  status: NamespaceMapStatusSchema,
});

export type NamespaceMap = v.InferOutput<typeof NamespaceMapKind.schema>;
export type NamespaceMapSpec = v.InferOutput<typeof NamespaceMapSpecSchema>;
export type NamespaceMapStatus = v.InferOutput<typeof NamespaceMapStatusSchema>;
export type RemoteNamespaceStatus = v.InferOutput<typeof RemoteNamespaceStatusSchema>;

export const NamespaceMapResource = NamespaceMapKind.resource;
export const NamespaceMapCrd = NamespaceMapKind.crd;
export const parseNamespaceMap = NamespaceMapKind.parse;
