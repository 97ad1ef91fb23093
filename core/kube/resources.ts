// Where a kind lives in the API: group, version, plural and scope. The common kinds are listed;
// any other (CRDs, plugin-declared kinds) is found through discovery by the client.

export interface ResourceRef {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  [k: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [k: string]: unknown;
}

export interface ObjectList<T extends KubeObject = KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

const ref = (group: string, version: string, kind: string, plural: string, namespaced = true): ResourceRef => ({
  group,
  version,
  kind,
  plural,
  namespaced,
});

export const Resources = {
  namespaces: ref("", "v1", "Namespace", "namespaces", false),
  nodes: ref("", "v1", "Node", "nodes", false),
  pods: ref("", "v1", "Pod", "pods"),
  services: ref("", "v1", "Service", "services"),
  configMaps: ref("", "v1", "ConfigMap", "configmaps"),
  secrets: ref("", "v1", "Secret", "secrets"),
  serviceAccounts: ref("", "v1", "ServiceAccount", "serviceaccounts"),
  events: ref("", "v1", "Event", "events"),
  persistentVolumeClaims: ref("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
  persistentVolumes: ref("", "v1", "PersistentVolume", "persistentvolumes", false),
  endpointSlices: ref("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices"),
  deployments: ref("apps", "v1", "Deployment", "deployments"),
  daemonSets: ref("apps", "v1", "DaemonSet", "daemonsets"),
  replicaSets: ref("apps", "v1", "ReplicaSet", "replicasets"),
  ingresses: ref("networking.k8s.io", "v1", "Ingress", "ingresses"),
  networkPolicies: ref("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies"),
  leases: ref("coordination.k8s.io", "v1", "Lease", "leases"),
  roles: ref("rbac.authorization.k8s.io", "v1", "Role", "roles"),
  roleBindings: ref("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
  clusterRoles: ref("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false),
  clusterRoleBindings: ref("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false),
  customResourceDefinitions: ref(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    false,
  ),
} as const;

export function apiVersionOf(res: ResourceRef): string {
  return res.group ? `${res.group}/${res.version}` : res.version;
}

export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf("/");
  return slash < 0
    ? { group: "", version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

export function builtinResource(apiVersion: string, kind: string): ResourceRef | undefined {
  const { group, version } = splitApiVersion(apiVersion);
  return Object.values(Resources).find((r) => r.group === group && r.version === version && r.kind === kind);
}

/** The URL path of a collection or of one object (and optionally a subresource). */
export function resourcePath(res: ResourceRef, namespace?: string, name?: string, subresource?: string): string {
  let path = res.group ? `/apis/${res.group}/${res.version}` : `/api/${res.version}`;
  if (res.namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${res.plural}`;
  if (name) path += `/${encodeURIComponent(name)}`;
  if (subresource) path += `/${subresource}`;
  return path;
}

export function objectKey(obj: { metadata?: { namespace?: string; name?: string } }): string {
  const m = obj.metadata ?? {};
  return m.namespace ? `${m.namespace}/${m.name ?? ""}` : (m.name ?? "");
}

export function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function splitKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf("/");
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
