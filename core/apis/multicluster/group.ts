// The Multi-Cluster Services API (sigs.k8s.io/mcs-api, KEP-1645): its group, the labels its
// EndpointSlices carry, and the condition types and reasons of ServiceExport, as upstream names them.
export const MCS_GROUP = "multicluster.x-k8s.io";

/** On every EndpointSlice of an imported service: the ServiceImport's name (KEP-1645). */
export const MCS_SERVICE_NAME_LABEL = "multicluster.kubernetes.io/service-name";
/** On every EndpointSlice of an imported service: the ID of the cluster whose endpoints it holds. */
export const MCS_SOURCE_CLUSTER_LABEL = "multicluster.kubernetes.io/source-cluster";

export const ServiceImportType = { ClusterSetIP: "ClusterSetIP", Headless: "Headless" } as const;
export type ServiceImportType = (typeof ServiceImportType)[keyof typeof ServiceImportType];

/** ServiceExport condition types (mcs-api v1alpha1, ServiceExportCondition*). */
export const ServiceExportCondition = { Valid: "Valid", Ready: "Ready", Conflict: "Conflict" } as const;

/** ServiceExport condition reasons (mcs-api v1alpha1, ServiceExportReason*). */
export const ServiceExportReason = {
  Valid: "Valid",
  NoService: "NoService",
  InvalidServiceType: "InvalidServiceType",
  Exported: "Exported",
  Pending: "Pending",
  Failed: "Failed",
  PortConflict: "PortConflict",
  TypeConflict: "TypeConflict",
  SessionAffinityConflict: "SessionAffinityConflict",
  SessionAffinityConfigConflict: "SessionAffinityConfigConflict",
  NoConflicts: "NoConflicts",
} as const;
