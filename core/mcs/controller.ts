// The Multi-Cluster Services controller (`liqo controller-manager`, controller `mcs`): for every
// exported Service here and in the peers, the ServiceImport, its derived Service and its
// EndpointSlices here, and the ServiceExport's conditions.
//
// Exchange: each peering has a tenant namespace in its provider, the only place the consumer's
// identity may write. Both sides meet there: the consumer pushes an ExportedService per exported
// Service into it (its peer identity) and reads the provider's from it; the provider publishes its
// own there (its local client) and reads the consumer's. So a one-way peering carries exports both
// ways. What a peer wrote is attributed by where it sits (the channel's peer), never by its labels.
// Level-triggered: every key (namespace/service) is reconciled from the caches; our ExportedServices
// with no export behind them are deleted by the same pass, at start as at any time.
import { ForeignClusterResource, type ForeignCluster } from "../apis/discovery/foreigncluster.ts";
import {
  EXPORTED_SERVICE_ORIGIN_LABEL,
  ExportedServiceKind,
  ExportedServiceResource,
  type ExportedService,
} from "../apis/multicluster/exportedservice.ts";
import {
  MCS_GROUP,
  MCS_SERVICE_NAME_LABEL,
  MCS_SOURCE_CLUSTER_LABEL,
  ServiceExportCondition,
  ServiceExportReason,
} from "../apis/multicluster/group.ts";
import { ServiceExportResource, type MetaCondition, type ServiceExport } from "../apis/multicluster/serviceexport.ts";
import { ServiceImportResource, type ServiceImport } from "../apis/multicluster/serviceimport.ts";
import { NetworkConfigResource, type NetworkConfig } from "../apis/net/networkconfig.ts";
import { TunnelEndpointResource, type TunnelEndpoint } from "../apis/net/tunnelendpoint.ts";
import { peerUnreachableSince, unreachableSinceOf } from "../continuity/controller.ts";
import { DEFAULT_CONTINUITY_THRESHOLD_MS } from "../continuity/threshold.ts";
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError } from "../kube/errors.ts";
import { createEventRecorder } from "../kube/events.ts";
import { createInformer, type Informer } from "../kube/informer.ts";
import { Resources, type KubeObject } from "../kube/resources.ts";
import { createWorkQueue } from "../kube/workqueue.ts";
import { silentLogger, type Logger } from "../log.ts";
import type { Registry } from "../metrics/index.ts";
import { readIdentity, peerClient as defaultPeerClient } from "../peering/foreigncluster/secrets.ts";
import type { TranslationSources } from "../../netfabric/manager/translation-watch.ts";
import { networkConfigRole } from "../../netfabric/manager/forge.ts";
import { carrierName, derivedServiceName, MANAGED_BY_LABEL, MCS_MANAGER, SLICE_SERVICE_NAME_LABEL } from "./names.ts";
import {
  condition,
  describeExport,
  importedSlices,
  invalidExport,
  mergeExports,
  peerExports,
  remapperFor,
  sameConditions,
  unreachableExporters,
  type ExportRecord,
  type Remapper,
  type ServiceLike,
  type SliceLike,
} from "./plan.ts";
import { covers, flowOf, MCS_NAMESPACES_ANNOTATION, type Flow, type PeerPolicy } from "./policy.ts";
import { stable } from "./stable.ts";

export interface McsControllerOptions {
  client: KubeClient;
  localClusterId: string;
  logger?: Logger;
  /** The flow with peers whose ForeignCluster has no mcs.liqo.io/peer-policy annotation. */
  defaultPolicy?: PeerPolicy;
  /** Every key again this often (default 60 s), and the channels re-read. */
  resyncMs?: number;
  /** For tests: how a client of the provider is made from the stored identity. */
  peerClient?: (kubeconfig: string, proxyUrl?: string) => KubeClient;
  workers?: number;
  /** Where liqo_mcs_* gauges are registered (computed at scrape time from the caches). */
  registry?: Registry;
  /**
   * Service continuity (--service-continuity-threshold, default 15 s): an exporter whose tunnel has
   * been dark this long has its imported endpoints marked not ready until it answers again.
   */
  continuityThresholdMs?: number;
}

type Carrier = ExportedService & KubeObject;
type SvcExport = ServiceExport & KubeObject;
type SvcImport = ServiceImport & KubeObject;
type FC = ForeignCluster & KubeObject;

/** One place where we meet a peer: the tenant namespace of a peering, here (incoming) or in the provider (outgoing). */
interface Channel {
  peer: string;
  direction: "outgoing" | "incoming";
  client: KubeClient;
  namespace: string;
  carriers: Informer<Carrier>;
  flow: Flow;
  /** What the channel was made from, to notice a new identity or namespace. */
  identity: string;
}

const FIELD_MANAGER = MCS_MANAGER;
const established = (fc: FC, type: string) =>
  fc.status?.peeringConditions?.some((c) => c.type === type && c.status === "Established") ?? false;
/** An outgoing peering whose virtual node went NotReady (the provider out of reach): still a peering. */
const waitingForNode = (fc: FC) =>
  fc.status?.peeringConditions?.some(
    (c) => c.type === "OutgoingPeering" && c.status === "Pending" && c.reason === "WaitingForVirtualNode",
  ) ?? false;

export function createMcsController(o: McsControllerOptions) {
  const self = o.localClusterId;
  const client = o.client;
  const log = (o.logger ?? silentLogger).child({ controller: "mcs" });
  const events = createEventRecorder(client, "liqo-mcs", log);
  const policy = o.defaultPolicy ?? "ExportAndImport";
  const makePeerClient = o.peerClient ?? defaultPeerClient;
  const thresholdMs = o.continuityThresholdMs ?? DEFAULT_CONTINUITY_THRESHOLD_MS;

  const exports = createInformer<SvcExport>({ client, resource: ServiceExportResource, logger: log });
  const imports = createInformer<SvcImport>({ client, resource: ServiceImportResource, logger: log });
  const services = createInformer<ServiceLike>({ client, resource: Resources.services, logger: log });
  const slices = createInformer<SliceLike>({
    client,
    resource: Resources.endpointSlices,
    labelSelector: SLICE_SERVICE_NAME_LABEL,
    logger: log,
  });
  const namespaces = createInformer({ client, resource: Resources.namespaces, logger: log });
  const fcs = createInformer<FC>({ client, resource: ForeignClusterResource, logger: log });
  const configs = createInformer<NetworkConfig & KubeObject>({ client, resource: NetworkConfigResource, logger: log });
  const localCarriers = createInformer<Carrier>({ client, resource: ExportedServiceResource, logger: log });
  // What the active gateway says of each peer's tunnel (unreachableSince), as service continuity reads it.
  const teps = createInformer<TunnelEndpoint & KubeObject>({ client, resource: TunnelEndpointResource, logger: log });
  const locals: Informer<KubeObject>[] = [
    exports,
    imports,
    services,
    slices,
    namespaces,
    fcs,
    configs,
    localCarriers,
    teps,
  ] as unknown as Informer<KubeObject>[];

  const channels = new Map<string, Channel>();
  const queue = createWorkQueue({ name: "mcs", handler: reconcile, workers: o.workers ?? 2, logger: log });

  const keyOf = (ns: string | undefined, name: string | undefined) => (ns && name ? `${ns}/${name}` : undefined);
  const add = (k: string | undefined) => k && queue.add(k);
  const carrierKey = (c: Carrier) => keyOf(c.spec?.serviceNamespace, c.spec?.serviceName);

  function allKeys(): Set<string> {
    const keys = new Set<string>();
    for (const e of exports.list()) keys.add(`${e.metadata.namespace}/${e.metadata.name}`);
    for (const i of imports.list())
      if (i.metadata.labels?.[MANAGED_BY_LABEL] === MCS_MANAGER) keys.add(`${i.metadata.namespace}/${i.metadata.name}`);
    for (const c of localCarriers.list()) {
      const k = carrierKey(c);
      if (k) keys.add(k);
    }
    for (const ch of channels.values())
      for (const c of ch.carriers.list()) {
        const k = carrierKey(c);
        if (k) keys.add(k);
      }
    return keys;
  }
  const enqueueAll = () => {
    for (const k of allKeys()) queue.add(k);
  };

  // Handlers only enqueue keys.
  const own = (obj: KubeObject) => add(keyOf(obj.metadata.namespace, obj.metadata.name));
  exports.on({ add: own, update: (_, n) => own(n), delete: own });
  imports.on({ add: own, update: (_, n) => own(n), delete: own });
  const svcKey = (s: KubeObject) =>
    add(keyOf(s.metadata.namespace, s.metadata.labels?.[MCS_SERVICE_NAME_LABEL] ?? s.metadata.name));
  services.on({ add: svcKey, update: (_, n) => svcKey(n), delete: svcKey });
  const sliceKey = (s: KubeObject) =>
    add(
      keyOf(
        s.metadata.namespace,
        s.metadata.labels?.[MCS_SERVICE_NAME_LABEL] ?? s.metadata.labels?.[SLICE_SERVICE_NAME_LABEL],
      ),
    );
  slices.on({ add: sliceKey, update: (_, n) => sliceKey(n), delete: sliceKey });
  const carrier = (c: Carrier) => add(carrierKey(c));
  localCarriers.on({ add: carrier, update: (_, n) => carrier(n), delete: carrier });
  const nsChanged = (n: KubeObject) => {
    for (const k of allKeys()) if (k.startsWith(`${n.metadata.name}/`)) queue.add(k);
  };
  namespaces.on({ add: nsChanged, update: (_, n) => nsChanged(n), delete: nsChanged });
  configs.on({ add: () => enqueueAll(), update: () => enqueueAll(), delete: () => enqueueAll() });
  // The gateway rewrites its status every pass: only a change of reachability matters here.
  teps.on({
    add: () => enqueueAll(),
    update: (a, b) => {
      if (unreachableSinceOf(a) !== unreachableSinceOf(b)) enqueueAll();
    },
    delete: () => enqueueAll(),
  });
  fcs.on({ add: () => refreshSoon(), update: () => refreshSoon(), delete: () => refreshSoon() });

  // Channels are re-read one refresh at a time; a change during one runs another after it.
  let refreshing: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  function refreshSoon() {
    if (stopped) return;
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = refreshChannels()
      .catch((err) =>
        log.warn("reading the peerings failed; retried at the next resync", { err: (err as Error).message }),
      )
      .finally(() => {
        refreshing = undefined;
        if (again) {
          again = false;
          refreshSoon();
        }
      });
  }

  async function refreshChannels(): Promise<void> {
    const wanted = new Map<string, Omit<Channel, "carriers"> & { proxyUrl?: string }>();
    for (const fc of fcs.list()) {
      const peer = fc.spec?.clusterIdentity?.clusterID;
      const tenant = fc.status?.tenantNamespace?.local;
      if (!peer || peer === self || !tenant || fc.metadata.deletionTimestamp) continue;
      const flow = flowOf(fc.metadata.annotations, policy);
      if (flow.invalid) events.warning(fc, "InvalidMcsPolicy", flow.invalid);
      if (established(fc, "IncomingPeering"))
        wanted.set(`${peer}/incoming`, {
          peer,
          direction: "incoming",
          client,
          namespace: tenant,
          flow,
          identity: tenant,
        });
      // An open channel stays open while the provider is out of reach: its exports stay imported
      // (service continuity marks them not ready), rather than deleted until it answers again.
      if (established(fc, "OutgoingPeering") || (channels.has(`${peer}/outgoing`) && waitingForNode(fc))) {
        const identity = await readIdentity(client, tenant, peer);
        if (!identity) continue;
        const stamp = `${identity.remoteNamespace}\n${identity.kubeconfig}\n${fc.spec.foreignProxyUrl ?? ""}`;
        const existing = channels.get(`${peer}/outgoing`);
        wanted.set(`${peer}/outgoing`, {
          peer,
          direction: "outgoing",
          client:
            existing?.identity === stamp
              ? existing.client
              : makePeerClient(identity.kubeconfig, fc.spec.foreignProxyUrl || undefined),
          namespace: identity.remoteNamespace,
          flow,
          identity: stamp,
        });
      }
    }
    for (const [key, ch] of channels) {
      const w = wanted.get(key);
      if (w && w.identity === ch.identity) {
        ch.flow = w.flow;
        continue;
      }
      channels.delete(key);
      if (ch.direction === "outgoing") await ch.carriers.stop();
      log.info("MCS channel closed", { peer: ch.peer, direction: ch.direction, namespace: ch.namespace });
    }
    for (const [key, w] of wanted) {
      if (channels.has(key)) continue;
      let carriers: Informer<Carrier> = localCarriers;
      if (w.direction === "outgoing") {
        carriers = createInformer<Carrier>({
          client: w.client,
          resource: ExportedServiceResource,
          namespace: w.namespace,
          logger: log.child({ peer: w.peer }),
        });
        carriers.on({ add: carrier, update: (_, n) => carrier(n), delete: carrier });
        carriers.start();
        try {
          await carriers.waitForSync(30_000);
        } catch (err) {
          await carriers.stop();
          log.warn("the provider's tenant namespace cannot be read yet; retried at the next resync", {
            peer: w.peer,
            namespace: w.namespace,
            err: (err as Error).message,
          });
          continue;
        }
      }
      channels.set(key, { ...w, carriers });
      log.info("MCS channel open", { peer: w.peer, direction: w.direction, namespace: w.namespace, policy: w.flow });
    }
    enqueueAll();
  }

  function sourcesFor(peer: string): TranslationSources | undefined {
    const s: TranslationSources = { remoteClusterId: peer };
    for (const c of configs.list()) {
      const role = networkConfigRole(c.metadata.labels);
      if (role?.clusterId !== peer) continue;
      if (role.local) s.local = c;
      else s.remote = c;
    }
    return s.local || s.remote ? s : undefined;
  }

  async function publish(
    ns: string,
    name: string,
    local: ExportRecord | undefined,
  ): Promise<{ peers: string[]; failures: string[]; uncovered: string[] }> {
    const cname = carrierName(self, ns, name);
    const peers: string[] = [];
    const failures: string[] = [];
    const uncovered: string[] = [];
    for (const ch of channels.values()) {
      if (ch.flow.export && !covers(ch.flow, ns)) uncovered.push(ch.peer);
      const want = ch.flow.export && covers(ch.flow, ns) ? local : undefined;
      const have = ch.carriers.get(`${ch.namespace}/${cname}`);
      try {
        if (want) {
          const labels = { [EXPORTED_SERVICE_ORIGIN_LABEL]: self, [MANAGED_BY_LABEL]: MCS_MANAGER };
          if (
            !have ||
            stable(have.spec) !== stable(want.spec) ||
            have.metadata.labels?.[EXPORTED_SERVICE_ORIGIN_LABEL] !== self
          ) {
            await ch.client.apply(
              ExportedServiceResource,
              {
                apiVersion: ExportedServiceKind.apiVersion,
                kind: ExportedServiceKind.kind,
                metadata: { name: cname, namespace: ch.namespace, labels },
                spec: want.spec,
              },
              { fieldManager: FIELD_MANAGER, force: true },
            );
          }
          peers.push(ch.peer);
        } else if (have && have.metadata.labels?.[EXPORTED_SERVICE_ORIGIN_LABEL] === self) {
          await ch.client.delete(ExportedServiceResource, cname, ch.namespace, { uid: have.metadata.uid });
        }
      } catch (err) {
        failures.push(`${ch.direction} peering with ${ch.peer} (namespace ${ch.namespace}): ${(err as Error).message}`);
      }
    }
    return {
      peers: [...new Set(peers)],
      failures,
      uncovered: [...new Set(uncovered)].filter((p) => !peers.includes(p)),
    };
  }

  /** The peers' exports of ns/name, one per peer, from the channels whose flow lets them in. */
  function gather(ns: string, name: string): ExportRecord[] {
    return peerExports(
      self,
      ns,
      name,
      [...channels.values()].map((c) => ({
        peer: c.peer,
        direction: c.direction,
        namespace: c.namespace,
        import: c.flow.import && covers(c.flow, ns),
        carriers: c.carriers.list(),
      })),
    );
  }

  async function removeImport(ns: string, name: string): Promise<void> {
    const si = imports.get(`${ns}/${name}`);
    if (si?.metadata.labels?.[MANAGED_BY_LABEL] !== MCS_MANAGER) return;
    for (const s of slices.list())
      if (
        s.metadata.namespace === ns &&
        s.metadata.labels?.[MCS_SERVICE_NAME_LABEL] === name &&
        s.metadata.labels?.[MANAGED_BY_LABEL] === MCS_MANAGER
      )
        await client.delete(Resources.endpointSlices, s.metadata.name!, ns);
    const derived = services.get(`${ns}/${derivedServiceName(name)}`);
    if (derived?.metadata.labels?.[MANAGED_BY_LABEL] === MCS_MANAGER)
      await client.delete(Resources.services, derived.metadata.name!, ns);
    await client.delete(ServiceImportResource, name, ns, { uid: si.metadata.uid });
    log.info("import removed", { key: `${ns}/${name}` });
  }

  async function applyImport(ns: string, name: string, records: ExportRecord[]): Promise<string[]> {
    const key = `${ns}/${name}`;
    const existing = imports.get(key);
    if (existing && existing.metadata.labels?.[MANAGED_BY_LABEL] !== MCS_MANAGER) {
      events.warning(existing, "ImportConflict", `ServiceImport ${key} was not made by liqo; it is left alone`);
      return [];
    }
    const merged = mergeExports(records);
    const dname = derivedServiceName(name);
    let derived = services.get(`${ns}/${dname}`);
    if (derived && derived.metadata.labels?.[MANAGED_BY_LABEL] !== MCS_MANAGER)
      throw new Error(
        `Service ${ns}/${dname} exists and was not made by liqo; rename it so the import's derived Service can be created`,
      );
    const headless = merged.type === "Headless";
    if (derived && (derived.spec?.clusterIP === "None") !== headless) {
      // clusterIP is immutable: a type change re-creates the derived Service.
      await client.delete(Resources.services, dname, ns, { uid: derived.metadata.uid });
      derived = undefined;
    }
    const ip =
      !headless && derived?.spec?.clusterIP && derived.spec.clusterIP !== "None" ? derived.spec.clusterIP : undefined;
    const labels = { [MANAGED_BY_LABEL]: MCS_MANAGER };
    const importSpec = (ips: string[] | undefined) => ({
      ports: merged.ports,
      ...(ips ? { ips } : {}),
      type: merged.type,
      sessionAffinity: merged.sessionAffinity,
      ...(merged.sessionAffinityConfig ? { sessionAffinityConfig: merged.sessionAffinityConfig } : {}),
    });
    const applyImportObject = (ips: string[] | undefined) =>
      client.apply<SvcImport>(
        ServiceImportResource,
        {
          apiVersion: `${MCS_GROUP}/v1alpha1`,
          kind: "ServiceImport",
          metadata: { name, namespace: ns, labels },
          spec: importSpec(ips),
        },
        { fieldManager: FIELD_MANAGER, force: true },
      );
    let si = existing;
    if (!si || stable(si.spec) !== stable(importSpec(ip ? [ip] : undefined)))
      si = await applyImportObject(ip ? [ip] : undefined);
    const owner = { apiVersion: `${MCS_GROUP}/v1alpha1`, kind: "ServiceImport", name, uid: si.metadata.uid! };
    const wantSvc = {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: dname,
        namespace: ns,
        labels: { ...labels, [MCS_SERVICE_NAME_LABEL]: name },
        ownerReferences: [{ ...owner, controller: true }],
      },
      spec: {
        type: "ClusterIP",
        ...(headless ? { clusterIP: "None" } : {}),
        ports: merged.ports.map((p) => ({ ...p, protocol: p.protocol ?? "TCP", targetPort: p.port })),
        sessionAffinity: headless ? "None" : merged.sessionAffinity,
        ...(merged.sessionAffinityConfig && !headless ? { sessionAffinityConfig: merged.sessionAffinityConfig } : {}),
      },
    };
    // Skipped when the cached derived Service already says what we would write (the server adds
    // defaults of its own: compared field by field on what we set).
    const mine = (x: ServiceLike | typeof wantSvc) => {
      const sp = (x.spec ?? {}) as Record<string, unknown> & { ports?: Record<string, unknown>[] };
      return stable({
        l: x.metadata.labels,
        o: x.metadata.ownerReferences?.map((r) => r.uid),
        h: sp.clusterIP === "None",
        a: sp.sessionAffinity,
        c: sp.sessionAffinityConfig ?? null,
        p: (sp.ports ?? []).map((q) => [q.name ?? "", q.protocol, q.port, q.targetPort, q.appProtocol ?? ""]),
      });
    };
    const svc =
      derived && mine(derived) === mine(wantSvc)
        ? derived
        : await client.apply<ServiceLike>(Resources.services, wantSvc as KubeObject, {
            fieldManager: FIELD_MANAGER,
            force: true,
          });
    const assigned = !headless && svc.spec?.clusterIP && svc.spec.clusterIP !== "None" ? svc.spec.clusterIP : undefined;
    if (assigned !== ip) si = await applyImportObject(assigned ? [assigned] : undefined);

    // The endpoints: every exporter's, remapped where the fabric remaps its pod CIDR.
    const remappers = new Map<string, Remapper>();
    const pending: string[] = [];
    for (const r of records) {
      const m = remapperFor(sourcesFor(r.clusterId), r.clusterId === self);
      remappers.set(r.clusterId, m);
      if (!m.ok) pending.push(m.reason);
    }
    // Service continuity: the endpoints of an exporter dark past the threshold kept, not ready.
    const at = Date.now();
    const { unreachable, recheckAt } = unreachableExporters(
      self,
      records,
      (peer) => peerUnreachableSince(teps.list(), peer),
      at,
      thresholdMs,
    );
    if (recheckAt !== undefined) queue.addAfter(key, recheckAt - at);
    const desired = importedSlices(ns, name, records, remappers, owner, unreachable);
    const names = new Set(desired.map((d) => d.metadata.name));
    const body = (s: KubeObject) => {
      const x = s as SliceLike;
      return stable({
        l: s.metadata.labels,
        a: x.addressType,
        p: x.ports ?? [],
        e: x.endpoints ?? [],
        o: s.metadata.ownerReferences?.map((r) => r.uid),
      });
    };
    for (const d of desired) {
      const have = slices.get(`${ns}/${d.metadata.name}`);
      if (have && body(have) === body(d)) continue;
      const source = d.metadata.labels?.[MCS_SOURCE_CLUSTER_LABEL];
      if (source && unreachable.has(source))
        log.warn("exporter unreachable past the service continuity threshold: its endpoints imported not ready", {
          key,
          slice: d.metadata.name,
          peer: source,
          thresholdMs,
        });
      await client.apply(Resources.endpointSlices, d, { fieldManager: FIELD_MANAGER, force: true });
    }
    for (const s of slices.list())
      if (
        s.metadata.namespace === ns &&
        s.metadata.labels?.[MCS_SERVICE_NAME_LABEL] === name &&
        s.metadata.labels?.[MANAGED_BY_LABEL] === MCS_MANAGER &&
        !names.has(s.metadata.name)
      )
        await client.delete(Resources.endpointSlices, s.metadata.name!, ns);

    // The import's status: the exporting clusters, and Ready.
    const now = new Date().toISOString();
    if (pending.length) events.warning(si, "EndpointsPending", pending.join("; "));
    const conditions = [
      pending.length
        ? condition(si.status?.conditions, "Ready", "False", "Pending", pending.join("; "), undefined, now)
        : condition(
            si.status?.conditions,
            "Ready",
            "True",
            "Ready",
            `imported from ${merged.clusters.length} cluster(s)`,
            undefined,
            now,
          ),
    ];
    const clusters = merged.clusters.map((cluster) => ({ cluster }));
    if (stable(si.status?.clusters ?? []) !== stable(clusters) || !sameConditions(si.status?.conditions, conditions))
      await client.mergePatch(ServiceImportResource, name, ns, { status: { clusters, conditions } }, "status");
    return merged.conflicts.map((c) => `${c.reason}\u0000${c.message}`);
  }

  async function reconcile(key: string): Promise<void> {
    const [ns, name] = key.split("/") as [string, string];
    const se = exports.get(key);
    const live = se && !se.metadata.deletionTimestamp ? se : undefined;
    const svc = services.get(key);
    const invalid = live ? invalidExport(ns, name, svc) : undefined;
    let local: ExportRecord | undefined;
    if (live && !invalid) {
      const own = slices
        .list()
        .filter(
          (s) =>
            s.metadata.namespace === ns &&
            s.metadata.labels?.[SLICE_SERVICE_NAME_LABEL] === name &&
            !s.metadata.labels?.[MCS_SERVICE_NAME_LABEL],
        );
      local = {
        clusterId: self,
        spec: describeExport(ns, name, live.metadata.creationTimestamp ?? new Date().toISOString(), svc!, own),
      };
    }
    const { peers, failures, uncovered } = await publish(ns, name, local);

    const records = [...(local ? [local] : []), ...gather(ns, name)];
    const nsObj = namespaces.get(ns);
    let conflicts: string[] = [];
    let importError: string | undefined;
    if (!records.length || !nsObj || nsObj.metadata.deletionTimestamp) await removeImport(ns, name);
    else {
      try {
        conflicts = await applyImport(ns, name, records);
      } catch (err) {
        importError = (err as Error).message;
        const si = imports.get(key);
        if (si) events.warning(si, "ImportFailed", importError);
      }
    }

    if (live) await writeExportStatus(live, invalid, peers, failures, uncovered, local ? conflicts : []);
    if (importError) throw new Error(`importing ${key}: ${importError}`);
    if (failures.length) throw new Error(`exporting ${key}: ${failures.join("; ")}`);
  }

  async function writeExportStatus(
    se: SvcExport,
    invalid: { reason: string; message: string } | undefined,
    peers: string[],
    failures: string[],
    uncovered: string[],
    conflicts: string[],
  ): Promise<void> {
    const now = new Date().toISOString();
    const gen = se.metadata.generation;
    const prev = se.status?.conditions;
    const ns = se.metadata.namespace!;
    const name = se.metadata.name!;
    const conditions: MetaCondition[] = [];
    if (invalid) {
      conditions.push(
        condition(prev, ServiceExportCondition.Valid, "False", invalid.reason, invalid.message, gen, now),
      );
      conditions.push(
        condition(
          prev,
          ServiceExportCondition.Ready,
          "False",
          ServiceExportReason.Pending,
          `not exported: ${invalid.message}`,
          gen,
          now,
        ),
      );
      events.warning(se, invalid.reason, invalid.message);
    } else {
      conditions.push(
        condition(
          prev,
          ServiceExportCondition.Valid,
          "True",
          ServiceExportReason.Valid,
          `Service ${ns}/${name} can be exported`,
          gen,
          now,
        ),
      );
      const notCovered = uncovered.length
        ? `namespace ${ns} is not among those the peering with ${uncovered.sort().join(", ")} covers (its ForeignCluster's ${MCS_NAMESPACES_ANNOTATION}): add ${ns} there, or export from a covered namespace`
        : "";
      if (notCovered) events.warning(se, "NamespaceNotCovered", notCovered);
      conditions.push(
        failures.length
          ? condition(
              prev,
              ServiceExportCondition.Ready,
              "False",
              ServiceExportReason.Failed,
              failures.join("; "),
              gen,
              now,
            )
          : notCovered && !peers.length
            ? condition(prev, ServiceExportCondition.Ready, "False", "NamespaceNotCovered", notCovered, gen, now)
            : condition(
                prev,
                ServiceExportCondition.Ready,
                "True",
                ServiceExportReason.Exported,
                (peers.length
                  ? `exported to ${peers.length} peer(s): ${peers.sort().join(", ")}`
                  : "exported; no peer receives it (no peering, or none whose mcs.liqo.io/peer-policy allows it)") +
                  (notCovered ? `; not to the others: ${notCovered}` : ""),
                gen,
                now,
              ),
      );
      const split = conflicts.map((c) => c.split("\u0000") as [string, string]);
      conditions.push(
        split.length
          ? condition(
              prev,
              ServiceExportCondition.Conflict,
              "True",
              split.map(([r]) => r).join(","),
              split.map(([, m]) => m).join("; "),
              gen,
              now,
            )
          : condition(
              prev,
              ServiceExportCondition.Conflict,
              "False",
              ServiceExportReason.NoConflicts,
              "every exporting cluster agrees",
              gen,
              now,
            ),
      );
    }
    if (sameConditions(prev, conditions)) return;
    await client.mergePatch(ServiceExportResource, name, ns, { status: { conditions } }, "status");
  }

  /** The MCS CRDs missing (a `helm upgrade`, which never installs CRDs): what to say, or undefined when served. */
  async function missingCrds(): Promise<string | undefined> {
    for (const res of [ServiceExportResource, ServiceImportResource, ExportedServiceResource]) {
      try {
        await client.list(res, { limit: 1 });
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 404)
          return `${res.plural}.${res.group} is not installed: the mcs controller waits for it (liqoctl install applies the chart's CRDs on upgrades; helm upgrade does not: kubectl apply -f chart/crds)`;
        throw err;
      }
    }
    return undefined;
  }

  let resync: ReturnType<typeof setInterval> | undefined;
  let waiting: ReturnType<typeof setInterval> | undefined;
  async function run(): Promise<void> {
    for (const i of locals) i.start();
    await Promise.all(locals.map((i) => i.waitForSync(120_000)));
    queue.start();
    refreshSoon();
    while (refreshing) await refreshing;
    enqueueAll();
    resync = setInterval(() => {
      refreshSoon();
      enqueueAll();
    }, o.resyncMs ?? 60_000);
  }
  let running = false;

  const ours = () => imports.list().filter((i) => i.metadata.labels?.[MANAGED_BY_LABEL] === MCS_MANAGER);
  const validity = (e: SvcExport) => e.status?.conditions?.find((c) => c.type === "Valid")?.status ?? "Unknown";
  o.registry?.callbackGauge({
    name: "liqo_mcs_service_exports",
    help: "ServiceExports in this cluster, by their Valid condition (True, False, Unknown: not reconciled yet).",
    labelNames: ["valid"] as const,
    collect: () => {
      const counts = new Map<string, number>();
      for (const e of exports.list()) counts.set(validity(e), (counts.get(validity(e)) ?? 0) + 1);
      return [...counts].map(([valid, value]) => ({ labels: { valid }, value }));
    },
  });
  o.registry?.callbackGauge({
    name: "liqo_mcs_service_imports",
    help: "ServiceImports the mcs controller keeps in this cluster.",
    collect: () => ours().length,
  });
  o.registry?.callbackGauge({
    name: "liqo_mcs_peer_channels",
    help: "Tenant namespaces through which services are exchanged with a peer, by peer, direction of the peering and whether exports and imports flow.",
    labelNames: ["remote_cluster_id", "direction", "export", "import"] as const,
    collect: () =>
      [...channels.values()].map((c) => ({
        labels: {
          remote_cluster_id: c.peer,
          direction: c.direction,
          export: String(c.flow.export),
          import: String(c.flow.import),
        },
        value: 1,
      })),
  });

  return {
    /** The admin API's view: whether it runs, the channels open, the exports and imports here. */
    status: () => ({
      state: running ? "running" : stopped ? "stopped" : "waiting for the MCS CRDs",
      defaultPolicy: policy,
      channels: [...channels.values()].map((c) => ({
        peer: c.peer,
        direction: c.direction,
        namespace: c.namespace,
        export: c.flow.export,
        import: c.flow.import,
        ...(c.flow.namespaces ? { namespaces: c.flow.namespaces } : {}),
      })),
      exports: exports.list().map((e) => ({ key: `${e.metadata.namespace}/${e.metadata.name}`, valid: validity(e) })),
      imports: ours().map((i) => ({
        key: `${i.metadata.namespace}/${i.metadata.name}`,
        type: i.spec?.type,
        ips: i.spec?.ips ?? [],
        clusters: (i.status?.clusters ?? []).map((c) => c.cluster),
      })),
    }),
    /** Resolves once the caches have synced; with the MCS CRDs absent, at once, and starts when they appear. */
    async start(): Promise<void> {
      const missing = await missingCrds();
      if (!missing) {
        running = true;
        return run();
      }
      log.warn(missing);
      waiting = setInterval(() => {
        missingCrds()
          .then((still) => {
            if (still || running || stopped) return;
            running = true;
            if (waiting) clearInterval(waiting);
            log.info("the MCS CRDs are installed; the mcs controller starts");
            return run();
          })
          .catch((err) => log.warn("checking for the MCS CRDs failed", { err: (err as Error).message }));
      }, 30_000);
    },
    async stop(): Promise<void> {
      stopped = true;
      if (waiting) clearInterval(waiting);
      if (resync) clearInterval(resync);
      if (!running) return;
      while (refreshing) await refreshing;
      await queue.shutdown();
      for (const ch of channels.values()) if (ch.direction === "outgoing") await ch.carriers.stop();
      channels.clear();
      await Promise.all(locals.map((i) => i.stop()));
      await events.flush();
    },
    /** For tests and the admin API: the channels open now. */
    channels: () =>
      [...channels.values()].map((c) => ({
        peer: c.peer,
        direction: c.direction,
        namespace: c.namespace,
        flow: c.flow,
      })),
    idle: () => queue.idle(),
  };
}

export type McsController = ReturnType<typeof createMcsController>;
