// Pure parts of the CRD replicator: which objects travel, how a copy is marked, and what status
// flows back. Liqo's labels (pkg/consts/replication.go): the sender marks an object
// liqo.io/replication=true + liqo.io/remoteID=<destination>; the copy carries
// liqo.io/replicated=true + liqo.io/originID=<sender>, and never the request labels (so a copy is
// never sent on again).
import { NetworkConfigResource, ResourceOfferResource, ResourceRequestResource } from "../../apis/index.ts";
import {
  REPLICATION_DESTINATION_LABEL,
  REPLICATION_ORIGIN_LABEL,
  REPLICATION_REQUESTED_LABEL,
  REPLICATION_STATUS_LABEL,
} from "../../apis/labels.ts";
import type { KubeObject, ResourceRef } from "../../kube/resources.ts";

/** Spec travels from the source to the target; status travels back from the target (its owner). */
export type Direction = "push" | "pull";

export interface ReplicatedKind {
  resource: ResourceRef;
  apiVersion: string;
  direction: Direction;
}

/**
 * The consumer pushes its ResourceRequests and NetworkConfig and pulls the provider's
 * ResourceOffer and NetworkConfig. Status is always written by the side that received the spec
 * (the provider answers a request; the consumer accepts an offer; each side processes the
 * other's NetworkConfig).
 */
export const REPLICATED_KINDS: ReplicatedKind[] = [
  { resource: ResourceRequestResource, apiVersion: "discovery.liqo.io/v1alpha1", direction: "push" },
  { resource: NetworkConfigResource, apiVersion: "net.liqo.io/v1alpha1", direction: "push" },
  { resource: ResourceOfferResource, apiVersion: "sharing.liqo.io/v1alpha1", direction: "pull" },
  { resource: NetworkConfigResource, apiVersion: "net.liqo.io/v1alpha1", direction: "pull" },
];

/** The selector of objects a cluster asks to send to `destinationId`. */
export function sourceSelector(destinationId: string): string {
  return `${REPLICATION_REQUESTED_LABEL}=true,${REPLICATION_DESTINATION_LABEL}=${destinationId}`;
}

/** The selector of copies made from objects of `originId`. */
export function targetSelector(originId: string): string {
  return `${REPLICATION_STATUS_LABEL}=true,${REPLICATION_ORIGIN_LABEL}=${originId}`;
}

/** Whether `obj` is a copy this replicator made from `originId` (the only objects it may change or delete). */
export function isReplicaOf(obj: KubeObject | undefined, originId: string): boolean {
  const l = obj?.metadata.labels;
  return l?.[REPLICATION_STATUS_LABEL] === "true" && l[REPLICATION_ORIGIN_LABEL] === originId;
}

export function replicaLabels(source: KubeObject, originId: string): Record<string, string> {
  const labels = { ...source.metadata.labels };
  delete labels[REPLICATION_REQUESTED_LABEL];
  delete labels[REPLICATION_DESTINATION_LABEL];
  return { ...labels, [REPLICATION_STATUS_LABEL]: "true", [REPLICATION_ORIGIN_LABEL]: originId };
}

/** The copy of `source` in `namespace`: same name, labels and annotations, the spec; never the status. */
export function replicaOf(source: KubeObject, kind: ReplicatedKind, namespace: string, originId: string): KubeObject {
  const m = source.metadata;
  const replica: KubeObject = {
    apiVersion: kind.apiVersion,
    kind: kind.resource.kind,
    metadata: { name: m.name, namespace, labels: replicaLabels(source, originId) },
    spec: source.spec,
  };
  const annotations = userAnnotations(m.annotations);
  if (annotations) replica.metadata.annotations = annotations;
  return replica;
}

function userAnnotations(a: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!a) return undefined;
  // kubectl's last-applied copy belongs to whoever ran kubectl on the source, not to the copy.
  const out = Object.fromEntries(
    Object.entries(a).filter(([k]) => k !== "kubectl.kubernetes.io/last-applied-configuration"),
  );
  return Object.keys(out).length ? out : undefined;
}

const stable = (v: unknown): string =>
  JSON.stringify(v, (_k, val) =>
    val && typeof val === "object" && !Array.isArray(val)
      ? Object.fromEntries(Object.entries(val).sort(([a], [b]) => a.localeCompare(b)))
      : val,
  );

export const sameJson = (a: unknown, b: unknown) => stable(a ?? null) === stable(b ?? null);

/** The annotation keys `manager` set on `obj`, as server-side apply records them in managedFields. */
export function annotationsSetBy(obj: KubeObject, manager: string): string[] {
  const keys = new Set<string>();
  const entries = (obj.metadata.managedFields ?? []) as { manager?: string; fieldsV1?: Record<string, unknown> }[];
  for (const e of entries) {
    if (e.manager !== manager) continue;
    const meta = e.fieldsV1?.["f:metadata"] as Record<string, unknown> | undefined;
    for (const k of Object.keys((meta?.["f:annotations"] as Record<string, unknown> | undefined) ?? {}))
      if (k.startsWith("f:")) keys.add(k.slice(2));
  }
  return [...keys];
}

/**
 * Whether the target already matches the desired copy: the same labels (a label dropped from the
 * source must go from the copy too; re-applying an unchanged copy is a no-op on the server, so a
 * label someone else added cannot cause a loop), the annotations we set and none we set that the
 * source dropped (`manager`: our field manager, whose apply then removes them), the spec.
 */
export function replicaUpToDate(target: KubeObject, desired: KubeObject, manager?: string): boolean {
  if (!sameJson(target.metadata.labels ?? {}, desired.metadata.labels ?? {})) return false;
  const ann = target.metadata.annotations ?? {};
  const want = desired.metadata.annotations ?? {};
  if (Object.entries(want).some(([k, v]) => ann[k] !== v)) return false;
  if (manager && annotationsSetBy(target, manager).some((k) => !(k in want) && k in ann)) return false;
  return sameJson(target.spec, desired.spec);
}

/**
 * The merge patch that makes `current` status equal `wanted` (keys `wanted` lacks are removed),
 * or undefined when nothing differs or the owner has written no status yet.
 */
export function statusPatch(current: unknown, wanted: unknown): Record<string, unknown> | undefined {
  if (!wanted || typeof wanted !== "object" || Object.keys(wanted).length === 0) return undefined;
  if (sameJson(current, wanted)) return undefined;
  const patch: Record<string, unknown> = { ...(wanted as Record<string, unknown>) };
  for (const k of Object.keys((current as Record<string, unknown> | undefined) ?? {}))
    if (!(k in patch)) patch[k] = null;
  return patch;
}
