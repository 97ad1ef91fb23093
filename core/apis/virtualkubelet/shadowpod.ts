// ShadowPod (virtualkubelet.liqo.io/v1alpha1, namespaced): the pod a consumer wants run in the
// provider; the provider's controller creates and keeps the real pod, so offloaded pods survive a
// lost connection to the consumer.
//
// Liqo's CRD inlines the whole core/v1 PodSpec schema (6,800 lines of YAML). Here the pod is kept
// as an object that preserves every field, with the parts the parser checks (containers with a
// name and an image); the API server validates the real Pod when the controller creates it.
import * as v from "valibot";
import { ageColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { text } from "../fields.ts";
import { resourceList } from "../sharing/resourceoffer.ts";
import { VIRTUALKUBELET_GROUP } from "./group.ts";

const containerSchema = v.looseObject({
  name: text("The name of the container, unique in the pod."),
  image: v.optional(text("The container image.")),
});

export const PodSpecSchema = v.looseObject({
  containers: v.pipe(
    v.array(containerSchema),
    v.minLength(1, "must list at least one container"),
    v.description("The containers of the pod."),
  ),
  initContainers: v.optional(v.pipe(v.array(containerSchema), v.description("The init containers of the pod."))),
});

export const ShadowPodSpecSchema = v.object({
  pod: v.optional(v.pipe(PodSpecSchema, v.description("The spec of the pod to run (a core/v1 PodSpec)."))),
});

/** Admitted: the pod may run (counted against the offer); Refused: it waits for room (hard quota). */
export const ShadowPodQuotaPhase = { Admitted: "Admitted", Refused: "Refused" } as const;
export type ShadowPodQuotaPhase = (typeof ShadowPodQuotaPhase)[keyof typeof ShadowPodQuotaPhase];

/**
 * Written by the provider only (a status subresource, which the peer's role does not grant): what
 * its quota enforcement decided, and what it counted, so a restart recounts exactly.
 */
export const ShadowPodStatusSchema = v.object({
  quota: v.optional(
    v.pipe(
      v.object({
        phase: v.pipe(v.picklist(Object.values(ShadowPodQuotaPhase)), v.description("Admitted or Refused.")),
        counted: v.optional(resourceList("What the pod counts against the consumer's offer (Admitted).")),
        overQuota: v.optional(
          v.pipe(v.boolean(), v.description("Admitted past the offer (soft enforcement): flagged, not refused.")),
        ),
        message: v.optional(text("Why, with the amounts.")),
      }),
      v.description("The provider's quota enforcement for this ShadowPod."),
    ),
  ),
});

export const ShadowPodKind = defineKind({
  group: VIRTUALKUBELET_GROUP,
  kind: "ShadowPod",
  plural: "shadowpods",
  scope: "Namespaced",
  description: "A pod that a consumer cluster asks a provider cluster to run and keep running.",
  printerColumns: [{ name: "Quota", type: "string", jsonPath: ".status.quota.phase" }, ageColumn],
  spec: ShadowPodSpecSchema,
  status: ShadowPodStatusSchema,
});

export type ShadowPod = v.InferOutput<typeof ShadowPodKind.schema>;
export type ShadowPodSpec = v.InferOutput<typeof ShadowPodSpecSchema>;

export const ShadowPodResource = ShadowPodKind.resource;
export const ShadowPodCrd = ShadowPodKind.crd;
export const parseShadowPod = ShadowPodKind.parse;

/**
 * True for a pod a ShadowPod controls (the provider's controller creates it owned by its ShadowPod):
 * such a pod arrived through a peering, and this cluster's pod webhook leaves it as it is.
 */
export function isShadowPodControlled(metadata: {
  ownerReferences?: { apiVersion?: string; kind?: string; controller?: boolean }[];
}): boolean {
  return !!metadata.ownerReferences?.some(
    (o) => o.controller === true && o.kind === "ShadowPod" && o.apiVersion?.startsWith(`${VIRTUALKUBELET_GROUP}/`),
  );
}
