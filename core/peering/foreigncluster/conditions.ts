// The pure part of the ForeignCluster controller: what the user asked for (spec, deletion, force)
// and the peering conditions Liqo documents (types OutgoingPeering, IncomingPeering, NetworkStatus,
// AuthenticationStatus; statuses None, Pending, Established, Disconnecting, Denied, Error).
import {
  AUTOJOIN_LABEL,
  DISCOVERY_TYPE_LABEL,
  DiscoveryType,
  type ForeignCluster,
  type PeeringCondition,
  type PeeringConditionStatus,
  type PeeringConditionType,
} from "../../apis/index.ts";
import type { KubeObject } from "../../kube/resources.ts";

export type ForeignClusterObject = ForeignCluster & KubeObject;

/** Keeps a ForeignCluster until the peering it owns (identity, request, virtual node) is gone. */
export const FOREIGN_CLUSTER_FINALIZER = "foreigncluster.liqo.io/peering";
/**
 * `liqoctl unpeer --force` sets this: tear down without waiting for the remote cluster (it may be
 * gone for good). Local state goes at once; remote calls are tried once and their failures ignored.
 */
export const FORCE_UNPEER_ANNOTATION = "liqo.io/force-unpeer";

export interface ConditionUpdate {
  type: PeeringConditionType;
  status: PeeringConditionStatus;
  reason: string;
  message: string;
}

/**
 * The conditions with `update` applied. lastTransitionTime moves only when the status changes
 * (Kubernetes' convention), so a reconcile that repeats itself writes nothing new.
 */
export function withCondition(
  conditions: readonly PeeringCondition[] | undefined,
  update: ConditionUpdate,
  now: Date,
): PeeringCondition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === update.type);
  const old = i >= 0 ? list[i] : undefined;
  const next: PeeringCondition = {
    type: update.type,
    status: update.status,
    reason: update.reason,
    message: update.message,
    lastTransitionTime:
      old && old.status === update.status && old.lastTransitionTime
        ? old.lastTransitionTime
        : now.toISOString().replace(/\.\d+Z$/, "Z"),
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

/** What a ForeignCluster says of the other direction before the remote cluster peers with this one. */
export const NO_INCOMING_PEERING = {
  type: "IncomingPeering",
  status: "None",
  reason: "NoIncomingPeering",
  message: "the remote cluster does not use this one's resources",
} as const;

export function conditionOf(fc: ForeignClusterObject, type: PeeringConditionType): PeeringCondition | undefined {
  return fc.status?.peeringConditions?.find((c) => c.type === type);
}

export function statusOf(fc: ForeignClusterObject, type: PeeringConditionType): PeeringConditionStatus {
  return conditionOf(fc, type)?.status ?? "None";
}

/** A peering at a glance, as liqoctl status prints it and the admin view serves it. */
export interface PeeringSummary {
  /** Each direction's and step's status; None when it has no condition yet. */
  outgoing: PeeringConditionStatus;
  incoming: PeeringConditionStatus;
  network: PeeringConditionStatus;
  authentication: PeeringConditionStatus;
  /** The conditions neither None nor Established, in the order above: what a reader looks at. */
  unsettled: PeeringCondition[];
}

export function peeringSummary(fc: { status?: { peeringConditions?: readonly PeeringCondition[] } }): PeeringSummary {
  const find = (type: PeeringConditionType) => fc.status?.peeringConditions?.find((c) => c.type === type);
  const status = (c: PeeringCondition | undefined) => c?.status ?? "None";
  const outgoing = find("OutgoingPeering");
  const incoming = find("IncomingPeering");
  const network = find("NetworkStatus");
  const authentication = find("AuthenticationStatus");
  return {
    outgoing: status(outgoing),
    incoming: status(incoming),
    network: status(network),
    authentication: status(authentication),
    unsettled: [outgoing, incoming, network, authentication].filter(
      (c): c is PeeringCondition => c !== undefined && c.status !== "None" && c.status !== "Established",
    ),
  };
}

/** Whether the conditions differ in anything but lastTransitionTime. */
export function conditionsChanged(a: readonly PeeringCondition[] | undefined, b: readonly PeeringCondition[]): boolean {
  const key = (l: readonly PeeringCondition[] | undefined) =>
    JSON.stringify([...(l ?? [])].map((c) => [c.type, c.status, c.reason, c.message]).sort());
  return key(a) !== key(b);
}

/**
 * Whether this cluster should peer towards the remote one. Auto follows how the ForeignCluster was
 * discovered, as in Liqo: made by hand or by `liqoctl peer out-of-band` (Manual, or no discovery
 * label) means Yes; made by the provider side for a consumer that asked us for resources
 * (IncomingPeering) or found on the LAN means No, until someone says Yes (`liqoctl peer <name>`).
 */
export function outgoingWanted(fc: ForeignClusterObject): boolean {
  if (fc.metadata.deletionTimestamp) return false;
  const enabled = fc.spec.outgoingPeeringEnabled ?? "Auto";
  if (enabled !== "Auto") return enabled === "Yes";
  const discovery = fc.metadata.labels?.[DISCOVERY_TYPE_LABEL];
  // Found on the LAN or through a SearchDomain: peered by itself only when that discovery allows it (autojoin).
  if (discovery === DiscoveryType.LAN || discovery === DiscoveryType.WAN)
    return fc.metadata.labels?.[AUTOJOIN_LABEL] === "true";
  return discovery === undefined || discovery === DiscoveryType.Manual;
}

export const forced = (fc: ForeignClusterObject) => fc.metadata.annotations?.[FORCE_UNPEER_ANNOTATION] === "true";

/** The ForeignCluster (other than `fc`) that keeps a clusterID when two claim it: the older one, then the first by name. */
export function duplicateOwner(
  fc: ForeignClusterObject,
  all: readonly ForeignClusterObject[],
): ForeignClusterObject | undefined {
  const id = fc.spec.clusterIdentity?.clusterID;
  if (!id) return undefined;
  const rank = (f: ForeignClusterObject) => `${f.metadata.creationTimestamp ?? ""}/${f.metadata.name}`;
  const claimants = all.filter((f) => f.spec.clusterIdentity?.clusterID === id && !f.metadata.deletionTimestamp);
  const first = claimants.sort((a, b) => (rank(a) < rank(b) ? -1 : 1))[0];
  return first && first.metadata.name !== fc.metadata.name ? first : undefined;
}

/** Why the authentication service's answer to an identity request ends in this condition. */
export function authenticationFailure(
  status: number,
  message: string,
  clusterName: string,
  reason?: string,
): ConditionUpdate {
  const base = { type: "AuthenticationStatus" as const };
  // The token was right, but the provider does not accept peerings from us: only its administrator can change that.
  if (status === 403 && reason === "IncomingPeeringDisabled")
    return {
      ...base,
      status: "Denied",
      reason: "IncomingPeeringDisabled",
      message: `${clusterName} refused the peering: ${message}`,
    };
  if (status === 401 || status === 403) {
    return {
      ...base,
      status: "Denied",
      reason: "TokenRefused",
      message: `${clusterName} refused the auth token: ${message} (run liqoctl generate peer-command on ${clusterName} and run the printed command here again)`,
    };
  }
  // The provider is still removing our previous identity (an unpeer moments ago): it will pass.
  if (status === 409 && /being revoked/.test(message))
    return {
      ...base,
      status: "Pending",
      reason: "IdentityBeingRevoked",
      message: `${clusterName} is still revoking the previous identity: ${message}`,
    };
  if (status === 409)
    return {
      ...base,
      status: "Error",
      reason: "IdentityConflict",
      message: `${clusterName} refused to issue an identity: ${message}`,
    };
  if (status === 429)
    return {
      ...base,
      status: "Pending",
      reason: "RateLimited",
      message: `${clusterName} is rate-limiting identity requests from here: ${message}`,
    };
  if (status >= 400 && status < 500)
    return {
      ...base,
      status: "Error",
      reason: "IdentityRequestRefused",
      message: `${clusterName} refused the identity request (HTTP ${status}): ${message}`,
    };
  return {
    ...base,
    status: "Pending",
    reason: "AuthServiceError",
    message: `${clusterName}'s authentication service failed (HTTP ${status}): ${message}; retrying`,
  };
}

/** The capacity of the virtual node from an offer's resourceQuota.hard. */
export function offeredResources(hard: Record<string, string | number> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(hard ?? {}).map(([k, v]) => [k, String(v)]));
}
