// Resource sharing, provider side: the ResourceRequest controller and the offer arithmetic.
export {
  createResourceRequestController,
  TENANT_FINALIZER,
  SHARING_FIELD_MANAGER,
  type ResourceRequestController,
  type ResourceRequestControllerOptions,
} from "./controller.ts";
export {
  freeResources,
  freeFor,
  summarizeUsage,
  offeredQuota,
  parseSharingPercentage,
  podRequests,
  isOfferingNode,
  sameQuota,
  SharingPercentageError,
  DEFAULT_SHARING_PERCENTAGE,
  OFFERED_RESOURCES,
  type Amounts,
  type OfferedResource,
  type Usage,
} from "./offer.ts";
export {
  ensureIncomingForeignCluster,
  incomingForeignCluster,
  setIncomingPeering,
  withIncoming,
  ForeignClusterError,
  type IncomingStatus,
} from "./foreigncluster.ts";
