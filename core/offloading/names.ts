// Names Liqo derives from cluster identities: the unique name of a cluster, the tenant namespace
// of a peering, and the name a local namespace gets in the remote clusters.
import { createHash } from "node:crypto";
import { NamespaceMappingStrategy, TENANT_NAMESPACE_PREFIX, type ClusterIdentity } from "../apis/index.ts";

/**
 * `<clusterName>-<6 hex chars>`: the hex are the first 3 bytes of sha256(clusterID), as in Liqo's
 * foreigncluster.UniqueName, so two clusters with the same name still get different names.
 */
export function uniqueName(cluster: ClusterIdentity): string {
  const hash = createHash("sha256").update(cluster.clusterID).digest("hex");
  return `${cluster.clusterName}-${hash.slice(0, 6)}`;
}

/** The local tenant namespace of a peering: `liqo-tenant-<uniqueName(remote)>`. */
export function tenantNamespaceName(remote: ClusterIdentity): string {
  return `${TENANT_NAMESPACE_PREFIX}-${uniqueName(remote)}`;
}

/** One NamespaceMap per remote cluster, named after its unique name (the key of the status conditions). */
export function namespaceMapName(remote: ClusterIdentity): string {
  return uniqueName(remote);
}

/**
 * The twin namespace's name. DefaultName appends the local cluster's unique name so twins from
 * different consumers never collide; EnforceSameName keeps the name for cross-namespace DNS.
 */
export function remoteNamespaceName(
  namespace: string,
  strategy: NamespaceMappingStrategy,
  local: ClusterIdentity,
): string {
  if (strategy === NamespaceMappingStrategy.EnforceSameName) return namespace;
  return `${namespace}-${uniqueName(local)}`;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Why a namespace name cannot be created, or undefined when it can. */
export function namespaceNameProblem(name: string): string | undefined {
  if (name.length > 63)
    return `"${name}" is ${name.length} characters long, more than the 63 a namespace name may have`;
  if (!DNS_LABEL.test(name)) return `"${name}" is not a DNS-1123 label (lowercase letters, digits and '-')`;
  return undefined;
}
