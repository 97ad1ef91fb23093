// The provider's ForeignCluster for a consumer that asked for resources: created when absent (as
// Liqo's auth service does for an incoming peering), and its IncomingPeering condition kept in
// step with the offer. Only that one condition is ever written here.
import {
  ForeignClusterResource,
  parseForeignCluster,
  PeeringConditionStatus,
  type ClusterIdentity,
  type ForeignCluster,
  type PeeringCondition,
} from "../../apis/index.ts";
import { DISCOVERY_CLUSTER_ID_LABEL, DISCOVERY_TYPE_LABEL, DiscoveryType } from "../../apis/labels.ts";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";

/** Denied: the ForeignCluster says incomingPeeringEnabled: No, so no offer is made. */
export type IncomingStatus = "None" | "Pending" | "Established" | "Disconnecting" | "Denied";

export class ForeignClusterError extends Error {
  override name = "ForeignClusterError";
}

/** The ForeignCluster a consumer gets when it first asks for resources: incoming only, found by its cluster ID. */
export function incomingForeignCluster(consumer: ClusterIdentity, authUrl: string): ForeignCluster {
  const fc = {
    apiVersion: "discovery.liqo.io/v1alpha1",
    kind: "ForeignCluster",
    metadata: {
      name: consumer.clusterName,
      labels: {
        [DISCOVERY_CLUSTER_ID_LABEL]: consumer.clusterID,
        [DISCOVERY_TYPE_LABEL]: DiscoveryType.IncomingPeering,
      },
    },
    spec: {
      clusterIdentity: { ...consumer },
      foreignAuthUrl: authUrl,
      outgoingPeeringEnabled: "Auto",
      incomingPeeringEnabled: "Auto",
      networkingEnabled: "Yes",
      insecureSkipTLSVerify: true,
    },
  };
  try {
    return parseForeignCluster(fc);
  } catch (err) {
    throw new ForeignClusterError(
      `cannot record cluster ${consumer.clusterName} (${consumer.clusterID}) as a ForeignCluster: ${(err as Error).message}; ` +
        `its ResourceRequest's spec.authUrl must be the https URL of its authentication service`,
      { cause: err },
    );
  }
}

/** Creates the ForeignCluster unless one with that cluster ID exists; refuses to take over a name held by another ID. */
export async function ensureIncomingForeignCluster(
  client: KubeClient,
  existing: ForeignCluster | undefined,
  consumer: ClusterIdentity,
  authUrl: string,
): Promise<ForeignCluster> {
  if (existing) return existing;
  const desired = incomingForeignCluster(consumer, authUrl);
  try {
    return await client.create<ForeignCluster>(ForeignClusterResource, desired);
  } catch (err) {
    if (!(err instanceof KubeApiError && err.conflict)) throw err;
    const taken = await client.get<ForeignCluster>(ForeignClusterResource, desired.metadata.name!);
    if (taken.spec?.clusterIdentity?.clusterID === consumer.clusterID) return taken;
    throw new ForeignClusterError(
      `ForeignCluster ${desired.metadata.name} already exists for cluster ID ${taken.spec?.clusterIdentity?.clusterID}, ` +
        `not ${consumer.clusterID}: two clusters claim the name ${consumer.clusterName}; rename one of them or delete the stale ForeignCluster`,
    );
  }
}

/** The conditions with IncomingPeering set to `status`; the same array when nothing changes. */
export function withIncoming(
  conditions: PeeringCondition[] | undefined,
  status: IncomingStatus,
  reason: string,
  message: string,
  now = new Date(),
): PeeringCondition[] | undefined {
  const list = conditions ?? [];
  const current = list.find((c) => c.type === "IncomingPeering");
  if (current && current.status === status && current.reason === reason && current.message === message)
    return undefined;
  if (!current && status === PeeringConditionStatus.None) return undefined;
  const next: PeeringCondition = {
    type: "IncomingPeering",
    status,
    reason,
    message,
    lastTransitionTime:
      current?.status === status && current.lastTransitionTime
        ? current.lastTransitionTime
        : now.toISOString().replace(/\.\d+Z$/, "Z"),
  };
  return current ? list.map((c) => (c === current ? next : c)) : [...list, next];
}

/**
 * Writes the IncomingPeering condition and, as Liqo's provider shows it, the local tenant namespace
 * (optimistic: a concurrent writer makes this fail with 409 and retry).
 */
export async function setIncomingPeering(
  client: KubeClient,
  fc: ForeignCluster,
  status: IncomingStatus,
  reason: string,
  message: string,
  tenantNamespace?: string,
): Promise<boolean> {
  const next = withIncoming(fc.status?.peeringConditions, status, reason, message);
  const tenantMissing = !!tenantNamespace && fc.status?.tenantNamespace?.local !== tenantNamespace;
  if (!next && !tenantMissing) return false;
  await client.mergePatch(
    ForeignClusterResource,
    fc.metadata.name!,
    undefined,
    {
      metadata: { resourceVersion: fc.metadata.resourceVersion },
      status: {
        ...(next ? { peeringConditions: next } : {}),
        ...(tenantMissing ? { tenantNamespace: { local: tenantNamespace } } : {}),
      },
    },
    "status",
  );
  return true;
}
