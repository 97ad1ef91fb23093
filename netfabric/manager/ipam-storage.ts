// IPAM snapshot ⇄ IpamStorage spec. The IpamStorage CRD has Liqo v0.5.4's shape, which does not
// hold everything the snapshot does: Liqo keeps only the network a peer's CIDR is *used as* here
// (clusterSubnets.remotePodCIDR) and re-reads the declared one from the NetworkConfig. We need the
// declared network to tell a changed NetworkConfig from an unchanged one after a restart, so it
// travels in `prefixes` (Liqo's opaque allocator state, base64 by schema), one entry per peer
// network keyed by the network as used locally.
import type { IpamSpec } from "../../core/apis/net/ipamstorage.ts";
import { NO_NAT_CIDR } from "../../core/apis/net/group.ts";
import { IpamError, restoreIpam, type IpamSnapshot } from "../ipam/index.ts";
import type { ClusterSnapshot } from "../ipam/snapshot.ts";

/** What one `prefixes` entry says about a peer network (JSON, then base64). */
export interface PeerPrefix {
  cluster: string;
  role: "podCIDR" | "externalCIDR";
  /** The network as the peer declared it in its NetworkConfig. */
  declared: string;
}

const encode = (p: PeerPrefix) =>
  Buffer.from(JSON.stringify({ cluster: p.cluster, role: p.role, declared: p.declared })).toString("base64");

/** Liqo writes "None" when the peer kept our network and "" before it reported. */
function natField(value: string | undefined, own: string): string {
  if (value === undefined) return "";
  return value === own ? NO_NAT_CIDR : value;
}

export function ipamSpecFromSnapshot(s: IpamSnapshot): IpamSpec {
  const clusterSubnets: IpamSpec["clusterSubnets"] = {};
  const prefixes: Record<string, string> = {};
  const natMappingsConfigured: Record<string, Record<string, never>> = {};
  for (const [id, c] of Object.entries(s.clusters)) {
    clusterSubnets[id] = {
      localNATPodCIDR: natField(c.localNatPodCidr, s.podCidr),
      remotePodCIDR: c.podCidr,
      localNATExternalCIDR: natField(c.localNatExternalCidr, s.externalCidr),
      remoteExternalCIDR: c.externalCidr,
    };
    prefixes[c.podCidr] = encode({ cluster: id, role: "podCIDR", declared: c.remotePodCidr });
    prefixes[c.externalCidr] = encode({ cluster: id, role: "externalCIDR", declared: c.remoteExternalCidr });
    // The manager keeps a NatMapping for every peer whose view of our networks is known.
    if (c.localNatPodCidr !== undefined && c.localNatExternalCidr !== undefined) natMappingsConfigured[id] = {};
  }
  const endpointMappings: IpamSpec["endpointMappings"] = {};
  for (const [ip, e] of Object.entries(s.endpoints)) {
    endpointMappings[ip] = { ip: e.externalIp, clusterMappings: Object.fromEntries(e.clusters.map((c) => [c, {}])) };
  }
  return {
    prefixes,
    pools: [...s.pools],
    reservedSubnets: [...s.reserved],
    clusterSubnets,
    externalCIDR: s.externalCidr,
    endpointMappings,
    natMappingsConfigured,
    podCIDR: s.podCidr,
    serviceCIDR: s.serviceCidr,
  };
}

function invalid(object: string, message: string, input: string): IpamError {
  return new IpamError(
    `IpamStorage ${object}: ${message}; fix the object, or delete it while no peering is active so the network manager starts afresh`,
    "InvalidSnapshot",
    input,
  );
}

function readPrefixes(object: string, prefixes: Record<string, string> | undefined): Map<string, PeerPrefix> {
  const out = new Map<string, PeerPrefix>();
  for (const [key, value] of Object.entries(prefixes ?? {})) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(value, "base64").toString("utf8"));
    } catch {
      // Not ours (e.g. go-ipam state left by Liqo itself): the declared network is then unknown.
      continue;
    }
    const p = parsed as Partial<PeerPrefix>;
    if (typeof p !== "object" || p === null || typeof p.cluster !== "string" || typeof p.declared !== "string")
      continue;
    if (p.role !== "podCIDR" && p.role !== "externalCIDR")
      throw invalid(
        object,
        `spec.prefixes["${key}"] has role ${JSON.stringify(p.role)}, expected podCIDR or externalCIDR`,
        key,
      );
    out.set(`${p.cluster}|${p.role}|${key}`, p as PeerPrefix);
  }
  return out;
}

function natSnapshot(value: string, own: string): string | undefined {
  if (value === "") return undefined;
  return value === NO_NAT_CIDR ? own : value;
}

/**
 * The snapshot an IpamStorage spec stands for, validated by restoring it (so every IpamError
 * of restoreIpam applies) and in the IPAM's canonical form.
 */
export function snapshotFromIpamSpec(spec: IpamSpec, object = "(unnamed)"): IpamSnapshot {
  for (const field of ["podCIDR", "serviceCIDR", "externalCIDR"] as const) {
    if (!spec[field]) throw invalid(object, `spec.${field} is empty`, field);
  }
  const prefixes = readPrefixes(object, spec.prefixes);
  const clusters: Record<string, ClusterSnapshot> = {};
  for (const [id, subnets] of Object.entries(spec.clusterSubnets ?? {})) {
    if (
      !subnets.remotePodCIDR ||
      !subnets.remoteExternalCIDR ||
      subnets.remotePodCIDR === NO_NAT_CIDR ||
      subnets.remoteExternalCIDR === NO_NAT_CIDR
    ) {
      throw invalid(object, `spec.clusterSubnets["${id}"] has no remotePodCIDR/remoteExternalCIDR`, id);
    }
    const declaredPod = prefixes.get(`${id}|podCIDR|${subnets.remotePodCIDR}`)?.declared ?? subnets.remotePodCIDR;
    const declaredExternal =
      prefixes.get(`${id}|externalCIDR|${subnets.remoteExternalCIDR}`)?.declared ?? subnets.remoteExternalCIDR;
    const entry: ClusterSnapshot = {
      remotePodCidr: declaredPod,
      remoteExternalCidr: declaredExternal,
      podCidr: subnets.remotePodCIDR,
      externalCidr: subnets.remoteExternalCIDR,
    };
    const natPod = natSnapshot(subnets.localNATPodCIDR, spec.podCIDR);
    const natExternal = natSnapshot(subnets.localNATExternalCIDR, spec.externalCIDR);
    if (natPod !== undefined) entry.localNatPodCidr = natPod;
    if (natExternal !== undefined) entry.localNatExternalCidr = natExternal;
    clusters[id] = entry;
  }
  const endpoints: IpamSnapshot["endpoints"] = {};
  for (const [ip, m] of Object.entries(spec.endpointMappings ?? {})) {
    endpoints[ip] = { externalIp: m.ip, clusters: Object.keys(m.clusterMappings ?? {}) };
  }
  const raw: IpamSnapshot = {
    version: 1,
    pools: [...(spec.pools ?? [])],
    podCidr: spec.podCIDR,
    serviceCidr: spec.serviceCIDR,
    externalCidr: spec.externalCIDR,
    reserved: [...(spec.reservedSubnets ?? [])],
    clusters,
    endpoints,
  };
  try {
    return restoreIpam(raw).snapshot();
  } catch (err) {
    if (err instanceof IpamError) throw invalid(object, err.message, err.input);
    throw err;
  }
}

/** JSON with object keys sorted: the API server re-orders map keys, so plain JSON cannot compare specs. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  );
}
