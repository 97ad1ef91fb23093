export {
  createVirtualNode,
  VirtualNodeError,
  type VirtualNode,
  type VirtualNodeOptions,
  type VirtualNodeStatus,
} from "./virtual-node.ts";
export {
  virtualNode,
  virtualNodeLabels,
  nodeConditions,
  nodeStatus,
  nodeLease,
  isVirtualNode,
  isOurVirtualNode,
  REMOTE_UNREACHABLE_REASON,
  NODE_LEASE_NAMESPACE,
  type NodeResources,
  type NodeTaint,
  nodeTaints,
  type NodeIdentity,
  type RemoteHealth,
} from "./forge.ts";
