export { createNetworkManager, type NetworkManager, type NetworkManagerOptions } from "./manager.ts";
export { createIpamStore, IPAM_STORAGE_NAME, type IpamStore, type IpamStoreOptions } from "./ipam-store.ts";
export { ipamSpecFromSnapshot, snapshotFromIpamSpec, canonicalJson } from "./ipam-storage.ts";
export { createIpTranslator, type TranslatorOptions } from "./translator.ts";
export { networkManagerViews } from "./views.ts";
export { parsePeers, PeersFileError } from "./peers-file.ts";
export {
  uniqueName,
  localNetworkConfig,
  remoteNetworkConfigStatus,
  tunnelEndpointSpec,
  natMappingSpec,
  networkConfigRole,
  bothProcessed,
  NETCFG_OWNER,
  type Peer,
  type LocalNetworkParameters,
} from "./forge.ts";
export { gatewayNatMappings } from "../shared/nat.ts";
export { KEYS_LABEL, PUBLIC_KEY_FIELD, CLUSTER_ID_LABEL } from "../shared/labels.ts";
export { desiredNatMappings, natMappingName } from "./natmappings.ts";
export type { PeerState, PeerPhase } from "./peering.ts";
export {
  createTranslationWatcher,
  translateWith,
  TranslationError,
  type TranslationWatcher,
  type TranslationSources,
} from "./translation-watch.ts";
export { peersOfForeignClusters, watchForeignClusterPeers } from "./fc-peers.ts";
