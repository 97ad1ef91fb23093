// The consumer side of peering: the ForeignCluster controller and the pieces liqoctl shares with it.
export {
  createForeignClusterController,
  type ForeignClusterController,
  type ForeignClusterControllerOptions,
} from "./controller.ts";
export {
  FOREIGN_CLUSTER_FINALIZER,
  FORCE_UNPEER_ANNOTATION,
  withCondition,
  conditionOf,
  statusOf,
  outgoingWanted,
  duplicateOwner,
  authenticationFailure,
  offeredResources,
  peeringSummary,
  type ConditionUpdate,
  type PeeringSummary,
  type ForeignClusterObject,
} from "./conditions.ts";
export type { KubeletServing } from "./context.ts";
export type { CrdReplicator, CrdReplicatorOptions, ReplicatorFactory } from "./runtime.ts";
export { fetchRemoteIds, requestIdentity, type RemoteIds } from "./auth-client.ts";
export {
  remoteTokenSecret,
  remoteTokenSecretName,
  remoteIdentitySecretName,
  readIdentity,
  peerClient,
} from "./secrets.ts";
export { resourceRequestName } from "./outgoing.ts";
