// Cluster-wide admin views every role with a Kubernetes client offers: peerings, virtual nodes,
// offloaded namespaces, IPAM allocations and tunnels, read from the role's own cluster. Each is a
// list cached for a short time and shared by concurrent requests, so a busy status page or a
// scraper costs the API server one list per view per interval, not one per request; nothing runs
// until someone looks, and a role without the permission or the CRD loses that view only.
import * as v from "valibot";
import {
  ForeignClusterResource,
  IpamStorageResource,
  NamespaceOffloadingResource,
  REMOTE_CLUSTER_ID_LABEL,
  REPLICATION_REQUESTED_LABEL,
  REPLICATION_STATUS_LABEL,
  ResourceRequestResource,
  TunnelEndpointResource,
  VIRTUAL_NODE_SELECTOR,
} from "../apis/index.ts";
import { parseInput, type AdminExtension, type View } from "../admin/index.ts";
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError } from "../kube/errors.ts";
import { Resources, type KubeObject, type ResourceRef } from "../kube/resources.ts";
import { peeringSummary } from "../peering/foreigncluster/conditions.ts";

export const CLUSTER_VIEW_NAMES = [
  "peerings",
  "virtual-nodes",
  "offloaded-namespaces",
  "ipam",
  "tunnels",
  "reflector-plugins",
] as const;
export type ClusterViewName = (typeof CLUSTER_VIEW_NAMES)[number];

export interface ClusterViewsOptions {
  /** How long a list is reused (default 2 s, the status page's refresh interval). */
  ttlMs?: number;
  /** Views to leave out, e.g. because the role offers its own under that name. */
  exclude?: readonly string[];
  now?: () => number;
}

// biome-ignore lint/suspicious/noExplicitAny: the views read a dozen CRDs' specs and statuses for display only, each field with a fallback; typing every kind here would duplicate core/apis for no check
type Obj = KubeObject & { spec?: any; status?: any };

/** One list at a time per resource, reused for ttlMs: concurrent requests share it. */
function cachedList(
  client: KubeClient,
  res: ResourceRef,
  what: string,
  ttlMs: number,
  now: () => number,
  labelSelector?: string,
) {
  let at = -Infinity;
  let pending: Promise<Obj[]> | undefined;
  return (): Promise<Obj[]> => {
    if (!pending || now() - at > ttlMs) {
      at = now();
      // A failure is cached for the same time as a success: a missing CRD or permission must not
      // turn every status-page refresh into a burst of failing lists.
      pending = client.list<Obj>(res, labelSelector ? { labelSelector } : {}).then(
        (l) => l.items,
        (err) => {
          throw explain(err, what);
        },
      );
      pending.catch(() => {}); // answered to whoever awaits it; never an unhandled rejection
    }
    return pending;
  };
}

function explain(err: unknown, what: string): Error {
  if (err instanceof KubeApiError && err.status === 404)
    return new Error(`cannot list ${what}: the API server does not serve them (install liqo's CRDs)`);
  if (err instanceof KubeApiError && err.status === 403)
    return new Error(`cannot list ${what}: this role's service account may not list them (grant list on them)`);
  return new Error(`cannot list ${what}: ${err instanceof Error ? err.message : String(err)}`);
}

const Label = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,251}[A-Za-z0-9])?$/, "must be a cluster ID or name"),
);
const PeeringsQuery = v.strictObject(
  { clusterId: v.optional(Label) },
  "unknown query parameter; peerings takes clusterId",
);
const NodesQuery = v.strictObject(
  { clusterId: v.optional(Label) },
  "unknown query parameter; virtual-nodes takes clusterId",
);
const NamespacesQuery = v.strictObject(
  {
    namespace: v.optional(
      v.pipe(v.string(), v.regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, "must be a namespace name")),
    ),
    phase: v.optional(
      v.picklist(
        ["Ready", "NoClusterSelected", "InProgress", "SomeFailed", "AllFailed", "Terminating"],
        "must be an offloading phase (Ready, InProgress, SomeFailed, AllFailed, NoClusterSelected, Terminating)",
      ),
    ),
  },
  "unknown query parameter; offloaded-namespaces takes namespace and phase",
);
const ClusterQuery = (view: string) =>
  v.strictObject({ clusterId: v.optional(Label) }, `unknown query parameter; ${view} takes clusterId`);

// biome-ignore lint/suspicious/noExplicitAny: conditions of several CRDs (Obj's loosely read statuses), each field read with a fallback
const conditionOf = (conditions: any[] | undefined, type: string) => conditions?.find((c) => c?.type === type);

export function peeringRow(fc: Obj) {
  // biome-ignore lint/suspicious/noExplicitAny: a ForeignCluster's conditions, read loosely as Obj is
  const conditions: any[] = fc.status?.peeringConditions ?? [];
  const { outgoing, incoming, network, authentication } = peeringSummary(fc);
  return {
    name: fc.metadata.name,
    clusterId: fc.spec?.clusterIdentity?.clusterID ?? null,
    clusterName: fc.spec?.clusterIdentity?.clusterName ?? null,
    outgoing,
    incoming,
    network,
    authentication,
    // One word for the status page: established when either direction is.
    state:
      outgoing === "Established" || incoming === "Established"
        ? "Established"
        : outgoing !== "None"
          ? outgoing
          : incoming,
    tenantNamespace: {
      local: fc.status?.tenantNamespace?.local ?? null,
      remote: fc.status?.tenantNamespace?.remote ?? null,
    },
    conditions: conditions.map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      lastTransitionTime: c.lastTransitionTime,
    })),
  };
}

export function virtualNodeRow(node: Obj) {
  const ready = conditionOf(node.status?.conditions, "Ready");
  return {
    name: node.metadata.name,
    clusterId: node.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL] ?? null,
    ready: ready?.status === "True" ? "Ready" : "NotReady",
    readyReason: ready?.status === "True" ? null : (ready?.message ?? ready?.reason ?? "no Ready condition yet"),
    capacity: node.status?.capacity ?? {},
    allocatable: node.status?.allocatable ?? {},
    cpu: node.status?.capacity?.cpu ?? null,
    memory: node.status?.capacity?.memory ?? null,
    pods: node.status?.capacity?.pods ?? null,
  };
}

export function offloadedNamespaceRow(no: Obj) {
  // biome-ignore lint/suspicious/noExplicitAny: a NamespaceOffloading's conditions, read loosely as Obj is
  const perCluster = Object.entries((no.status?.remoteNamespacesConditions ?? {}) as Record<string, any[]>).map(
    ([clusterId, conds]) => ({
      clusterId,
      required: conditionOf(conds, "OffloadingRequired")?.status ?? "Unknown",
      ready: conditionOf(conds, "Ready")?.status ?? "Unknown",
      reason: conditionOf(conds, "Ready")?.reason ?? conditionOf(conds, "OffloadingRequired")?.reason ?? null,
    }),
  );
  return {
    namespace: no.metadata.namespace,
    name: no.metadata.name,
    phase: no.status?.offloadingPhase ?? "Pending",
    namespaceMappingStrategy: no.spec?.namespaceMappingStrategy ?? "DefaultName",
    podOffloadingStrategy: no.spec?.podOffloadingStrategy ?? "LocalAndRemote",
    remoteNamespace: no.status?.remoteNamespaceName ?? null,
    clusters: perCluster,
    clusterSummary: perCluster
      .map(
        (c) => `${c.clusterId}: ${c.ready === "True" ? "ready" : c.required === "True" ? "pending" : "not selected"}`,
      )
      .join(", "),
  };
}

export function ipamRows(storages: Obj[]) {
  return storages.flatMap((s) =>
    // biome-ignore lint/suspicious/noExplicitAny: an IPAM storage's subnets, read loosely as Obj is
    Object.entries((s.spec?.clusterSubnets ?? {}) as Record<string, any>).map(([clusterId, n]) => ({
      storage: s.metadata.name,
      clusterId,
      podCidr: s.spec?.podCIDR ?? null,
      externalCidr: s.spec?.externalCIDR ?? null,
      remotePodCidr: n.remotePodCIDR || null,
      localNatPodCidr: n.localNATPodCIDR || null,
      remoteExternalCidr: n.remoteExternalCIDR || null,
      localNatExternalCidr: n.localNATExternalCIDR || null,
      // biome-ignore lint/suspicious/noExplicitAny: an IPAM storage's mappings, read loosely as Obj is
      endpointMappings: Object.values((s.spec?.endpointMappings ?? {}) as Record<string, any>).filter(
        (m) => clusterId in (m?.clusterMappings ?? {}),
      ).length,
    })),
  );
}

export function tunnelRow(te: Obj) {
  const c = te.status?.connection ?? {};
  return {
    namespace: te.metadata.namespace ?? null,
    name: te.metadata.name,
    clusterId: te.spec?.clusterID ?? null,
    endpoint: te.spec?.endpointIP ?? null,
    backend: te.spec?.backendType ?? null,
    status: c.status ?? "Pending",
    message: c.statusMessage ?? null,
    remotePodCidr:
      te.spec?.remoteNATPodCIDR && te.spec.remoteNATPodCIDR !== "None"
        ? te.spec.remoteNATPodCIDR
        : (te.spec?.remotePodCIDR ?? null),
    interface: te.status?.tunnelIFaceName ?? null,
  };
}

/**
 * One row per (peering, drop-in reflector plugin): what the provider granted or refused, read from
 * the ResourceRequests (ours, their status replicated back: outgoing; consumers' copies: incoming).
 */
function pluginGrantRows(rrs: Obj[]) {
  return rrs.flatMap((rr) => {
    const side =
      rr.metadata.labels?.[REPLICATION_REQUESTED_LABEL] === "true"
        ? "outgoing"
        : rr.metadata.labels?.[REPLICATION_STATUS_LABEL] === "true"
          ? "incoming"
          : undefined;
    if (!side) return [];
    const answers = new Map<string, { state?: string; message?: string; rules?: unknown[] }>(
      (rr.status?.reflectorPlugins ?? []).map((g: { name: string }) => [g.name, g]),
    );
    return ((rr.spec?.reflectorPlugins ?? []) as { name: string; version?: string }[]).map((p) => ({
      side,
      clusterId:
        (side === "outgoing" ? rr.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL] : rr.spec?.clusterIdentity?.clusterID) ??
        null,
      plugin: p.name,
      version: p.version ?? null,
      state: answers.get(p.name)?.state ?? "Pending",
      message: answers.get(p.name)?.message ?? "waiting for the provider's answer",
      rules: answers.get(p.name)?.rules ?? [],
    }));
  });
}

/** The six views (minus `exclude`) with their status-page sections. */
export function clusterViews(client: KubeClient, options: ClusterViewsOptions = {}): AdminExtension {
  const ttl = options.ttlMs ?? 2000;
  const now = options.now ?? (() => Date.now());
  const list = (res: ResourceRef, what: string, selector?: string) => cachedList(client, res, what, ttl, now, selector);
  const fcs = list(ForeignClusterResource, "ForeignClusters");
  const nodes = list(Resources.nodes, "virtual nodes", VIRTUAL_NODE_SELECTOR);
  const offloadings = list(NamespaceOffloadingResource, "NamespaceOffloadings");
  const ipams = list(IpamStorageResource, "IpamStorages");
  const tunnels = list(TunnelEndpointResource, "TunnelEndpoints");
  const requests = list(ResourceRequestResource, "ResourceRequests");
  const byCluster = <T extends { clusterId: string | null }>(rows: T[], id?: string) =>
    id ? rows.filter((r) => r.clusterId === id) : rows;

  const views: Record<ClusterViewName, View> = {
    peerings: async ({ query }) => {
      const q = parseInput(PeeringsQuery, query, "peerings query");
      return byCluster((await fcs()).map(peeringRow), q.clusterId).sort((a, b) => a.name!.localeCompare(b.name!));
    },
    "virtual-nodes": async ({ query }) => {
      const q = parseInput(NodesQuery, query, "virtual-nodes query");
      return byCluster((await nodes()).map(virtualNodeRow), q.clusterId).sort((a, b) => a.name!.localeCompare(b.name!));
    },
    "offloaded-namespaces": async ({ query }) => {
      const q = parseInput(NamespacesQuery, query, "offloaded-namespaces query");
      return (await offloadings())
        .map(offloadedNamespaceRow)
        .filter((r) => (!q.namespace || r.namespace === q.namespace) && (!q.phase || r.phase === q.phase))
        .sort((a, b) => a.namespace!.localeCompare(b.namespace!));
    },
    ipam: async ({ query }) => {
      const q = parseInput(ClusterQuery("ipam"), query, "ipam query");
      return byCluster(ipamRows(await ipams()), q.clusterId);
    },
    tunnels: async ({ query }) => {
      const q = parseInput(ClusterQuery("tunnels"), query, "tunnels query");
      return byCluster((await tunnels()).map(tunnelRow), q.clusterId);
    },
    "reflector-plugins": async ({ query }) => {
      const q = parseInput(ClusterQuery("reflector-plugins"), query, "reflector-plugins query");
      return byCluster(pluginGrantRows(await requests()), q.clusterId);
    },
  };
  const sections = [
    {
      title: "Peerings",
      view: "peerings",
      empty: "no ForeignCluster: this cluster has no peering yet",
      columns: [
        { key: "clusterName", label: "cluster" },
        { key: "clusterId", label: "cluster ID" },
        { key: "state", label: "state", format: "state" as const },
        { key: "outgoing", label: "outgoing" },
        { key: "incoming", label: "incoming" },
        { key: "network", label: "network" },
        { key: "authentication", label: "authentication" },
        { key: "tenantNamespace.local", label: "tenant namespace" },
      ],
    },
    {
      title: "Virtual nodes",
      view: "virtual-nodes",
      empty: "no virtual node (liqo.io/type=virtual-node)",
      columns: [
        { key: "name", label: "node" },
        { key: "clusterId", label: "remote cluster ID" },
        { key: "ready", label: "ready", format: "state" as const },
        { key: "readyReason", label: "why not ready" },
        { key: "cpu", label: "cpu" },
        { key: "memory", label: "memory" },
        { key: "pods", label: "pods" },
      ],
    },
    {
      title: "Offloaded namespaces",
      view: "offloaded-namespaces",
      empty: "no NamespaceOffloading",
      columns: [
        { key: "namespace", label: "namespace" },
        { key: "phase", label: "phase", format: "state" as const },
        { key: "remoteNamespace", label: "remote namespace" },
        { key: "podOffloadingStrategy", label: "pods" },
        { key: "namespaceMappingStrategy", label: "mapping" },
        { key: "clusterSummary", label: "clusters" },
      ],
    },
    {
      title: "IPAM allocations",
      view: "ipam",
      empty: "no network allocated to a peer",
      columns: [
        { key: "clusterId", label: "cluster ID" },
        { key: "remotePodCidr", label: "remote pod CIDR" },
        { key: "localNatPodCidr", label: "our pods seen as" },
        { key: "remoteExternalCidr", label: "remote external CIDR" },
        { key: "localNatExternalCidr", label: "our external seen as" },
        { key: "endpointMappings", label: "endpoint mappings", format: "count" as const },
      ],
    },
    {
      title: "Tunnels",
      view: "tunnels",
      empty: "no TunnelEndpoint",
      columns: [
        { key: "clusterId", label: "cluster ID" },
        { key: "status", label: "status", format: "state" as const },
        { key: "message", label: "message" },
        { key: "endpoint", label: "gateway endpoint" },
        { key: "remotePodCidr", label: "remote pods via" },
        { key: "interface", label: "interface" },
      ],
    },
    {
      title: "Reflector plugins",
      view: "reflector-plugins",
      empty: "no drop-in reflector plugin requested by or of a peer",
      columns: [
        { key: "side", label: "peering" },
        { key: "clusterId", label: "cluster ID" },
        { key: "plugin", label: "plugin" },
        { key: "state", label: "state", format: "state" as const },
        { key: "message", label: "granted, or why not" },
      ],
    },
  ];
  const excluded = new Set(options.exclude ?? []);
  return {
    views: Object.fromEntries(Object.entries(views).filter(([name]) => !excluded.has(name))),
    status: sections.filter((s) => !excluded.has(s.view)),
  };
}
