export {
  createIpam,
  restoreIpam,
  type Ipam,
  type IpamOptions,
  type MappedNetworks,
  type NatMappingSpec,
  type RemoteNetworks,
} from "./ipam.ts";
export type { IpamSnapshot, ClusterSnapshot } from "./snapshot.ts";
export { IpamError, type IpamErrorCode } from "./errors.ts";
export * from "./ipv4.ts";
export { defaultPools } from "./free-network.ts";
