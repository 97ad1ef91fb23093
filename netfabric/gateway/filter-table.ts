// The gateway's network security modes (Liqo's networking.securityMode). In FullPodToPod a peer's
// pods reach every pod here and the gateway has no filter table. In IntraClusterTrafficSegregation
// each cluster protects itself in its own gateway: the forward chain of the table rendered here
// looks at what ARRIVES from the tunnel and accepts a new connection from peer P only when
//   1. its source is one of our pods offloaded to P (they are ours: they reach anything of ours), or
//   2. its destination is one of P's pods running here (ShadowPod pods in P's twin namespaces), or
//   3. its destination is an endpoint of a Service we reflect to P (EndpointSlices of the local
//      namespaces we offload to P);
// replies pass first (ct state established,related), anything else new from P is rejected with an
// ICMP admin-prohibited (clients fail at once instead of hanging) and counted.
//
// Address spaces: the forward hook runs after prerouting (the NAT table's DNAT has turned the
// peer's view of our pods back into our pod IPs) and before postrouting (no SNAT yet), so
// destinations are local pod IPs and sources are the peer's addresses as we see them (after the
// peer's own SNAT into the remote NAT CIDRs), also with overlapping pod CIDRs. Our pods offloaded
// to P carry exactly those addresses in status.podIP(s): the virtual kubelet writes them
// translated into our view.
//
// Pure: the sets come from lists of objects, the table is text plus what to compare it by.
import { parseIpv4 } from "../ipam/ipv4.ts";
import { ruleHash } from "./nat-table.ts";
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_SHADOWPOD,
  REMOTE_CLUSTER_ID_LABEL,
  REPLICATION_STATUS_LABEL,
  TYPE_LABEL,
  VIRTUAL_NODE_TYPE,
} from "../../core/apis/labels.ts";

export const SECURITY_MODES = ["FullPodToPod", "IntraClusterTrafficSegregation"] as const;
export type SecurityMode = (typeof SECURITY_MODES)[number];
export const DEFAULT_SECURITY_MODE: SecurityMode = "FullPodToPod";

export function isSecurityMode(value: string): value is SecurityMode {
  return (SECURITY_MODES as readonly string[]).includes(value);
}

/** What the filter allows from one peer, in our address space. */
export interface PeerFilter {
  clusterId: string;
  /** The peer's networks as we see them (its remote NAT pod and external CIDRs): how its traffic is told apart on the shared device. */
  networks: string[];
  /** Rule 1: our pods offloaded to the peer, at the addresses we see them at. */
  sources: string[];
  /** Rules 2 and 3: the peer's pods running here and the endpoints of Services we reflect to it. */
  destinations: string[];
}

export interface FilterTable {
  script: string;
  /** Comments of all rules, in order. */
  ruleIds: string[];
  /** Set name → its elements, sorted. */
  sets: Record<string, string[]>;
  /** Hash of the table without counter values: equal digests, equal filtering. */
  digest: string;
}

/** Packets and bytes rejected so far, carried into a replaced table so its counters keep counting. */
export interface RejectCount {
  packets: number;
  bytes: number;
}

/** The catch-all rule's key in counters: traffic from the tunnel whose source is no configured peer's. */
export const UNKNOWN_PEER = "unknown";

/** nftables identifiers start with a letter and hold letters, digits, `_`, `-`, `.`; cluster IDs usually fit. */
export function setNameOf(kind: "src" | "dst", clusterId: string): string {
  const clean = clusterId.replace(/[^a-zA-Z0-9_.-]/g, "_");
  const name = `${kind}_${clean}`;
  // A rewritten ID could meet another one; its hash keeps the names apart.
  return clean === clusterId ? name : `${name}_${ruleHash(clusterId).slice(0, 6)}`;
}

const byIp = (a: string, b: string) => parseIpv4(a) - parseIpv4(b);
const uniqueSorted = (ips: Iterable<string>) => [...new Set(ips)].sort(byIp);

export function renderFilterTable(
  o: { device: string; table: string; peers: PeerFilter[] },
  counters: ReadonlyMap<string, RejectCount> = new Map(),
): FilterTable {
  const dev = JSON.stringify(o.device);
  const peers = [...o.peers].sort((a, b) => (a.clusterId < b.clusterId ? -1 : a.clusterId > b.clusterId ? 1 : 0));
  const sets: Record<string, string[]> = {};
  const rules: { id: string; body: string; counted?: string }[] = [];
  const rule = (idPrefix: string, body: string, counted?: string) =>
    rules.push({ id: `${idPrefix}/${ruleHash(body)}`, body, counted });
  // Replies, and ICMP errors about our own connections, before anything else: one lookup per packet.
  rule("established", "ct state established,related accept");
  for (const p of peers) {
    const src = setNameOf("src", p.clusterId);
    const dst = setNameOf("dst", p.clusterId);
    sets[src] = uniqueSorted(p.sources);
    sets[dst] = uniqueSorted(p.destinations);
    const from = `iifname ${dev} ip saddr { ${[...p.networks].sort().join(", ")} }`;
    rule(`${p.clusterId}/own-pods`, `${from} ip saddr @${src} accept`);
    rule(`${p.clusterId}/exposed`, `${from} ip daddr @${dst} accept`);
    rule(`${p.clusterId}/reject`, `${from} COUNTER reject with icmp type admin-prohibited`, p.clusterId);
  }
  // WireGuard only delivers sources inside a peer's allowed IPs, but a packet from the tunnel that
  // no peer rule claimed (a transit source, a peer whose networks changed) is still not let in.
  rule(UNKNOWN_PEER, `iifname ${dev} COUNTER reject with icmp type admin-prohibited`, UNKNOWN_PEER);

  const counter = (key?: string) => {
    const c = key !== undefined ? counters.get(key) : undefined;
    return c && c.packets > 0 ? `counter packets ${c.packets} bytes ${c.bytes}` : "counter";
  };
  const setLines = Object.entries(sets).map(([name, elements]) =>
    elements.length > 0
      ? `  set ${name} { type ipv4_addr; elements = { ${elements.join(", ")} }; }`
      : `  set ${name} { type ipv4_addr; }`,
  );
  const body = (withCounters: boolean) => [
    ...setLines,
    "  chain forward {",
    "    type filter hook forward priority filter; policy accept;",
    ...rules.map(
      (r) =>
        `    ${r.body.replace("COUNTER", withCounters ? counter(r.counted) : "counter")} comment ${JSON.stringify(r.id)}`,
    ),
    "  }",
  ];
  const t = o.table;
  // Declared, deleted and declared again in one transaction: replaced atomically, existing or not.
  const script = [`table ip ${t} {}`, `delete table ip ${t}`, `table ip ${t} {`, ...body(true), "}", ""].join("\n");
  return {
    script,
    ruleIds: rules.map((r) => r.id),
    sets,
    digest: ruleHash(body(false).join("\n")),
  };
}

/** Deletes the table whether or not it exists (FullPodToPod, or a gateway stepping down). */
export const deleteFilterTableScript = (table: string) => `table ip ${table} {}\ndelete table ip ${table}\n`;

// The few fields the sets need; informers keep objects cut down to these (see slimPod and friends).
export interface FilterPod {
  metadata: { name?: string; namespace?: string; labels?: Record<string, string> };
  spec?: { nodeName?: string; hostNetwork?: boolean };
  status?: { phase?: string; podIP?: string; podIPs?: { ip?: string }[] };
}
export interface FilterNode {
  metadata: { name?: string; labels?: Record<string, string> };
}
export interface FilterNamespace {
  metadata: { name?: string; labels?: Record<string, string> };
}
export interface FilterNamespaceMap {
  metadata: { labels?: Record<string, string> };
  spec?: { desiredMapping?: Record<string, string> };
  status?: { currentMapping?: Record<string, unknown> };
}
export interface FilterEndpointSlice {
  metadata: { namespace?: string };
  addressType?: string;
  endpoints?: { addresses?: string[] }[];
}

export interface FilterInputs {
  /** The peers with a tunnel: each gets its sets, empty ones included. */
  peers: string[];
  nodes: FilterNode[];
  pods: FilterPod[];
  namespaces: FilterNamespace[];
  namespaceMaps: FilterNamespaceMap[];
  endpointSlices: FilterEndpointSlice[];
}

function ipv4(text: string | undefined): string | undefined {
  if (!text) return undefined;
  try {
    parseIpv4(text);
    return text;
  } catch {
    return undefined; // IPv6 and garbage: the table is family ip
  }
}

function podIps(pod: FilterPod): string[] {
  // A pod on the host's network has the node's address: never a reason to open the node.
  if (pod.spec?.hostNetwork) return [];
  // A finished pod's address may already be another pod's.
  if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") return [];
  const all = [pod.status?.podIP, ...(pod.status?.podIPs ?? []).map((p) => p.ip)];
  return all.flatMap((ip) => ipv4(ip) ?? []);
}

/** Per peer, the addresses rules 1 to 3 allow. */
export function peerFilterSets(inputs: FilterInputs): Map<string, { sources: string[]; destinations: string[] }> {
  const out = new Map<string, { sources: Set<string>; destinations: Set<string> }>();
  for (const id of inputs.peers) out.set(id, { sources: new Set(), destinations: new Set() });
  // Rule 1: virtual nodes stand for a peer (several VirtualNodes may stand for one).
  const nodePeer = new Map<string, string>();
  for (const n of inputs.nodes) {
    const labels = n.metadata.labels ?? {};
    const id = labels[REMOTE_CLUSTER_ID_LABEL];
    if (labels[TYPE_LABEL] === VIRTUAL_NODE_TYPE && id && n.metadata.name) nodePeer.set(n.metadata.name, id);
  }
  // Rule 2: a twin namespace carries the ID of the peer it belongs to (set when the peer's
  // NamespaceMap controller creates it; the shadowpod controller reads it the same way).
  const twinPeer = new Map<string, string>();
  for (const ns of inputs.namespaces) {
    const id = ns.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL];
    if (id && ns.metadata.name) twinPeer.set(ns.metadata.name, id);
  }
  for (const pod of inputs.pods) {
    const ips = podIps(pod);
    if (ips.length === 0) continue;
    const offloadedTo = pod.spec?.nodeName ? nodePeer.get(pod.spec.nodeName) : undefined;
    if (offloadedTo) for (const ip of ips) out.get(offloadedTo)?.sources.add(ip);
    const owner = pod.metadata.namespace ? twinPeer.get(pod.metadata.namespace) : undefined;
    if (owner && pod.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_SHADOWPOD)
      for (const ip of ips) out.get(owner)?.destinations.add(ip);
  }
  // Rule 3: our NamespaceMap for P lists the local namespaces offloaded there. Desired and current
  // together, so no moment exists where a reflected Service is there and its endpoints refused
  // (a namespace being offloaded, or one whose twin is still terminating).
  const offloadedTo = new Map<string, Set<string>>();
  for (const nm of inputs.namespaceMaps) {
    const labels = nm.metadata.labels ?? {};
    const id = labels[REMOTE_CLUSTER_ID_LABEL];
    if (!id || labels[REPLICATION_STATUS_LABEL] === "true") continue; // a peer's map replicated here says nothing of ours
    for (const ns of [...Object.keys(nm.spec?.desiredMapping ?? {}), ...Object.keys(nm.status?.currentMapping ?? {})]) {
      let ids = offloadedTo.get(ns);
      if (!ids) offloadedTo.set(ns, (ids = new Set()));
      ids.add(id);
    }
  }
  for (const slice of inputs.endpointSlices) {
    if (slice.addressType !== undefined && slice.addressType !== "IPv4") continue;
    const ids = slice.metadata.namespace ? offloadedTo.get(slice.metadata.namespace) : undefined;
    if (!ids) continue;
    for (const e of slice.endpoints ?? [])
      for (const a of e.addresses ?? []) {
        const ip = ipv4(a);
        if (ip) for (const id of ids) out.get(id)?.destinations.add(ip);
      }
  }
  return new Map(
    [...out].map(([id, s]) => [id, { sources: uniqueSorted(s.sources), destinations: uniqueSorted(s.destinations) }]),
  );
}

// Informer transforms: the filter reads only these fields, so a cluster's pods cost little memory.
export function slimPod<T extends FilterPod & { metadata: { resourceVersion?: string } }>(pod: T): T {
  const managedBy = pod.metadata.labels?.[MANAGED_BY_LABEL];
  return {
    metadata: {
      name: pod.metadata.name,
      namespace: pod.metadata.namespace,
      resourceVersion: pod.metadata.resourceVersion,
      labels: managedBy !== undefined ? { [MANAGED_BY_LABEL]: managedBy } : undefined,
    },
    spec: { nodeName: pod.spec?.nodeName, hostNetwork: pod.spec?.hostNetwork },
    status: { phase: pod.status?.phase, podIP: pod.status?.podIP, podIPs: pod.status?.podIPs },
  } as T;
}

export function slimEndpointSlice<
  T extends FilterEndpointSlice & { metadata: { name?: string; resourceVersion?: string } },
>(slice: T): T {
  return {
    metadata: {
      name: slice.metadata.name,
      namespace: slice.metadata.namespace,
      resourceVersion: slice.metadata.resourceVersion,
    },
    addressType: slice.addressType,
    endpoints: (slice.endpoints ?? []).map((e) => ({ addresses: e.addresses })),
  } as T;
}
