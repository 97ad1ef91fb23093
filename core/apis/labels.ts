// Liqo's well-known labels, annotations, taints and finalizers, with the values users and
// tools (kubectl selectors, Helm values, webhooks) rely on. Keys are Liqo v0.5.4's (pkg/consts,
// pkg/discovery, pkg/virtualKubelet/forge) unless a comment says otherwise.

/** On virtual nodes: liqo.io/type=virtual-node (`kubectl get node -l liqo.io/type=virtual-node`). */
export const TYPE_LABEL = "liqo.io/type";
export const VIRTUAL_NODE_TYPE = "virtual-node";
export const VIRTUAL_NODE_SELECTOR = `${TYPE_LABEL}=${VIRTUAL_NODE_TYPE}`;

/** On virtual nodes and other per-peer objects: the ID of the remote cluster they stand for. */
export const REMOTE_CLUSTER_ID_LABEL = "liqo.io/remote-cluster-id";

/** On namespaces: pods created here get the toleration for virtual nodes (value "true"). */
export const SCHEDULING_ENABLED_LABEL = "liqo.io/scheduling-enabled";
export const SCHEDULING_ENABLED_VALUE = "true";

/** On Services: keep the same NodePort in the remote cluster. */
export const FORCE_REMOTE_NODE_PORT_ANNOTATION = "liqo.io/force-remote-node-port";

/**
 * On reflected objects: do not reflect this one. Liqo's v0.5 documentation describes it
 * (reflection rules); the constant first appears in pkg/consts in v0.6.0, with this key.
 */
export const SKIP_REFLECTION_ANNOTATION = "liqo.io/skip-reflection";

/** The taint on every virtual node; only pods that tolerate it (offloadable ones) run there. */
export const VIRTUAL_NODE_TAINT = {
  key: "virtual-node.liqo.io/not-allowed",
  value: "true",
  effect: "NoExecute",
} as const;
/** The toleration the webhook adds to offloadable pods: Exists, so any value matches. */
export const VIRTUAL_NODE_TOLERATION = {
  key: VIRTUAL_NODE_TAINT.key,
  operator: "Exists",
  effect: "NoExecute",
} as const;

// Replication of CRDs between peers (pkg/consts/replication.go).
/** "true" on a local object that must be replicated to the peer; also the Local printer column. */
export const REPLICATION_REQUESTED_LABEL = "liqo.io/replication";
export const REPLICATION_ORIGIN_LABEL = "liqo.io/originID";
export const REPLICATION_DESTINATION_LABEL = "liqo.io/remoteID";
/** "true" on an object a peer created here through replication. */
export const REPLICATION_STATUS_LABEL = "liqo.io/replicated";
export const OWNERSHIP_LABEL = "liqo.io/ownership";
export const MANAGED_BY_LABEL = "liqo.io/managed-by";
export const MANAGED_BY_SHADOWPOD = "shadowpod";
/** On local pods that have been offloaded. */
export const LOCAL_POD_LABEL = "liqo.io/shadowPod";
/** On a ShadowPod: how many times the provider re-created its pod (the consumer adds it to restart counts). */
export const RECREATIONS_ANNOTATION = "liqo.io/shadowpod-recreations";
/** The component the provider's ShadowPod Events name (the consumer shows its PodCreationFailed on the local pod). */
export const SHADOWPOD_EVENT_COMPONENT = "liqo-shadowpod";

// Reflection (pkg/virtualKubelet/forge/meta.go): who reflected an object and where to.
export const REFLECTION_ORIGIN_LABEL = "virtualkubelet.liqo.io/origin";
export const REFLECTION_DESTINATION_LABEL = "virtualkubelet.liqo.io/destination";
/** Liqo's field manager for reflected objects. */
export const REFLECTION_FIELD_MANAGER = "reflection.liqo.io";
/**
 * The provider's service continuity (core/continuity) marking a reflected EndpointSlice's endpoints
 * not ready while its consumer is unreachable; the reflection engine leaves its fields alone.
 */
export const CONTINUITY_FIELD_MANAGER = "liqo-service-continuity";

// Remote namespaces (pkg/consts/namespace_mapping.go).
export const REMOTE_NAMESPACE_MANAGED_BY_ANNOTATION = "liqo.io/managed-by-namespace-map";
export const REMOTE_NAMESPACE_ORIGINAL_NAME_ANNOTATION = "liqo.io/original-name";

// Discovery and tenant namespaces (pkg/discovery/const.go).
export const TENANT_NAMESPACE_LABEL = "discovery.liqo.io/tenant-namespace";
export const DISCOVERY_CLUSTER_ID_LABEL = "discovery.liqo.io/cluster-id";
/** On a consumer's tenant namespace at the provider ("true"): its ShadowPods get no new pods (liqoctl cordon tenant). */
export const TENANT_CORDONED_ANNOTATION = "liqo.io/tenant-cordoned";
export const AUTH_TOKEN_LABEL = "discovery.liqo.io/auth-token";
export const DISCOVERY_TYPE_LABEL = "discovery.liqo.io/discovery-type";
export const DiscoveryType = { LAN: "LAN", WAN: "WAN", Manual: "Manual", IncomingPeering: "IncomingPeering" } as const;
/** On ForeignClusters found on the LAN or through a SearchDomain: "true" when that discovery allows peering by itself (autojoin). */
export const AUTOJOIN_LABEL = "discovery.liqo.io/autojoin";
/** On ForeignClusters found through a SearchDomain: its name. */
export const SEARCH_DOMAIN_LABEL = "discovery.liqo.io/searchdomain";
export const TENANT_NAMESPACE_PREFIX = "liqo-tenant";

// Storage (pkg/consts/storage.go).
export const STORAGE_PROVISIONER = "liqo.io/storage";
export const STORAGE_AVAILABLE_LABEL = "storage.liqo.io/available";
/** On a virtual node that offers storage: the provider's class its new claims get. */
export const STORAGE_CLASS_ANNOTATION = "storage.liqo.io/storage-class";
/** On a provider's copy of a claim: the UID of the consumer's claim it was made for (a claim made again gets a new copy). */
export const ORIGIN_CLAIM_UID_ANNOTATION = "storage.liqo.io/origin-claim-uid";
export const VIRTUAL_PVC_NAMESPACE_LABEL = "storage.liqo.io/virtual-pvc-namespace";
export const VIRTUAL_PVC_NAME_LABEL = "storage.liqo.io/virtual-pvc-name";

// Finalizers (pkg/consts/virtualNode.go).
export const NODE_FINALIZER = "liqo.io/node";
export const VIRTUAL_KUBELET_FINALIZER = "liqo.io/virtualkubelet";

/** Cluster labels users set at install time end up on the virtual node. */
export const PROVIDER_CLUSTER_LABEL = "liqo.io/provider";
