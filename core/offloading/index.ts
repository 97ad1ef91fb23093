// Namespace offloading: the NamespaceOffloading controller (which clusters, which names) and the
// per-peering NamespaceMap controller (the twin namespaces), plus the pure parts they share.
export {
  createNamespaceOffloadingController,
  NAMESPACE_OFFLOADING_FINALIZER,
  type NamespaceOffloadingController,
  type NamespaceOffloadingControllerOptions,
} from "./namespaceoffloading-controller.ts";
export {
  createNamespaceMapController,
  NAMESPACE_MAP_FINALIZER,
  type NamespaceMapController,
  type NamespaceMapControllerOptions,
  type NamespacePair,
} from "./namespacemap-controller.ts";
export {
  ensureNamespaceMap,
  localNamespaceMaps,
  remoteClusterInfo,
  setDesiredMapping,
  type RemoteClusterInfo,
} from "./namespacemaps.ts";
export {
  namespaceMapName,
  namespaceNameProblem,
  remoteNamespaceName,
  tenantNamespaceName,
  uniqueName,
} from "./names.ts";
export { matchesNodeSelector, nodeSelectorProblems, type NodeSelector, type SelectableNode } from "./selector.ts";
export { computeStatus, offloadingPhase, ConditionReason, type ClusterMapping } from "./status.ts";
export { enforcePodOffloadingStrategy, strategyViolation, ENFORCED_STRATEGY_ANNOTATION } from "./strategy-enforcer.ts";
