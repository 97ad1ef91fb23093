// The NamespaceMaps on the local cluster: one per remote cluster, in that peering's tenant
// namespace, labelled with the remote cluster ID. The NamespaceOffloading controller writes their
// spec.desiredMapping; the NamespaceMap controller of each peering acts on it.
import {
  ForeignClusterResource,
  NamespaceMapResource,
  REMOTE_CLUSTER_ID_LABEL,
  REPLICATION_STATUS_LABEL,
  type ClusterIdentity,
  type ForeignCluster,
  type NamespaceMap,
} from "../apis/index.ts";
import { KubeApiError } from "../kube/errors.ts";
import type { KubeClient } from "../kube/client.ts";
import { objectKey, type KubeObject } from "../kube/resources.ts";
import { namespaceMapName, tenantNamespaceName } from "./names.ts";

export type NamespaceMapObject = NamespaceMap & KubeObject;

/** Selects the NamespaceMaps this cluster owns (not ones a peer replicated here). */
export const LOCAL_NAMESPACE_MAPS_SELECTOR = `${REMOTE_CLUSTER_ID_LABEL},${REPLICATION_STATUS_LABEL}!=true`;

export const namespaceMapKey = (nm: KubeObject) => objectKey(nm);

/** The local NamespaceMaps by remote cluster ID. */
export async function localNamespaceMaps(client: KubeClient): Promise<Map<string, NamespaceMapObject>> {
  const list = await client.list<NamespaceMapObject>(NamespaceMapResource, {
    labelSelector: LOCAL_NAMESPACE_MAPS_SELECTOR,
  });
  const byCluster = new Map<string, NamespaceMapObject>();
  for (const nm of list.items) byCluster.set(nm.metadata.labels![REMOTE_CLUSTER_ID_LABEL]!, nm);
  return byCluster;
}

export interface RemoteClusterInfo {
  identity: ClusterIdentity;
  tenantNamespace: string;
}

/** The identity and tenant namespace of a peer, from its ForeignCluster; undefined when there is none. */
export async function remoteClusterInfo(client: KubeClient, clusterID: string): Promise<RemoteClusterInfo | undefined> {
  const list = await client.list<ForeignCluster & KubeObject>(ForeignClusterResource);
  const fc = list.items.find((f) => f.spec?.clusterIdentity?.clusterID === clusterID);
  const identity = fc?.spec?.clusterIdentity;
  if (!identity) return undefined;
  return { identity, tenantNamespace: fc.status?.tenantNamespace?.local || tenantNamespaceName(identity) };
}

/**
 * Creates the NamespaceMap of a peer if it is missing, owned by its virtual node so that it goes
 * away with the peering (Liqo's virtual node controller does the same).
 */
export async function ensureNamespaceMap(
  client: KubeClient,
  remote: RemoteClusterInfo,
  owner?: { name: string; uid: string },
): Promise<NamespaceMapObject> {
  const name = namespaceMapName(remote.identity);
  const existing = await client.find<NamespaceMapObject>(NamespaceMapResource, name, remote.tenantNamespace);
  if (existing) return existing;
  const body: KubeObject = {
    apiVersion: "virtualkubelet.liqo.io/v1alpha1",
    kind: "NamespaceMap",
    metadata: {
      name,
      namespace: remote.tenantNamespace,
      labels: { [REMOTE_CLUSTER_ID_LABEL]: remote.identity.clusterID },
      ownerReferences: owner
        ? [{ apiVersion: "v1", kind: "Node", name: owner.name, uid: owner.uid, controller: true }]
        : undefined,
    },
    spec: { desiredMapping: {} },
  };
  try {
    return await client.create<NamespaceMapObject>(NamespaceMapResource, body);
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 409)
      return client.get<NamespaceMapObject>(NamespaceMapResource, name, remote.tenantNamespace);
    throw err;
  }
}

/** Sets (or with null removes) one desired mapping; returns the NamespaceMap as stored. */
export async function setDesiredMapping(
  client: KubeClient,
  nm: NamespaceMapObject,
  localNamespace: string,
  remoteNamespace: string | null,
): Promise<NamespaceMapObject> {
  const current = nm.spec?.desiredMapping?.[localNamespace];
  if ((remoteNamespace === null && current === undefined) || current === remoteNamespace) return nm;
  return client.mergePatch<NamespaceMapObject>(NamespaceMapResource, nm.metadata.name!, nm.metadata.namespace, {
    spec: { desiredMapping: { [localNamespace]: remoteNamespace } },
  });
}
