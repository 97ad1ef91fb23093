// Remote Events come home: pure transforms from an Event in a twin namespace of the provider to
// the Event written on the local counterpart of its object (Liqo 1.x's event reflection). Only
// this direction exists: local Events are never sent to the provider, and Events liqo itself
// wrote (ours, or any liqo component's on either side) are never reflected, so nothing echoes.
import { createHash } from "node:crypto";
import { objectKey, type KubeObject } from "../../kube/resources.ts";
import { SHADOWPOD_EVENT_COMPONENT } from "../../apis/labels.ts";

/** On every Event this reflection writes: which peering it came from. */
export const EVENT_ORIGIN_LABEL = "liqo.io/remote-cluster-id";
export const EVENT_MANAGED_BY_LABEL = "liqo.io/managed-by";
export const EVENT_MANAGED_BY = "event-reflection";
/** On every Event this reflection writes: the remote Event's namespace/name. */
export const REMOTE_EVENT_ANNOTATION = "liqo.io/remote-event";

/** Kinds whose Events come home: pods (offloaded) and the kinds the reflectors copy to the provider. */
export const EVENT_KINDS: Record<string, string> = {
  Pod: "v1",
  ConfigMap: "v1",
  Secret: "v1",
  Service: "v1",
  PersistentVolumeClaim: "v1",
  EndpointSlice: "discovery.k8s.io/v1",
  Ingress: "networking.k8s.io/v1",
};

export interface RemoteEvent extends KubeObject {
  involvedObject?: {
    apiVersion?: string;
    kind?: string;
    name?: string;
    namespace?: string;
    uid?: string;
    fieldPath?: string;
  };
  reason?: string;
  message?: string;
  type?: string;
  count?: number;
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  eventTime?: string | null;
  series?: { count?: number; lastObservedTime?: string } | null;
  source?: { component?: string; host?: string };
  reportingComponent?: string;
  reportingInstance?: string;
}

export interface EventContext {
  localNamespace: string;
  remoteClusterId: string;
  remoteClusterName: string;
}

/** Written by liqo (a reflected copy, or any liqo component's own): never reflected, either way. */
export function isLiqoEvent(ev: RemoteEvent): boolean {
  if (ev.metadata.labels?.[EVENT_MANAGED_BY_LABEL] === EVENT_MANAGED_BY) return true;
  const components = [
    ev.source?.component,
    ev.reportingComponent,
    (ev as { reportingController?: string }).reportingController,
  ];
  return components.some((c) => !!c && /^liqo([-./]|$)/i.test(c));
}

/**
 * The provider refused to create an offloaded pod (its ShadowPod controller's PodCreationFailed,
 * e.g. the pod breaks the provider's pod security level): the one liqo Event that comes home, as
 * an Event of the local pod of the same name, so `kubectl describe pod` says why it stays Pending.
 * Everything else is returned unchanged.
 */
export function homeward(ev: RemoteEvent): RemoteEvent {
  const io = ev.involvedObject;
  const component = ev.source?.component || ev.reportingComponent;
  if (io?.kind !== "ShadowPod" || ev.reason !== "PodCreationFailed" || component !== SHADOWPOD_EVENT_COMPONENT)
    return ev;
  return {
    ...ev,
    involvedObject: { kind: "Pod", apiVersion: "v1", name: io.name, namespace: io.namespace },
    source: { component: "shadowpod-controller", host: ev.source?.host },
    reportingComponent: "shadowpod-controller",
  };
}

/** Why this remote Event does not come home, or undefined when it does. */
export function skipReason(ev: RemoteEvent): string | undefined {
  if (isLiqoEvent(ev)) return "written by liqo";
  const io = ev.involvedObject;
  if (!io?.kind || !io.name) return "no involved object";
  if (!(io.kind in EVENT_KINDS)) return `kind ${io.kind} is not reflected`;
  if (io.namespace && io.namespace !== ev.metadata.namespace) return "involved object in another namespace";
  return undefined;
}

/**
 * The local Event's name: fixed per remote Event (so an update of the remote one updates the same
 * local one, never a new one), and not choosable by the peer: a hash of the peering and the
 * remote name, so a remote Event cannot be named to overwrite a local Event someone else wrote.
 */
export function localEventName(ev: RemoteEvent, remoteClusterId: string): string {
  const hash = createHash("sha256")
    .update(`${remoteClusterId}/${ev.metadata.namespace}/${ev.metadata.name}`)
    .digest("hex")
    .slice(0, 16);
  const base = (ev.involvedObject?.name ?? "event").slice(0, 200).replace(/\.+$/, "");
  return `${base}.${hash}`;
}

const text = (v: unknown, max: number) => (typeof v === "string" ? v.slice(0, max) : "");
const time = (v: unknown) =>
  typeof v === "string" && !Number.isNaN(Date.parse(v))
    ? new Date(Date.parse(v)).toISOString().replace(/\.\d+Z$/, "Z")
    : undefined;

/** How many times it happened, from a legacy count or an events.k8s.io series; at least 1. */
export function occurrences(ev: RemoteEvent): number {
  const n = Math.max(Number(ev.count) || 0, Number(ev.series?.count) || 0, 1);
  return Math.min(Math.floor(n), 2 ** 31 - 1);
}

/** What the local copy says: the part of it that an update of the remote Event can change. */
export function eventSignature(ev: RemoteEvent): string {
  return JSON.stringify([occurrences(ev), lastSeen(ev), ev.message ?? "", ev.reason ?? "", ev.type ?? ""]);
}

function lastSeen(ev: RemoteEvent): string | undefined {
  return time(ev.series?.lastObservedTime) ?? time(ev.lastTimestamp) ?? time(ev.eventTime) ?? time(ev.firstTimestamp);
}

/**
 * The local Event for a remote one, on the local object (its uid, so `kubectl describe` finds it).
 * Legacy core/v1 fields only (count, first/last timestamps): series and eventTime are folded in.
 * Text is bounded as the API server bounds it; a type other than Normal/Warning becomes Normal.
 */
export function localEvent(ev: RemoteEvent, local: KubeObject, ctx: EventContext): KubeObject {
  const io = ev.involvedObject!;
  const last = lastSeen(ev) ?? new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const first = time(ev.firstTimestamp) ?? time(ev.eventTime) ?? last;
  const involvedObject: Record<string, string> = {
    apiVersion: local.apiVersion ?? EVENT_KINDS[io.kind!]!,
    kind: io.kind!,
    name: local.metadata.name!,
    namespace: ctx.localNamespace,
  };
  if (local.metadata.uid) involvedObject.uid = local.metadata.uid;
  if (local.metadata.resourceVersion) involvedObject.resourceVersion = local.metadata.resourceVersion;
  if (typeof io.fieldPath === "string" && io.fieldPath) involvedObject.fieldPath = io.fieldPath.slice(0, 256);
  const component =
    text(
      ev.source?.component || ev.reportingComponent || (ev as { reportingController?: string }).reportingController,
      128,
    ) || "unknown";
  const host = text(ev.source?.host || ev.reportingInstance, 200);
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: {
      name: localEventName(ev, ctx.remoteClusterId),
      namespace: ctx.localNamespace,
      labels: { [EVENT_MANAGED_BY_LABEL]: EVENT_MANAGED_BY, [EVENT_ORIGIN_LABEL]: ctx.remoteClusterId },
      annotations: { [REMOTE_EVENT_ANNOTATION]: objectKey(ev) },
    },
    involvedObject,
    reason: text(ev.reason, 128),
    message: text(ev.message, 1024),
    type: ev.type === "Warning" ? "Warning" : "Normal",
    count: occurrences(ev),
    firstTimestamp: first <= last ? first : last,
    lastTimestamp: last,
    // kubectl describe shows the component and host: where it happened, in which cluster.
    source: { component, host: host ? `${host} (${ctx.remoteClusterName})` : ctx.remoteClusterName },
  } as KubeObject;
}

/** The merge patch that brings an existing local copy up to date with its remote Event. */
export function eventUpdate(desired: KubeObject): Record<string, unknown> {
  const d = desired as KubeObject & Record<string, unknown>;
  return {
    involvedObject: d.involvedObject,
    reason: d.reason,
    message: d.message,
    type: d.type,
    count: d.count,
    lastTimestamp: d.lastTimestamp,
    source: d.source,
  };
}
