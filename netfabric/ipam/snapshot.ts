// Plain-JSON form of the IPAM state, for the IpamStorage resource. Keys and lists are emitted in a
// fixed order so that restore(snapshot) → snapshot() is byte-identical and diffs stay small.
import { IpamError } from "./errors.ts";
import { contains, formatCidr, formatIpv4, overlaps, parseCidr, parseIpv4, type Cidr } from "./ipv4.ts";
import { externalReservedHosts, type ClusterEntry, type IpamState } from "./state.ts";

export interface ClusterSnapshot {
  remotePodCidr: string;
  remoteExternalCidr: string;
  podCidr: string;
  externalCidr: string;
  /** How the remote cluster sees our networks; absent until it reported. */
  localNatPodCidr?: string;
  localNatExternalCidr?: string;
}

export interface IpamSnapshot {
  version: 1;
  pools: string[];
  podCidr: string;
  serviceCidr: string;
  externalCidr: string;
  reserved: string[];
  clusters: Record<string, ClusterSnapshot>;
  /** Endpoint address (local view) → its external address and the clusters it is reflected to. */
  endpoints: Record<string, { externalIp: string; clusters: string[] }>;
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function toSnapshot(state: IpamState): IpamSnapshot {
  const clusters: Record<string, ClusterSnapshot> = {};
  for (const id of [...state.clusters.keys()].sort(byText)) {
    const c = state.clusters.get(id)!;
    const entry: ClusterSnapshot = {
      remotePodCidr: formatCidr(c.remotePod),
      remoteExternalCidr: formatCidr(c.remoteExternal),
      podCidr: formatCidr(c.pod),
      externalCidr: formatCidr(c.external),
    };
    if (c.natPod) entry.localNatPodCidr = formatCidr(c.natPod);
    if (c.natExternal) entry.localNatExternalCidr = formatCidr(c.natExternal);
    clusters[id] = entry;
  }
  const endpoints: IpamSnapshot["endpoints"] = {};
  for (const ip of [...state.endpoints.keys()].sort((a, b) => a - b)) {
    const e = state.endpoints.get(ip)!;
    endpoints[formatIpv4(ip)] = { externalIp: formatIpv4(e.external), clusters: [...e.clusters].sort(byText) };
  }
  return {
    version: 1,
    pools: state.pools.map(formatCidr),
    podCidr: formatCidr(state.pod),
    serviceCidr: formatCidr(state.service),
    externalCidr: formatCidr(state.external),
    reserved: state.reserved.map(formatCidr),
    clusters,
    endpoints,
  };
}

function bad(message: string, input: string): IpamError {
  return new IpamError(
    `IPAM snapshot: ${message}; restore from an intact IpamStorage or delete it to start empty`,
    "InvalidSnapshot",
    input,
  );
}

function record(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw bad(`${field} must be an object`, field);
  return value as Record<string, unknown>;
}

function list(value: unknown, field: string): unknown[] {
  if (!Array.isArray(value)) throw bad(`${field} must be an array`, field);
  return value;
}

function cidrAt(value: unknown, field: string): Cidr {
  if (typeof value !== "string") throw bad(`${field} must be a CIDR string`, field);
  return parseCidr(value, `snapshot ${field}`);
}

/** Validates a snapshot and builds the state; any inconsistency is an InvalidSnapshot error. */
export function parseSnapshot(input: unknown): IpamState {
  const s = record(input, "snapshot");
  if (s.version !== 1) throw bad(`unsupported version ${JSON.stringify(s.version)} (expected 1)`, "version");
  const state: IpamState = {
    pools: list(s.pools, "pools").map((p, i) => cidrAt(p, `pools[${i}]`)),
    pod: cidrAt(s.podCidr, "podCidr"),
    service: cidrAt(s.serviceCidr, "serviceCidr"),
    external: cidrAt(s.externalCidr, "externalCidr"),
    reserved: list(s.reserved, "reserved").map((r, i) => cidrAt(r, `reserved[${i}]`)),
    clusters: new Map(),
    endpoints: new Map(),
    externalInUse: new Map(),
  };
  const taken: [Cidr, string][] = [
    [state.pod, "podCidr"],
    [state.service, "serviceCidr"],
    [state.external, "externalCidr"],
    ...state.reserved.map((r, i): [Cidr, string] => [r, `reserved[${i}]`]),
  ];
  for (const [id, raw] of Object.entries(record(s.clusters, "clusters"))) {
    const c = record(raw, `clusters.${id}`);
    const entry: ClusterEntry = {
      remotePod: cidrAt(c.remotePodCidr, `clusters.${id}.remotePodCidr`),
      remoteExternal: cidrAt(c.remoteExternalCidr, `clusters.${id}.remoteExternalCidr`),
      pod: cidrAt(c.podCidr, `clusters.${id}.podCidr`),
      external: cidrAt(c.externalCidr, `clusters.${id}.externalCidr`),
    };
    if (c.localNatPodCidr !== undefined) entry.natPod = cidrAt(c.localNatPodCidr, `clusters.${id}.localNatPodCidr`);
    if (c.localNatExternalCidr !== undefined)
      entry.natExternal = cidrAt(c.localNatExternalCidr, `clusters.${id}.localNatExternalCidr`);
    for (const [net, field] of [
      [entry.pod, `clusters.${id}.podCidr`],
      [entry.external, `clusters.${id}.externalCidr`],
    ] as const) {
      const clash = taken.find(([t]) => overlaps(t, net));
      if (clash) throw bad(`${field} ${formatCidr(net)} overlaps ${clash[1]} ${formatCidr(clash[0])}`, field);
      taken.push([net, field]);
    }
    state.clusters.set(id, entry);
  }
  for (const [ipText, raw] of Object.entries(record(s.endpoints, "endpoints"))) {
    const e = record(raw, `endpoints.${ipText}`);
    const endpoint = parseIpv4(ipText, "snapshot endpoints key");
    if (typeof e.externalIp !== "string") throw bad(`endpoints.${ipText}.externalIp must be a string`, ipText);
    const external = parseIpv4(e.externalIp, `snapshot endpoints.${ipText}.externalIp`);
    if (!contains(state.external, external) || external < state.external.base + externalReservedHosts) {
      throw bad(
        `endpoints.${ipText}.externalIp ${e.externalIp} is not an assignable address of ${formatCidr(state.external)}`,
        ipText,
      );
    }
    if (state.externalInUse.has(external))
      throw bad(`external address ${e.externalIp} is given to two endpoints`, e.externalIp);
    const clusters = list(e.clusters, `endpoints.${ipText}.clusters`).map(String);
    for (const id of clusters)
      if (!state.clusters.has(id)) throw bad(`endpoints.${ipText} names unknown cluster ${id}`, id);
    state.externalInUse.set(external, endpoint);
    state.endpoints.set(endpoint, { external, clusters: new Set(clusters) });
  }
  return state;
}
