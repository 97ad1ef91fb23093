// Typed IPAM errors. Each message names the offending input and says what to change, because
// these reach users through NetworkConfig conditions and `liqoctl install` output.

export type IpamErrorCode =
  | "InvalidAddress"
  | "InvalidCidr"
  | "OverlappingNetworks"
  | "PoolExhausted"
  | "ExternalCidrExhausted"
  | "UnknownCluster"
  | "AddressOutOfRange"
  | "RemappingUnknown"
  | "InvalidSnapshot";

export class IpamError extends Error {
  override name = "IpamError";
  constructor(
    message: string,
    readonly code: IpamErrorCode,
    /** The input (address, CIDR, cluster ID) the error is about. */
    readonly input: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function invalidAddress(input: string, field: string, why: string): IpamError {
  return new IpamError(
    `${field}: "${input}" is not an IPv4 address (${why}); give four decimal octets 0-255, e.g. 10.0.0.1`,
    "InvalidAddress",
    input,
  );
}

export function invalidCidr(input: string, field: string, why: string): IpamError {
  return new IpamError(`${field}: "${input}" is not an IPv4 CIDR (${why})`, "InvalidCidr", input);
}

export function overlapping(a: string, aRole: string, b: string, bRole: string): IpamError {
  return new IpamError(
    `${aRole} ${a} overlaps ${bRole} ${b}; choose disjoint networks (remove or shrink one of them)`,
    "OverlappingNetworks",
    a,
  );
}

export function poolExhausted(clusterId: string, wanted: string, pools: readonly string[]): IpamError {
  return new IpamError(
    `no free network of size /${wanted.split("/")[1]} left to remap ${wanted} of cluster ${clusterId} ` +
      `(pools ${pools.join(", ")}); unpeer unused clusters, shrink the remote CIDR or add a pool`,
    "PoolExhausted",
    wanted,
  );
}

export function unknownCluster(clusterId: string): IpamError {
  return new IpamError(
    `cluster ${clusterId} has no networks in the IPAM; map its NetworkConfig (mapRemoteNetworks) before translating`,
    "UnknownCluster",
    clusterId,
  );
}

export function remappingUnknown(clusterId: string): IpamError {
  return new IpamError(
    `cluster ${clusterId} has not yet reported how it sees this cluster's networks; ` +
      `wait for its NetworkConfig status (setLocalNetworksSeenBy) before reflecting endpoints to it`,
    "RemappingUnknown",
    clusterId,
  );
}

export function outOfRange(ip: string, cidr: string, owner: string): IpamError {
  return new IpamError(
    `address ${ip} is outside ${owner} ${cidr}; only addresses of that network can be translated this way`,
    "AddressOutOfRange",
    ip,
  );
}

export function externalCidrExhausted(externalCidr: string, endpointIp: string): IpamError {
  return new IpamError(
    `external CIDR ${externalCidr} has no free address left for endpoint ${endpointIp}; ` +
      `release unused endpoint mappings or install with a larger external CIDR`,
    "ExternalCidrExhausted",
    endpointIp,
  );
}
