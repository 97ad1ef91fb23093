// Pure planning of the Multi-Cluster Services API: one export described from a Service and its
// EndpointSlices, the exports of a service merged into what its ServiceImport must say (KEP-1645
// conflict resolution: the oldest export wins, ports are the union), the imported EndpointSlices
// with each exporter's addresses remapped through the fabric's translation, and the ServiceExport's
// conditions. No I/O: controller.ts reads the caches and writes what these functions answer.
import type { TranslationSources } from "../../netfabric/manager/translation-watch.ts";
import { translateWith } from "../../netfabric/manager/translation-watch.ts";
import {
  EXPORTED_SERVICE_ORIGIN_LABEL,
  ExportedServiceKind,
  type CarriedSlice,
  type ExportedServiceSpec,
} from "../apis/multicluster/exportedservice.ts";
import { MCS_SERVICE_NAME_LABEL, MCS_SOURCE_CLUSTER_LABEL, ServiceExportReason } from "../apis/multicluster/group.ts";
import type { MetaCondition } from "../apis/multicluster/serviceexport.ts";
import type { McsServicePort } from "../apis/multicluster/serviceimport.ts";
import { crossesAt, pastThreshold } from "../continuity/threshold.ts";
import type { KubeObject } from "../kube/resources.ts";
import {
  derivedServiceName,
  importedSliceName,
  MANAGED_BY_LABEL,
  MCS_MANAGER,
  SLICE_MANAGED_BY_LABEL,
  SLICE_MANAGER,
  SLICE_SERVICE_NAME_LABEL,
} from "./names.ts";

export interface ServiceLike extends KubeObject {
  spec?: {
    type?: string;
    clusterIP?: string;
    ports?: { name?: string; protocol?: string; appProtocol?: string; port: number }[];
    sessionAffinity?: string;
    sessionAffinityConfig?: { clientIP?: { timeoutSeconds?: number } };
  };
}

export interface SliceLike extends KubeObject {
  addressType?: string;
  ports?: { name?: string; port?: number; protocol?: string; appProtocol?: string }[] | null;
  endpoints?:
    | {
        addresses: string[];
        conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
        hostname?: string;
      }[]
    | null;
}

/** Why a ServiceExport cannot be exported (Valid=False), or undefined when it can. */
export function invalidExport(
  namespace: string,
  name: string,
  svc: ServiceLike | undefined,
): { reason: string; message: string } | undefined {
  if (!svc)
    return {
      reason: ServiceExportReason.NoService,
      message: `Service ${namespace}/${name} does not exist: create a Service named ${name} in ${namespace}, or delete this ServiceExport`,
    };
  if (svc.spec?.type === "ExternalName")
    return {
      reason: ServiceExportReason.InvalidServiceType,
      message: `Service ${namespace}/${name} is of type ExternalName, which the MCS API cannot export: export a ClusterIP, NodePort, LoadBalancer or headless Service`,
    };
  return undefined;
}

/** What the exporting cluster says about one exported Service: the carrier's spec. */
export function describeExport(
  namespace: string,
  name: string,
  exportedAt: string,
  svc: ServiceLike,
  slices: readonly SliceLike[],
): ExportedServiceSpec {
  const spec = svc.spec ?? {};
  const headless = spec.clusterIP === "None";
  const out: ExportedServiceSpec = {
    serviceNamespace: namespace,
    serviceName: name,
    exportedAt,
    type: headless ? "Headless" : "ClusterSetIP",
    ports: (spec.ports ?? []).map((p) =>
      clean({ name: p.name, protocol: p.protocol ?? "TCP", appProtocol: p.appProtocol, port: p.port }),
    ),
    sessionAffinity: spec.sessionAffinity ?? "None",
    slices: [...slices]
      .sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""))
      .filter((s) => s.addressType === "IPv4" || s.addressType === "IPv6")
      .map((s) => ({
        addressType: s.addressType!,
        ports: (s.ports ?? []).map((p) =>
          clean({ name: p.name, port: p.port, protocol: p.protocol, appProtocol: p.appProtocol }),
        ),
        endpoints: (s.endpoints ?? []).map((e) =>
          clean({
            addresses: [...e.addresses],
            ready: e.conditions?.ready,
            serving: e.conditions?.serving,
            terminating: e.conditions?.terminating,
            hostname: e.hostname,
          }),
        ),
      })),
  };
  if (spec.sessionAffinity === "ClientIP" && spec.sessionAffinityConfig)
    out.sessionAffinityConfig = spec.sessionAffinityConfig;
  return out;
}

/** Drops undefined fields, so equal descriptions compare equal as JSON. */
function clean<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export interface ExportRecord {
  clusterId: string;
  spec: ExportedServiceSpec;
}

/** One tenant namespace shared with a peer, as the reader sees it. */
export interface ChannelView {
  peer: string;
  direction: "outgoing" | "incoming";
  namespace: string;
  /** Whether this cluster imports what the peer exports (mcs.liqo.io/peer-policy). */
  import: boolean;
  carriers: readonly { metadata: KubeObject["metadata"]; spec?: unknown }[];
}

/**
 * The peers' exports of one service, one per peer. An ExportedService is attributed to the peer of
 * the channel it sits in, never to its labels (a consumer cannot pass its services off as its
 * provider's); ours (origin label = this cluster) are skipped, malformed ones ignored. Peered both
 * ways, the two tenant namespaces carry the same exports: the outgoing one is read first.
 */
export function peerExports(
  self: string,
  namespace: string,
  name: string,
  channels: readonly ChannelView[],
): ExportRecord[] {
  const out: ExportRecord[] = [];
  const seen = new Set<string>([self]);
  const ordered = [...channels].sort((a, b) => (a.direction === b.direction ? 0 : a.direction === "outgoing" ? -1 : 1));
  for (const ch of ordered) {
    if (!ch.import || seen.has(ch.peer)) continue;
    for (const c of ch.carriers) {
      if (c.metadata.namespace !== ch.namespace) continue;
      if (c.metadata.labels?.[EXPORTED_SERVICE_ORIGIN_LABEL] === self) continue;
      const spec = c.spec as ExportedServiceSpec | undefined;
      if (spec?.serviceNamespace !== namespace || spec?.serviceName !== name) continue;
      if (ExportedServiceKind.issues(c).length) continue; // malformed: as if absent
      out.push({ clusterId: ch.peer, spec });
      seen.add(ch.peer);
      break;
    }
  }
  return out;
}

export interface Conflict {
  reason: string;
  message: string;
}

export interface MergedImport {
  type: "ClusterSetIP" | "Headless";
  ports: McsServicePort[];
  sessionAffinity: string;
  sessionAffinityConfig?: ExportedServiceSpec["sessionAffinityConfig"];
  /** Exporting clusters, oldest export first. */
  clusters: string[];
  /** Empty when every export agrees. */
  conflicts: Conflict[];
}

/** The KEP's order: the oldest export first, ties broken by cluster ID so every cluster agrees. */
export function byAge(a: ExportRecord, b: ExportRecord): number {
  const t = Date.parse(a.spec.exportedAt) - Date.parse(b.spec.exportedAt);
  return t !== 0 ? t : a.clusterId < b.clusterId ? -1 : a.clusterId > b.clusterId ? 1 : 0;
}

const portKey = (p: McsServicePort) => `${p.port}/${p.protocol ?? "TCP"}`;
const samePort = (a: McsServicePort, b: McsServicePort) =>
  a.port === b.port &&
  (a.protocol ?? "TCP") === (b.protocol ?? "TCP") &&
  (a.appProtocol ?? "") === (b.appProtocol ?? "");

/**
 * Merges the exports of one service (KEP-1645, "Constraints and Conflict Resolution"): type,
 * session affinity and its config are the oldest export's; ports are the union of every export's,
 * and where two ports collide (same name with a different port, protocol or appProtocol, or the
 * same port/protocol under another name) the oldest export's port stays. Each disagreement is one
 * conflict, named by its KEP reason, saying which cluster won and why.
 */
export function mergeExports(records: readonly ExportRecord[]): MergedImport {
  if (!records.length) throw new Error("mergeExports needs at least one export");
  const ordered = [...records].sort(byAge);
  const winner = ordered[0]!;
  const clusters = ordered.map((r) => r.clusterId);
  const why = `cluster ${winner.clusterId} exported it first (${winner.spec.exportedAt}), and the oldest export wins`;
  const conflicts: Conflict[] = [];
  const disagree = (
    field: string,
    reason: string,
    differs: (r: ExportRecord) => boolean,
    shown: (r: ExportRecord) => string,
  ) => {
    const others = ordered.slice(1).filter(differs);
    if (!others.length) return;
    conflicts.push({
      reason,
      message: `${field} differs between exporting clusters: ${ordered.map((r) => `${r.clusterId}=${shown(r)}`).join(", ")}; using ${shown(winner)}: ${why}`,
    });
  };
  disagree(
    "type",
    ServiceExportReason.TypeConflict,
    (r) => r.spec.type !== winner.spec.type,
    (r) => r.spec.type,
  );
  const affinity = (r: ExportRecord) => r.spec.sessionAffinity ?? "None";
  disagree(
    "sessionAffinity",
    ServiceExportReason.SessionAffinityConflict,
    (r) => affinity(r) !== affinity(winner),
    affinity,
  );
  const affinityConfig = (r: ExportRecord) => JSON.stringify(r.spec.sessionAffinityConfig ?? {});
  disagree(
    "sessionAffinityConfig",
    ServiceExportReason.SessionAffinityConfigConflict,
    (r) => affinity(r) === affinity(winner) && affinityConfig(r) !== affinityConfig(winner),
    affinityConfig,
  );
  const ports: McsServicePort[] = [];
  const portProblems: string[] = [];
  for (const r of ordered) {
    for (const p of r.spec.ports) {
      const byName = ports.find((q) => (q.name ?? "") === (p.name ?? ""));
      if (byName) {
        if (!samePort(byName, p))
          portProblems.push(
            `port "${p.name ?? ""}" of cluster ${r.clusterId} is ${portKey(p)}, the older export has ${portKey(byName)}`,
          );
        continue;
      }
      const byNumber = ports.find((q) => portKey(q) === portKey(p));
      if (byNumber) {
        portProblems.push(
          `port ${portKey(p)} of cluster ${r.clusterId} is named "${p.name ?? ""}", the older export names it "${byNumber.name ?? ""}"`,
        );
        continue;
      }
      ports.push(p);
    }
  }
  if (portProblems.length)
    conflicts.push({
      reason: ServiceExportReason.PortConflict,
      message: `ports conflict: ${portProblems.join("; ")}; the import has the union of the ports, the oldest export's where they collide (cluster ${winner.clusterId} exported first, ${winner.spec.exportedAt})`,
    });
  const out: MergedImport = {
    type: winner.spec.type,
    ports,
    sessionAffinity: affinity(winner),
    clusters,
    conflicts,
  };
  if (winner.spec.sessionAffinityConfig) out.sessionAffinityConfig = winner.spec.sessionAffinityConfig;
  return out;
}

/**
 * How an exporter's addresses read here. `sources` are the NetworkConfigs of the peering (see
 * netfabric/manager/translation-watch.ts): none at all means the peering has no network fabric, so
 * addresses pass unchanged; present but not processed means we cannot know yet (the exporter's
 * endpoints are left out until the network manager has remapped its networks). With the fabric, a
 * peer's address outside its own pod CIDR is dropped (`map` answers undefined): a peer may point a
 * clusterset name at its own pods only, never at addresses of ours or of a third cluster.
 * Addresses that are not IP addresses are dropped everywhere (the API server would refuse the slice).
 */
export type Remapper = { ok: true; map(ip: string): string | undefined } | { ok: false; reason: string };

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9a-fA-F:.]+$/;
const isIp = (ip: string) => IPV4.test(ip) || (ip.includes(":") && IPV6.test(ip));

export function remapperFor(sources: TranslationSources | undefined, local: boolean): Remapper {
  if (local || !sources || (!sources.remote && !sources.local))
    return { ok: true, map: (ip) => (isIp(ip) ? ip : undefined) };
  if (!sources.remote?.status?.processed)
    return {
      ok: false,
      reason: `the network fabric has not remapped cluster ${sources.remoteClusterId}'s networks yet (its NetworkConfig is not processed)`,
    };
  return {
    ok: true,
    map(ip) {
      try {
        return translateWith(sources, ip, "backward");
      } catch {
        return undefined; // outside the peer's pod CIDR, or not an IPv4 address
      }
    },
  };
}

/**
 * Service continuity for imports: the exporters (ourselves aside) whose tunnel has been dark longer
 * than `thresholdMs` at `now` (`since`: when a peer stopped answering, undefined while it answers or
 * has no network fabric), and when to look again because one still under the threshold crosses it.
 */
export function unreachableExporters(
  self: string,
  records: readonly ExportRecord[],
  since: (clusterId: string) => number | undefined,
  now: number,
  thresholdMs: number,
): { unreachable: Set<string>; recheckAt?: number } {
  const unreachable = new Set<string>();
  let recheckAt: number | undefined;
  for (const r of records) {
    if (r.clusterId === self) continue;
    const s = since(r.clusterId);
    if (pastThreshold(s, now, thresholdMs)) unreachable.add(r.clusterId);
    const due = crossesAt(s, now, thresholdMs);
    if (due !== undefined && (recheckAt === undefined || due < recheckAt)) recheckAt = due;
  }
  return recheckAt === undefined ? { unreachable } : { unreachable, recheckAt };
}

/**
 * The imported EndpointSlices of one service: each exporter's slices, addresses remapped, labelled
 * per KEP-1645. `unreachable`: the exporters whose tunnel has been dark longer than the service
 * continuity threshold; their endpoints are kept, with conditions.ready false, until they answer
 * again (then they are what the exporter said, since they are planned from its export each time).
 */
export function importedSlices(
  namespace: string,
  name: string,
  records: readonly ExportRecord[],
  remappers: ReadonlyMap<string, Remapper>,
  owner: { apiVersion: string; kind: string; name: string; uid: string },
  unreachable: ReadonlySet<string> = new Set(),
): KubeObject[] {
  const out: KubeObject[] = [];
  for (const r of [...records].sort(byAge)) {
    const remap = remappers.get(r.clusterId) ?? remapperFor(undefined, false);
    if (!remap.ok) continue;
    const dark = unreachable.has(r.clusterId);
    r.spec.slices.forEach((s: CarriedSlice, i) => {
      out.push({
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: {
          name: importedSliceName(name, r.clusterId, i),
          namespace,
          labels: {
            [SLICE_SERVICE_NAME_LABEL]: derivedServiceName(name),
            [SLICE_MANAGED_BY_LABEL]: SLICE_MANAGER,
            [MANAGED_BY_LABEL]: MCS_MANAGER,
            [MCS_SERVICE_NAME_LABEL]: name,
            [MCS_SOURCE_CLUSTER_LABEL]: r.clusterId,
          },
          ownerReferences: [{ ...owner, controller: true }],
        },
        addressType: s.addressType,
        ports: s.ports ?? [],
        endpoints: s.endpoints
          .map((e) =>
            clean({
              addresses: e.addresses.map((a) => remap.map(a)).filter((a): a is string => a !== undefined),
              conditions: clean({ ready: dark ? false : e.ready, serving: e.serving, terminating: e.terminating }),
              hostname: e.hostname,
            }),
          )
          .filter((e) => e.addresses.length > 0),
      } as KubeObject);
    });
  }
  return out;
}

/** A condition as it must be now: lastTransitionTime kept when the status did not change. */
export function condition(
  previous: readonly MetaCondition[] | undefined,
  type: string,
  status: "True" | "False" | "Unknown",
  reason: string,
  message: string,
  generation: number | undefined,
  now: string,
): MetaCondition {
  const old = previous?.find((c) => c.type === type);
  const c: MetaCondition = {
    type,
    status,
    reason,
    message,
    lastTransitionTime: old && old.status === status ? old.lastTransitionTime : now,
  };
  if (generation !== undefined) c.observedGeneration = generation;
  return c;
}

/** Whether two condition lists say the same (times aside). */
export function sameConditions(a: readonly MetaCondition[] | undefined, b: readonly MetaCondition[]): boolean {
  const strip = (l: readonly MetaCondition[] | undefined) =>
    JSON.stringify(
      (l ?? []).map(({ lastTransitionTime: _t, ...rest }) => rest).sort((x, y) => x.type.localeCompare(y.type)),
    );
  return strip(a) === strip(b);
}
