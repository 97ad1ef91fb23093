// A remote cluster's identity here: its tenant namespace (Liqo's name and labels), a
// ServiceAccount with a long-lived token Secret in it, and the RoleBindings and the
// ClusterRoleBinding of rbac.ts. Issuing is idempotent; revoking removes all of it.
import {
  DISCOVERY_CLUSTER_ID_LABEL,
  TENANT_NAMESPACE_LABEL,
  REMOTE_CLUSTER_ID_LABEL,
  REMOTE_NAMESPACE_MANAGED_BY_ANNOTATION,
  REPLICATION_ORIGIN_LABEL,
} from "../../apis/labels.ts";
import {
  ForeignClusterResource,
  ResourceRequestResource,
  type ClusterIdentity,
  type ForeignCluster,
} from "../../apis/index.ts";
import { KubeApiError } from "../../kube/errors.ts";
import type { KubeClient } from "../../kube/client.ts";
import { objectKey, Resources, type KubeObject } from "../../kube/resources.ts";
import { tenantNamespaceName } from "../../offloading/names.ts";
import {
  AUTH_FIELD_MANAGER,
  ClusterRoleBindings,
  ClusterRoles,
  MANAGED_BY,
  PEERING_ROLE,
  REMOTE_SA_PREFIX,
  RoleBindings,
  TWIN_NAMESPACE_ROLE,
  TWIN_NAMESPACES_ROLE,
} from "./rbac.ts";
import { bindPluginRole, pluginClusterRoleName } from "./plugin-grants.ts";

/** Recorded on the tenant namespace: the name the identity was issued to (see the duplicate-ID check). */
export const CLUSTER_NAME_ANNOTATION = "discovery.liqo.io/cluster-name";

export const remoteServiceAccountName = (clusterId: string) => `${REMOTE_SA_PREFIX}${clusterId}`;
export const remoteTokenSecretName = (clusterId: string) => `${REMOTE_SA_PREFIX}${clusterId}-token`;
/** Liqo's RoleBinding naming in the tenant namespace (tenantNamespace roleBindingRoot). */
export const peeringRoleBindingName = () => `liqo-binding-${PEERING_ROLE}`;
export const twinNamespacesBindingName = (clusterId: string) => `${TWIN_NAMESPACES_ROLE}-${clusterId}`;

export class IdentityConflictError extends Error {
  override name = "IdentityConflictError";
}

export interface IssuedIdentity {
  namespace: string;
  serviceAccount: string;
  token: string;
}

const idLabels = (clusterId: string) => ({ ...MANAGED_BY, [DISCOVERY_CLUSTER_ID_LABEL]: clusterId });
const saSubject = (clusterId: string, namespace: string) => ({
  kind: "ServiceAccount",
  name: remoteServiceAccountName(clusterId),
  namespace,
});

/** The tenant namespace of a remote cluster, found by Liqo's label (its name embeds the cluster name). */
export async function findTenantNamespace(client: KubeClient, clusterId: string): Promise<KubeObject | undefined> {
  const list = await client.list(Resources.namespaces, {
    labelSelector: `${DISCOVERY_CLUSTER_ID_LABEL}=${clusterId},${TENANT_NAMESPACE_LABEL}`,
  });
  return list.items.find((ns) => !ns.metadata.deletionTimestamp) ?? list.items[0];
}

async function createOrGet(client: KubeClient, res: typeof Resources.namespaces, obj: KubeObject): Promise<KubeObject> {
  const found = await client.find(res, obj.metadata.name!, obj.metadata.namespace);
  if (found) return found;
  try {
    return await client.create(res, obj);
  } catch (err) {
    if (err instanceof KubeApiError && err.conflict) return client.get(res, obj.metadata.name!, obj.metadata.namespace);
    throw err;
  }
}

export interface IssueOptions {
  /** How long to wait for the controller manager to fill the token Secret. */
  tokenTimeoutMs?: number;
}

/** Creates (or finds) everything the remote cluster needs and returns its token. */
export async function issueIdentity(
  client: KubeClient,
  remote: ClusterIdentity,
  options: IssueOptions = {},
): Promise<IssuedIdentity> {
  const id = remote.clusterID;
  let ns = await findTenantNamespace(client, id);
  if (ns?.metadata.deletionTimestamp) {
    throw new IdentityConflictError(
      `the identity of cluster ${id} is being revoked (namespace ${ns.metadata.name} is terminating); retry in a few seconds`,
    );
  }
  // An unpeer moments ago: the controller manager revokes this identity once the peering's
  // ResourceRequest is released. Issued now, it would be revoked right after, under the new peering.
  const leaving = await leavingRequest(client, id);
  if (leaving) {
    throw new IdentityConflictError(
      `the identity of cluster ${id} is being revoked (the previous peering's ResourceRequest ${leaving} is being deleted); retry in a few seconds`,
    );
  }
  const issuedTo = ns?.metadata.annotations?.[CLUSTER_NAME_ANNOTATION];
  if (ns && issuedTo && issuedTo !== remote.clusterName) {
    // Two clusters must never share an identity: a second one with the same ID is refused, not merged.
    throw new IdentityConflictError(
      `cluster ID ${id} already has an identity here, issued to cluster ${issuedTo}, not ${remote.clusterName}; ` +
        `cluster IDs must be unique (if ${issuedTo} was renamed, revoke its identity on this cluster first)`,
    );
  }
  ns ??= await createOrGet(client, Resources.namespaces, {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: {
      name: tenantNamespaceName(remote),
      labels: { ...idLabels(id), [TENANT_NAMESPACE_LABEL]: "true" },
      annotations: { [CLUSTER_NAME_ANNOTATION]: remote.clusterName },
    },
  });
  const namespace = ns.metadata.name!;
  if (ns.metadata.labels?.[DISCOVERY_CLUSTER_ID_LABEL] !== id) {
    throw new IdentityConflictError(
      `namespace ${namespace} exists but is not the tenant namespace of cluster ${id}; delete or relabel it`,
    );
  }

  await createOrGet(client, Resources.serviceAccounts, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: remoteServiceAccountName(id), namespace, labels: idLabels(id) },
    // The token below is the only credential; no auto-mounted tokens for pods that run as it.
    automountServiceAccountToken: false,
  });
  await createOrGet(client, Resources.secrets, {
    apiVersion: "v1",
    kind: "Secret",
    type: "kubernetes.io/service-account-token",
    metadata: {
      name: remoteTokenSecretName(id),
      namespace,
      labels: idLabels(id),
      annotations: { "kubernetes.io/service-account.name": remoteServiceAccountName(id) },
    },
  });
  await client.apply(
    RoleBindings,
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: peeringRoleBindingName(), namespace, labels: idLabels(id) },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: PEERING_ROLE },
      subjects: [saSubject(id, namespace)],
    },
    { fieldManager: AUTH_FIELD_MANAGER, force: true },
  );
  await client.apply(
    ClusterRoleBindings,
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: twinNamespacesBindingName(id), labels: idLabels(id) },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: TWIN_NAMESPACES_ROLE },
      subjects: [saSubject(id, namespace)],
    },
    { fieldManager: AUTH_FIELD_MANAGER, force: true },
  );

  const token = await waitForToken(client, namespace, remoteTokenSecretName(id), options.tokenTimeoutMs ?? 30_000);
  return { namespace, serviceAccount: remoteServiceAccountName(id), token };
}

async function waitForToken(client: KubeClient, namespace: string, name: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let delay = 50;
  while (true) {
    const secret = await client.find(Resources.secrets, name, namespace);
    const b64 = (secret?.data as Record<string, string> | undefined)?.token;
    if (b64) return Buffer.from(b64, "base64").toString("utf8");
    if (Date.now() > deadline) {
      throw new Error(
        `the token Secret ${namespace}/${name} was not filled within ${timeoutMs}ms; is the kube-controller-manager's token controller running?`,
      );
    }
    await Bun.sleep(delay);
    delay = Math.min(delay * 2, 1000);
  }
}

/**
 * Lets the remote cluster work in one of its twin namespaces (Liqo: a RoleBinding named after the
 * tenant namespace, binding liqo-virtual-kubelet-remote). Refuses namespaces not labelled as its.
 */
export async function grantTwinNamespace(
  client: KubeClient,
  clusterId: string,
  twinNamespace: string,
): Promise<boolean> {
  const twin = await client.find(Resources.namespaces, twinNamespace);
  if (!twin || twin.metadata.deletionTimestamp) return false;
  if (
    twin.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL] !== clusterId ||
    !twin.metadata.annotations?.[REMOTE_NAMESPACE_MANAGED_BY_ANNOTATION]
  )
    return false;
  const tenant = await findTenantNamespace(client, clusterId);
  if (!tenant || tenant.metadata.deletionTimestamp) return false;
  await client.apply(
    RoleBindings,
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: tenant.metadata.name!, namespace: twinNamespace, labels: idLabels(clusterId) },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: TWIN_NAMESPACE_ROLE },
      subjects: [saSubject(clusterId, tenant.metadata.name!)],
    },
    { fieldManager: AUTH_FIELD_MANAGER, force: true },
  );
  // What the peer's reflector plugins were granted (plugin-grants.ts), if anything.
  await bindPluginRole(client, clusterId, twinNamespace, tenant.metadata.name!);
  return true;
}

export interface RevokeOptions {
  /** Also delete the twin namespaces the cluster created here (default false: unpeer removes them). */
  deleteTwinNamespaces?: boolean;
}

/**
 * Removes the remote cluster's identity: bindings first (so its token stops working for anything
 * at once), then the tenant namespace (its ServiceAccount and token go with it). Idempotent;
 * returns what it deleted.
 */
export async function revokeIdentity(
  client: KubeClient,
  remoteClusterId: string,
  options: RevokeOptions = {},
): Promise<string[]> {
  const deleted: string[] = [];
  const selector = `${DISCOVERY_CLUSTER_ID_LABEL}=${remoteClusterId},app.kubernetes.io/managed-by=liqo-auth`;
  if (await client.delete(ClusterRoleBindings, twinNamespacesBindingName(remoteClusterId)))
    deleted.push(`clusterrolebinding/${twinNamespacesBindingName(remoteClusterId)}`);
  if (await client.delete(ClusterRoles, pluginClusterRoleName(remoteClusterId)))
    deleted.push(`clusterrole/${pluginClusterRoleName(remoteClusterId)}`);
  for (const rb of (await client.list(RoleBindings, { labelSelector: selector })).items) {
    if (await client.delete(RoleBindings, rb.metadata.name!, rb.metadata.namespace, { uid: rb.metadata.uid }))
      deleted.push(`rolebinding/${rb.metadata.namespace}/${rb.metadata.name}`);
  }
  const tenants = (
    await client.list(Resources.namespaces, {
      labelSelector: `${DISCOVERY_CLUSTER_ID_LABEL}=${remoteClusterId},${TENANT_NAMESPACE_LABEL}`,
    })
  ).items;
  for (const ns of tenants) {
    // The token Secret is deleted explicitly: namespace deletion can take a while, the token must die now.
    if (await client.delete(Resources.secrets, remoteTokenSecretName(remoteClusterId), ns.metadata.name))
      deleted.push(`secret/${ns.metadata.name}/${remoteTokenSecretName(remoteClusterId)}`);
    if (await client.delete(Resources.serviceAccounts, remoteServiceAccountName(remoteClusterId), ns.metadata.name))
      deleted.push(`serviceaccount/${ns.metadata.name}/${remoteServiceAccountName(remoteClusterId)}`);
    // In a two-way peering the same tenant namespace also holds our outgoing peering towards that
    // cluster (its identity Secret, our ResourceRequest, its offer): revoking its identity here
    // must not take those with it. The namespace goes with the last direction.
    if (await outgoingPeeringUses(client, remoteClusterId)) continue;
    if (
      !ns.metadata.deletionTimestamp &&
      (await client.delete(Resources.namespaces, ns.metadata.name!, undefined, { uid: ns.metadata.uid }))
    )
      deleted.push(`namespace/${ns.metadata.name}`);
  }
  if (options.deleteTwinNamespaces) {
    for (const ns of (
      await client.list(Resources.namespaces, { labelSelector: `${REMOTE_CLUSTER_ID_LABEL}=${remoteClusterId}` })
    ).items) {
      if (!ns.metadata.annotations?.[REMOTE_NAMESPACE_MANAGED_BY_ANNOTATION] || ns.metadata.deletionTimestamp) continue;
      if (await client.delete(Resources.namespaces, ns.metadata.name!, undefined, { uid: ns.metadata.uid }))
        deleted.push(`namespace/${ns.metadata.name}`);
    }
  }
  return deleted;
}

/** The ResourceRequest of the remote cluster being deleted here (namespace/name), if any. */
async function leavingRequest(client: KubeClient, remoteClusterId: string): Promise<string | undefined> {
  let requests: KubeObject[];
  try {
    requests = (
      await client.list(ResourceRequestResource, { labelSelector: `${REPLICATION_ORIGIN_LABEL}=${remoteClusterId}` })
    ).items;
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return undefined; // CRDs not installed: no peering
    throw err;
  }
  const r = requests.find((x) => x.metadata.deletionTimestamp);
  return r && objectKey(r);
}

/** Whether this cluster peers (or is peering) towards the remote cluster: its tenant namespace is in use. */
async function outgoingPeeringUses(client: KubeClient, remoteClusterId: string): Promise<boolean> {
  let foreignClusters: ForeignCluster[];
  try {
    foreignClusters = (await client.list<ForeignCluster>(ForeignClusterResource)).items;
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return false; // CRDs not installed: no peering
    throw err;
  }
  return foreignClusters.some(
    (fc) =>
      fc.spec?.clusterIdentity?.clusterID === remoteClusterId &&
      (fc.spec?.outgoingPeeringEnabled === "Yes" ||
        (fc.status?.peeringConditions ?? []).some((c) => c.type === "OutgoingPeering" && c.status !== "None")),
  );
}
