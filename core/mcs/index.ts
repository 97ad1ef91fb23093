// The Multi-Cluster Services API (docs/mcs.md).
export { createMcsController, type McsController, type McsControllerOptions } from "./controller.ts";
export { MCS_POLICY_ANNOTATION, PEER_POLICIES, isPeerPolicy, type PeerPolicy } from "./policy.ts";
export { carrierName, derivedServiceName, importedSliceName } from "./names.ts";
