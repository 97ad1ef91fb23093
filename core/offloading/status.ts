// The status of a NamespaceOffloading, computed from the NamespaceMaps alone (pure): one pair of
// conditions per remote cluster (OffloadingRequired, Ready) and an overall offloadingPhase, with
// the reasons and messages of Liqo v0.5's documentation.
import {
  MappingPhase,
  OffloadingPhase,
  RemoteNamespaceConditionType,
  type NamespaceOffloadingStatus,
  type RemoteNamespaceCondition,
} from "../apis/index.ts";

/** What one NamespaceMap (one remote cluster) says about the offloaded namespace. */
export interface ClusterMapping {
  /** The NamespaceMap's name, the remote cluster's unique name: the key of remoteNamespacesConditions. */
  name: string;
  /** `namespace/name` of the NamespaceMap, for messages that tell users where to look. */
  namespaceMapKey: string;
  /** The namespace is in spec.desiredMapping. */
  requested: boolean;
  /** status.currentMapping[namespace].phase, if any. */
  phase?: string;
}

export interface StatusInput {
  previous: NamespaceOffloadingStatus | undefined;
  clusters: ClusterMapping[];
  deleting: boolean;
  remoteNamespaceName?: string;
  observedGeneration?: number;
  /** Why clusters are not selected when it is not the selector's doing (an invalid spec, a wrong name). */
  notSelected?: { reason: string; message: string };
  now: Date;
}

export const ConditionReason = {
  ClusterSelected: "ClusterSelected",
  ClusterNotSelected: "ClusterNotSelected",
  RemoteNamespaceCreated: "RemoteNamespaceCreated",
  CreationLoopBackOff: "CreationLoopBackOff",
  Terminating: "Terminating",
  Creating: "Creating",
} as const;

type Condition = RemoteNamespaceCondition & { lastTransitionTime: string; reason: string; message: string };

const stamp = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");

function requiredCondition(
  requested: boolean,
  notSelected: StatusInput["notSelected"],
): Omit<Condition, "lastTransitionTime"> {
  const type = RemoteNamespaceConditionType.OffloadingRequired;
  if (requested)
    return {
      type,
      status: "True",
      reason: ConditionReason.ClusterSelected,
      message: "The remote cluster has been selected through the ClusterSelector field",
    };
  if (notSelected) return { type, status: "False", ...notSelected };
  return {
    type,
    status: "False",
    reason: ConditionReason.ClusterNotSelected,
    message: "You have not selected this cluster through ClusterSelector fields",
  };
}

function readyCondition(phase: string | undefined, namespaceMapKey: string): Omit<Condition, "lastTransitionTime"> {
  const type = RemoteNamespaceConditionType.Ready;
  switch (phase) {
    case MappingPhase.Accepted:
      return {
        type,
        status: "True",
        reason: ConditionReason.RemoteNamespaceCreated,
        message: "Namespace correctly offloaded on this cluster",
      };
    case MappingPhase.CreationLoopBackOff:
      return {
        type,
        status: "False",
        reason: ConditionReason.CreationLoopBackOff,
        message: `Some problems occurred during remote namespace creation; see the events of NamespaceMap ${namespaceMapKey}`,
      };
    case MappingPhase.Terminating:
      return {
        type,
        status: "False",
        reason: ConditionReason.Terminating,
        message: "The remote namespace is being deleted",
      };
    default:
      return {
        type,
        status: "False",
        reason: ConditionReason.Creating,
        message: "The remote namespace is being created",
      };
  }
}

/** Keeps the previous transition time while the condition's status does not change (Kubernetes' rule). */
function withTransition(
  next: Omit<Condition, "lastTransitionTime">,
  previous: RemoteNamespaceCondition[] | undefined,
  now: Date,
): Condition {
  const old = previous?.find((c) => c.type === next.type);
  const lastTransitionTime =
    old && old.status === next.status && old.lastTransitionTime ? old.lastTransitionTime : stamp(now);
  return { type: next.type, status: next.status, lastTransitionTime, reason: next.reason, message: next.message };
}

export function offloadingPhase(deleting: boolean, required: number, ready: number, failed: number): OffloadingPhase {
  if (deleting) return OffloadingPhase.Terminating;
  if (required === 0) return OffloadingPhase.NoClusterSelected;
  if (ready === required) return OffloadingPhase.Ready;
  if (failed === required) return OffloadingPhase.AllFailed;
  if (failed > 0) return OffloadingPhase.SomeFailed;
  return OffloadingPhase.InProgress;
}

export function computeStatus(input: StatusInput): NamespaceOffloadingStatus {
  const conditions: Record<string, RemoteNamespaceCondition[]> = {};
  let required = 0,
    ready = 0,
    failed = 0;
  // Sorted so the same inputs always give the same object (no needless status writes).
  for (const c of [...input.clusters].sort((a, b) => a.name.localeCompare(b.name))) {
    if (c.requested) required++;
    if (c.phase === MappingPhase.Accepted) ready++;
    if (c.phase === MappingPhase.CreationLoopBackOff) failed++;
    // While terminating, a cluster whose twin is gone drops out, so an empty map means done.
    if (input.deleting && !c.requested && !c.phase) continue;
    const previous = input.previous?.remoteNamespacesConditions?.[c.name];
    const list = [withTransition(requiredCondition(c.requested, input.notSelected), previous, input.now)];
    // A cluster never selected (or whose twin is gone) has no Ready condition, as in Liqo's example.
    if (c.requested || c.phase)
      list.push(withTransition(readyCondition(c.phase, c.namespaceMapKey), previous, input.now));
    conditions[c.name] = list;
  }
  const status: NamespaceOffloadingStatus = {
    remoteNamespaceName: input.remoteNamespaceName,
    offloadingPhase: offloadingPhase(input.deleting, required, ready, failed),
    remoteNamespacesConditions: conditions,
  };
  const generation = input.observedGeneration ?? input.previous?.observedGeneration;
  if (generation !== undefined) status.observedGeneration = generation;
  return status;
}

/** Compares two statuses as the API server would store them (key order and undefined fields ignored). */
export function sameStatus(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .filter((k) => v[k] !== undefined)
            .map((k) => [k, v[k]]),
        )
      : v,
  );
}
