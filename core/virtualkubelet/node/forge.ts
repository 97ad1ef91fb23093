// Pure shapes of the virtual node: labels, taint, status and conditions, the Lease. No I/O here;
// the caller passes the clock and the observed health, so every field is testable in isolation.
import { REMOTE_CLUSTER_ID_LABEL, TYPE_LABEL, VIRTUAL_NODE_TAINT, VIRTUAL_NODE_TYPE } from "../../apis/labels.ts";
import type { KubeObject } from "../../kube/resources.ts";

/** Quantities as Kubernetes writes them: cpu "4", memory "8Gi", pods "110", any extended resource. */
export type NodeResources = Record<string, string>;

export interface NodeIdentity {
  nodeName: string;
  remoteClusterId: string;
  remoteClusterName: string;
  /** The provider's cluster labels (e.g. liqo.io/provider, topology.kubernetes.io/region). */
  remoteClusterLabels: Record<string, string>;
  /** InternalIP of the node: where the API server reaches the kubelet API. */
  address: string;
  kubeletPort: number;
  kubeletVersion: string;
  /** Taints besides virtual-node.liqo.io/not-allowed (a VirtualNode's). */
  taints?: NodeTaint[];
  /** Annotations besides ours (the storage class new claims get). */
  annotations?: Record<string, string>;
}

export interface NodeTaint {
  key: string;
  value?: string;
  effect: string;
}

/** Every taint the node carries: ours first, then the ones asked for. */
export function nodeTaints(id: NodeIdentity): NodeTaint[] {
  return [{ ...VIRTUAL_NODE_TAINT }, ...(id.taints ?? []).map((t) => ({ ...t }))];
}

export interface NodeCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastHeartbeatTime: string;
  lastTransitionTime: string;
}

export interface VirtualNodeObject extends KubeObject {
  spec?: {
    taints?: { key: string; value?: string; effect: string; timeAdded?: string }[];
    unschedulable?: boolean;
    podCIDR?: string;
  };
  status?: {
    capacity?: NodeResources;
    allocatable?: NodeResources;
    conditions?: NodeCondition[];
    addresses?: { type: string; address: string }[];
    daemonEndpoints?: { kubeletEndpoint: { Port: number } };
    nodeInfo?: Record<string, string>;
  };
}

/** What the health checker last observed about the remote cluster. */
export interface RemoteHealth {
  healthy: boolean;
  /** Why it is unhealthy (the last error), shown in the Ready condition's message. */
  detail?: string;
  consecutiveFailures: number;
  /** When the first probe of the current run of failures started (ms); undefined while it answers. */
  failingSince?: number;
}

export function virtualNodeLabels(id: NodeIdentity): Record<string, string> {
  return {
    // The provider's labels first: ours must win on a clash, selectors depend on them.
    ...id.remoteClusterLabels,
    [TYPE_LABEL]: VIRTUAL_NODE_TYPE,
    [REMOTE_CLUSTER_ID_LABEL]: id.remoteClusterId,
    "kubernetes.io/hostname": id.nodeName,
    "kubernetes.io/role": "agent",
    "kubernetes.io/os": "linux",
    type: "virtual-kubelet",
  };
}

/** The Node's metadata and spec as first created; status is written separately (subresource). */
export function virtualNode(id: NodeIdentity): VirtualNodeObject {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: id.nodeName,
      labels: virtualNodeLabels(id),
      annotations: {
        ...id.annotations,
        "liqo.io/remote-cluster-name": id.remoteClusterName,
        "node.alpha.kubernetes.io/ttl": "0",
      },
    },
    spec: { taints: nodeTaints(id) },
  };
}

export function isVirtualNode(node: KubeObject | undefined): boolean {
  return node?.metadata.labels?.[TYPE_LABEL] === VIRTUAL_NODE_TYPE;
}

/** Whether our node stands for the same remote cluster (a different ID is someone else's virtual node). */
export function isOurVirtualNode(node: KubeObject | undefined, remoteClusterId: string): boolean {
  return isVirtualNode(node) && node?.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL] === remoteClusterId;
}

// The steady-state conditions of a healthy kubelet, with kubelet's own reasons, so tools that
// read them (kubectl describe, dashboards) see what they expect.
const healthyConditions: Omit<NodeCondition, "lastHeartbeatTime" | "lastTransitionTime">[] = [
  {
    type: "Ready",
    status: "True",
    reason: "KubeletReady",
    message: "the remote cluster is reachable; the virtual kubelet is posting ready status",
  },
  {
    type: "MemoryPressure",
    status: "False",
    reason: "KubeletHasSufficientMemory",
    message: "kubelet has sufficient memory available",
  },
  {
    type: "DiskPressure",
    status: "False",
    reason: "KubeletHasNoDiskPressure",
    message: "kubelet has no disk pressure",
  },
  {
    type: "PIDPressure",
    status: "False",
    reason: "KubeletHasSufficientPID",
    message: "kubelet has sufficient PID available",
  },
  {
    type: "NetworkUnavailable",
    status: "False",
    reason: "RouteCreated",
    message: "the virtual node reaches the remote cluster through the Liqo network fabric",
  },
];

export const REMOTE_UNREACHABLE_REASON = "RemoteClusterUnreachable";

/** The conditions for the observed health; a transition time only moves when the status changes. */
export function nodeConditions(
  health: RemoteHealth,
  remoteClusterName: string,
  now: Date,
  previous: NodeCondition[] = [],
): NodeCondition[] {
  const at = now.toISOString();
  return healthyConditions.map((base) => {
    let c = base;
    if (base.type === "Ready" && !health.healthy) {
      c = {
        type: "Ready",
        status: "False",
        reason: REMOTE_UNREACHABLE_REASON,
        message:
          `the API server of remote cluster ${remoteClusterName} failed ${health.consecutiveFailures} consecutive health checks` +
          (health.detail ? `: ${health.detail}` : ""),
      };
    }
    const before = previous.find((p) => p.type === c.type);
    const lastTransitionTime = before && before.status === c.status ? before.lastTransitionTime : at;
    return { ...c, lastHeartbeatTime: at, lastTransitionTime };
  });
}

export function nodeStatus(
  id: NodeIdentity,
  resources: NodeResources,
  conditions: NodeCondition[],
): VirtualNodeObject["status"] {
  return {
    // A virtual node offers exactly what the provider negotiated: nothing is reserved locally.
    capacity: { ...resources },
    allocatable: { ...resources },
    conditions,
    addresses: [
      { type: "InternalIP", address: id.address },
      { type: "Hostname", address: id.nodeName },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: id.kubeletPort } },
    nodeInfo: {
      architecture: "amd64",
      operatingSystem: "linux",
      kubeletVersion: id.kubeletVersion,
      kubeProxyVersion: id.kubeletVersion,
      containerRuntimeVersion: `liqo://${id.remoteClusterName}`,
      kernelVersion: "",
      osImage: `Liqo virtual node for ${id.remoteClusterName}`,
      machineID: "",
      systemUUID: "",
      bootID: "",
    },
  };
}

export interface LeaseObject extends KubeObject {
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string; acquireTime?: string };
}

export const NODE_LEASE_NAMESPACE = "kube-node-lease";

/** The node Lease, owned by the Node so it goes away with it (as kubelet does). */
export function nodeLease(nodeName: string, nodeUid: string, durationSeconds: number, now: Date): LeaseObject {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: {
      name: nodeName,
      namespace: NODE_LEASE_NAMESPACE,
      ownerReferences: [{ apiVersion: "v1", kind: "Node", name: nodeName, uid: nodeUid }],
    },
    spec: { holderIdentity: nodeName, leaseDurationSeconds: durationSeconds, renewTime: microTime(now) },
  };
}

/** Leases use MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}
