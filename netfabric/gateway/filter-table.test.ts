import { describe, expect, test } from "bun:test";
import {
  deleteFilterTableScript,
  isSecurityMode,
  peerFilterSets,
  renderFilterTable,
  setNameOf,
  slimEndpointSlice,
  slimPod,
  type FilterInputs,
  type FilterNamespace,
  type FilterNamespaceMap,
  type FilterPod,
  type PeerFilter,
} from "./filter-table.ts";

const P = "peer-p";
const Q = "peer-q";

const vnode = (name: string, id: string) => ({
  metadata: { name, labels: { "liqo.io/type": "virtual-node", "liqo.io/remote-cluster-id": id } },
});
const pod = (
  name: string,
  namespace: string,
  o: { node?: string; ip?: string; ips?: string[]; shadow?: boolean; phase?: string; hostNetwork?: boolean } = {},
): FilterPod => ({
  metadata: {
    name,
    namespace,
    labels: o.shadow ? { "liqo.io/managed-by": "shadowpod" } : { app: name },
  },
  spec: { nodeName: o.node, hostNetwork: o.hostNetwork },
  status: { phase: o.phase ?? "Running", podIP: o.ip, podIPs: o.ips?.map((ip) => ({ ip })) },
});
const ns = (name: string, id?: string): FilterNamespace => ({
  metadata: { name, labels: id ? { "liqo.io/remote-cluster-id": id } : {} },
});
const nsMap = (
  id: string,
  desired: Record<string, string>,
  current: Record<string, unknown> = {},
  replicated = false,
): FilterNamespaceMap => ({
  metadata: {
    labels: { "liqo.io/remote-cluster-id": id, ...(replicated ? { "liqo.io/replicated": "true" } : {}) },
  },
  spec: { desiredMapping: desired },
  status: { currentMapping: current },
});
const slice = (namespace: string, addresses: string[], addressType = "IPv4") => ({
  metadata: { namespace },
  addressType,
  endpoints: addresses.map((a) => ({ addresses: [a] })),
});

function inputs(over: Partial<FilterInputs> = {}): FilterInputs {
  return {
    peers: [P, Q],
    nodes: [vnode("liqo-p", P), vnode("liqo-q", Q), { metadata: { name: "worker", labels: {} } }],
    pods: [],
    namespaces: [],
    namespaceMaps: [],
    endpointSlices: [],
    ...over,
  };
}

describe("peerFilterSets", () => {
  test("rule 1: our pods bound to P's virtual nodes are P's allowed sources, at their status addresses", () => {
    const sets = peerFilterSets(
      inputs({
        nodes: [vnode("liqo-p", P), vnode("liqo-p-gpu", P), vnode("liqo-q", Q), { metadata: { name: "worker" } }],
        pods: [
          pod("a", "demo", { node: "liqo-p", ip: "10.71.0.5" }),
          pod("b", "demo", { node: "liqo-p-gpu", ip: "10.71.0.9", ips: ["10.71.0.9"] }),
          pod("c", "demo", { node: "liqo-q", ip: "10.72.0.5" }),
          pod("local", "demo", { node: "worker", ip: "10.200.0.7" }),
        ],
      }),
    );
    expect(sets.get(P)).toEqual({ sources: ["10.71.0.5", "10.71.0.9"], destinations: [] });
    expect(sets.get(Q)).toEqual({ sources: ["10.72.0.5"], destinations: [] });
  });

  test("a node with the peer's label but not a virtual node gives nothing", () => {
    const sets = peerFilterSets(
      inputs({
        nodes: [{ metadata: { name: "fake", labels: { "liqo.io/remote-cluster-id": P } } }],
        pods: [pod("a", "demo", { node: "fake", ip: "10.200.0.5" })],
      }),
    );
    expect(sets.get(P)!.sources).toEqual([]);
  });

  test("rule 2: ShadowPod pods in P's twin namespaces are P's allowed destinations; other pods there are not", () => {
    const sets = peerFilterSets(
      inputs({
        namespaces: [ns("demo-p", P), ns("demo-q", Q), ns("default")],
        pods: [
          pod("twin", "demo-p", { shadow: true, ip: "10.200.0.20", node: "worker" }),
          pod("stray", "demo-p", { ip: "10.200.0.21", node: "worker" }),
          pod("qs", "demo-q", { shadow: true, ip: "10.200.0.22", node: "worker" }),
          pod("forged", "default", { shadow: true, ip: "10.200.0.23", node: "worker" }),
        ],
      }),
    );
    expect(sets.get(P)!.destinations).toEqual(["10.200.0.20"]);
    expect(sets.get(Q)!.destinations).toEqual(["10.200.0.22"]);
  });

  test("rule 3: endpoints in namespaces our NamespaceMap offloads to P, desired or current; replicated maps are ignored", () => {
    const sets = peerFilterSets(
      inputs({
        namespaceMaps: [
          nsMap(P, { shop: "shop-rome-abc123" }, { going: { phase: "Terminating" } }),
          nsMap(Q, { shop: "shop-rome-def456" }),
          nsMap(P, { secret: "x" }, {}, true),
        ],
        endpointSlices: [
          slice("shop", ["10.200.0.30", "10.200.0.31"]),
          slice("going", ["10.200.0.32"]),
          slice("secret", ["10.200.0.33"]),
          slice("default", ["10.200.0.34"]),
        ],
      }),
    );
    expect(sets.get(P)!.destinations).toEqual(["10.200.0.30", "10.200.0.31", "10.200.0.32"]);
    expect(sets.get(Q)!.destinations).toEqual(["10.200.0.30", "10.200.0.31"]);
  });

  test("a peer with nothing offloaded either way still gets its (empty) sets; unknown peers' objects are dropped", () => {
    const sets = peerFilterSets(
      inputs({
        peers: [P],
        namespaces: [ns("demo-z", "peer-z")],
        pods: [pod("z", "demo-z", { shadow: true, ip: "10.200.0.40" })],
      }),
    );
    expect([...sets.keys()]).toEqual([P]);
    expect(sets.get(P)).toEqual({ sources: [], destinations: [] });
  });

  test("malformed input: pods without IPs, IPv6 and garbage addresses, host-network and finished pods are ignored", () => {
    const sets = peerFilterSets(
      inputs({
        namespaces: [ns("demo-p", P)],
        namespaceMaps: [nsMap(P, { shop: "s" })],
        pods: [
          pod("pending", "demo", { node: "liqo-p" }),
          pod("v6", "demo", { node: "liqo-p", ip: "fd00::5", ips: ["fd00::5", "10.71.0.6"] }),
          pod("bad", "demo", { node: "liqo-p", ip: "10.71.0.300" }),
          pod("host", "demo-p", { shadow: true, ip: "172.31.0.10", hostNetwork: true }),
          pod("done", "demo-p", { shadow: true, ip: "10.200.0.50", phase: "Succeeded" }),
          pod("failed", "demo-p", { shadow: true, ip: "10.200.0.51", phase: "Failed" }),
          { metadata: { name: "bare", namespace: "demo-p", labels: { "liqo.io/managed-by": "shadowpod" } } },
        ],
        endpointSlices: [
          slice("shop", ["fd00::7"], "IPv6"),
          slice("shop", ["not-an-ip", "10.200.0.52"]),
          { metadata: {} },
        ],
      }),
    );
    expect(sets.get(P)).toEqual({ sources: ["10.71.0.6"], destinations: ["10.200.0.52"] });
  });
});

const peer = (over: Partial<PeerFilter> = {}): PeerFilter => ({
  clusterId: P,
  networks: ["10.71.0.0/16", "10.81.0.0/16"],
  sources: ["10.71.0.9", "10.71.0.5"],
  destinations: ["10.200.0.20"],
  ...over,
});

describe("renderFilterTable", () => {
  test("one forward chain: replies first, then per peer its own pods, what it may reach, and a counted reject", () => {
    const t = renderFilterTable({ device: "liqo.wg", table: "liqo-filter", peers: [peer()] });
    const lines = t.script.split("\n");
    expect(lines.slice(0, 3)).toEqual([
      "table ip liqo-filter {}",
      "delete table ip liqo-filter",
      "table ip liqo-filter {",
    ]);
    expect(t.script).toContain("  set src_peer-p { type ipv4_addr; elements = { 10.71.0.5, 10.71.0.9 }; }");
    expect(t.script).toContain("  set dst_peer-p { type ipv4_addr; elements = { 10.200.0.20 }; }");
    expect(t.script).toContain("type filter hook forward priority filter; policy accept;");
    const rules = lines.filter((l) => l.includes(" comment "));
    expect(rules.map((l) => l.trim().replace(/ comment .*/, ""))).toEqual([
      "ct state established,related accept",
      'iifname "liqo.wg" ip saddr { 10.71.0.0/16, 10.81.0.0/16 } ip saddr @src_peer-p accept',
      'iifname "liqo.wg" ip saddr { 10.71.0.0/16, 10.81.0.0/16 } ip daddr @dst_peer-p accept',
      'iifname "liqo.wg" ip saddr { 10.71.0.0/16, 10.81.0.0/16 } counter reject with icmp type admin-prohibited',
      'iifname "liqo.wg" counter reject with icmp type admin-prohibited',
    ]);
    expect(t.ruleIds.map((id) => id.replace(/\/[0-9a-f]{10}$/, ""))).toEqual([
      "established",
      `${P}/own-pods`,
      `${P}/exposed`,
      `${P}/reject`,
      "unknown",
    ]);
    for (const [i, id] of t.ruleIds.entries()) expect(rules[i]).toEndWith(`comment ${JSON.stringify(id)}`);
    expect(t.sets).toEqual({ "src_peer-p": ["10.71.0.5", "10.71.0.9"], "dst_peer-p": ["10.200.0.20"] });
  });

  test("a peer with empty sets is still filtered: its reject rule is there", () => {
    const t = renderFilterTable({
      device: "liqo.wg",
      table: "liqo-filter",
      peers: [peer({ sources: [], destinations: [] })],
    });
    expect(t.script).toContain("  set src_peer-p { type ipv4_addr; }");
    expect(t.script).toContain("  set dst_peer-p { type ipv4_addr; }");
    expect(t.ruleIds.some((id) => id.startsWith(`${P}/reject/`))).toBe(true);
  });

  test("no peers: replies pass, anything new from the tunnel is refused", () => {
    const t = renderFilterTable({ device: "liqo.wg", table: "liqo-filter", peers: [] });
    expect(t.ruleIds.map((id) => id.split("/")[0])).toEqual(["established", "unknown"]);
    expect(t.sets).toEqual({});
  });

  test("the digest and ids follow rules and sets, not peer order, duplicates or counter values", () => {
    const a = renderFilterTable({
      device: "liqo.wg",
      table: "f",
      peers: [peer(), peer({ clusterId: Q, sources: [] })],
    });
    const b = renderFilterTable(
      {
        device: "liqo.wg",
        table: "f",
        peers: [peer({ clusterId: Q, sources: [] }), peer({ sources: ["10.71.0.5", "10.71.0.9", "10.71.0.5"] })],
      },
      new Map([[P, { packets: 7, bytes: 420 }]]),
    );
    expect(b.digest).toBe(a.digest);
    expect(b.ruleIds).toEqual(a.ruleIds);
    expect(b.script).toContain("counter packets 7 bytes 420 reject");
    expect(a.script).not.toContain("packets");
    const c = renderFilterTable({ device: "liqo.wg", table: "f", peers: [peer({ destinations: ["10.200.0.21"] })] });
    expect(c.digest).not.toBe(renderFilterTable({ device: "liqo.wg", table: "f", peers: [peer()] }).digest);
    const d = renderFilterTable({ device: "liqo.wg", table: "f", peers: [peer({ networks: ["10.72.0.0/16"] })] });
    expect(d.ruleIds.find((id) => id.startsWith(`${P}/reject`))).not.toBe(
      a.ruleIds.find((id) => id.startsWith(`${P}/reject`)),
    );
  });

  test("set names: cluster IDs as they are when nft accepts them, rewritten and hashed apart otherwise", () => {
    expect(setNameOf("src", "f0a1b2c3-rome-4000-8000-000000000001")).toBe("src_f0a1b2c3-rome-4000-8000-000000000001");
    const odd = setNameOf("dst", "a b");
    expect(odd).toMatch(/^dst_a_b_[0-9a-f]{6}$/);
    expect(odd).not.toBe(setNameOf("dst", "a:b"));
  });

  test("FullPodToPod deletes the table, existing or not", () => {
    expect(deleteFilterTableScript("liqo-filter")).toBe("table ip liqo-filter {}\ndelete table ip liqo-filter\n");
  });
});

test("security modes: Liqo's two names, nothing else", () => {
  expect(isSecurityMode("FullPodToPod")).toBe(true);
  expect(isSecurityMode("IntraClusterTrafficSegregation")).toBe(true);
  expect(isSecurityMode("fullpodtopod")).toBe(false);
});

test("informer transforms keep what the sets need and drop the rest", () => {
  const big = {
    metadata: {
      name: "a",
      namespace: "demo-p",
      resourceVersion: "5",
      labels: { "liqo.io/managed-by": "shadowpod", app: "x" },
      annotations: { huge: "x".repeat(1000) },
    },
    spec: { nodeName: "worker", containers: [{ name: "c", image: "i" }] },
    status: { phase: "Running", podIP: "10.200.0.5", podIPs: [{ ip: "10.200.0.5" }], conditions: [{ type: "Ready" }] },
  };
  const small = slimPod(big);
  expect(small).toEqual({
    metadata: { name: "a", namespace: "demo-p", resourceVersion: "5", labels: { "liqo.io/managed-by": "shadowpod" } },
    spec: { nodeName: "worker", hostNetwork: undefined },
    status: { phase: "Running", podIP: "10.200.0.5", podIPs: [{ ip: "10.200.0.5" }] },
  } as unknown as typeof big);
  const s = slimEndpointSlice({
    metadata: { name: "s", namespace: "shop", resourceVersion: "9", labels: { a: "b" } },
    addressType: "IPv4",
    endpoints: [{ addresses: ["10.200.0.30"], conditions: { ready: true } }],
  } as unknown as Parameters<typeof slimEndpointSlice>[0]);
  expect(s).toEqual({
    metadata: { name: "s", namespace: "shop", resourceVersion: "9" },
    addressType: "IPv4",
    endpoints: [{ addresses: ["10.200.0.30"] }],
  });
});
