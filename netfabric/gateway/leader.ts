// The gateway's active/standby election is the generic Lease elector, which moved to core/kube so
// the controller manager elects its leader the same way; re-exported for the gateway's imports.
export * from "../../core/kube/leader.ts";
