// The virtual node controller: keeps one Node standing for a remote cluster, its status (capacity,
// conditions, addresses, kubelet endpoint) and its Lease, from the remote cluster's observed health.
// One serialized sync does everything from observed state, so timers, watch events and
// updateResources can all just "kick" it; a Node deleted by hand is re-created on the next sync.
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { createInformer, type Informer } from "../../kube/informer.ts";
import { Resources } from "../../kube/resources.ts";
import { silentLogger, type Logger } from "../../log.ts";
import {
  isOurVirtualNode,
  isVirtualNode,
  nodeConditions,
  nodeStatus,
  nodeTaints,
  virtualNode,
  virtualNodeLabels,
  type NodeCondition,
  type NodeIdentity,
  type NodeResources,
  type NodeTaint,
  type RemoteHealth,
  type VirtualNodeObject,
} from "./forge.ts";
import { createRemoteHealthProbe } from "./health.ts";
import { renewNodeLease } from "./lease.ts";
import { postNodeEvent } from "./events.ts";
import { validateVirtualNodeOptions, VirtualNodeError } from "./options.ts";

export { VirtualNodeError };

export interface VirtualNodeOptions {
  local: KubeClient;
  remote: KubeClient;
  remoteClusterId: string;
  remoteClusterName: string;
  remoteClusterLabels?: Record<string, string>;
  resources: NodeResources;
  /** Taints besides virtual-node.liqo.io/not-allowed. */
  taints?: NodeTaint[];
  /** Annotations besides ours (the storage class new claims get). */
  annotations?: Record<string, string>;
  /** Default liqo-<remoteClusterName>. */
  nodeName?: string;
  /** InternalIP of the node: where the local API server reaches the kubelet API. */
  address: string;
  kubeletPort: number;
  kubeletVersion?: string;
  /** How often the remote API server is probed (default 5s). */
  healthIntervalMs?: number;
  /** K: consecutive failed probes before Ready turns False (default 3). */
  failureThreshold?: number;
  /** Lease renewal period (default 10s, like kubelet) and duration (default 40s). */
  leaseRenewMs?: number;
  leaseDurationSeconds?: number;
  /** Status heartbeat when nothing changed (default 60s); changes are written at once. */
  statusReportMs?: number;
  logger?: Logger;
  now?: () => Date;
}

export interface VirtualNodeStatus {
  nodeName: string;
  running: boolean;
  ready: boolean;
  consecutiveFailures: number;
  /** When the current run of failed probes began (ms); undefined while the remote answers. */
  unreachableSince?: number;
  lastProbeError?: string;
  nodeUid?: string;
  lastLeaseRenew?: string;
  lastStatusUpdate?: string;
  /** The last sync error (e.g. a foreign Node of the same name); cleared by a good sync. */
  error?: string;
}

export interface VirtualNode {
  /** Creates (or adopts) the Node and starts the loops; rejects if the first sync fails. */
  start(): Promise<void>;
  /** Stops the loops; the Node stays (unpeering decides whether it goes). */
  stop(): Promise<void>;
  /** Stops and deletes the Node (and with it, through its owner reference, the Lease). */
  remove(): Promise<void>;
  updateResources(resources: NodeResources): Promise<void>;
  /** New provider labels (the storage an offer names): labels no longer given are removed from the Node. */
  updateLabels(labels: Record<string, string>): Promise<void>;
  /** New taints besides ours: taints set before and no longer given are removed from the Node. */
  updateTaints(taints: NodeTaint[]): Promise<void>;
  /** New annotations besides ours: ones given before and no longer are removed from the Node. */
  updateAnnotations(annotations: Record<string, string>): Promise<void>;
  status(): VirtualNodeStatus;
  /** The Node's conditions as the API server has them (its watch cache); none before start. */
  conditions(): readonly NodeCondition[];
}

export function createVirtualNode(options: VirtualNodeOptions): VirtualNode {
  const opts = validateVirtualNodeOptions(options);
  const { local, logger: baseLogger = silentLogger } = options;
  const now = options.now ?? (() => new Date());
  const id: NodeIdentity = {
    nodeName: opts.nodeName,
    remoteClusterId: opts.remoteClusterId,
    remoteClusterName: opts.remoteClusterName,
    remoteClusterLabels: opts.remoteClusterLabels,
    address: opts.address,
    kubeletPort: opts.kubeletPort,
    kubeletVersion: opts.kubeletVersion,
    taints: [...(options.taints ?? [])],
    annotations: { ...options.annotations },
  };
  const log = baseLogger.child({ component: "virtual-node", node: id.nodeName, remoteClusterId: id.remoteClusterId });
  // A probe must end before the next tick: one that timed out at the full interval made the next
  // tick skip (probes overlap never), so a black-holed remote took K × 2 intervals to be noticed.
  const health = createRemoteHealthProbe({
    remote: options.remote,
    failureThreshold: opts.failureThreshold,
    timeoutMs: Math.min(opts.healthIntervalMs * 0.8, 5000),
  });

  let resources: NodeResources = { ...opts.resources };
  /** Provider labels given before and no longer: removed from the Node at the next sync. */
  const droppedLabels = new Set<string>();
  /** Annotations given before and no longer: removed from the Node at the next sync. */
  const droppedAnnotations = new Set<string>();
  /** Keys of the taints given since start: the ones no longer given are removed from the Node. */
  const givenTaintKeys = new Set((options.taints ?? []).map((t) => t.key));
  let statusDirty = true;
  let lastStatusAt = 0;
  let lastLeaseAt = 0;
  const st: VirtualNodeStatus = { nodeName: id.nodeName, running: false, ready: true, consecutiveFailures: 0 };
  const timers: ReturnType<typeof setInterval>[] = [];
  let informer: Informer<VirtualNodeObject> | undefined;
  let inflight: Promise<void> | undefined;
  let again = false;

  async function ensureNode(): Promise<VirtualNodeObject> {
    const found = await local.find<VirtualNodeObject>(Resources.nodes, id.nodeName);
    if (!found) {
      try {
        const created = await local.create<VirtualNodeObject>(Resources.nodes, virtualNode(id));
        log.info("created the virtual node", { uid: created.metadata.uid });
        statusDirty = true;
        lastLeaseAt = 0;
        return created;
      } catch (err) {
        if (err instanceof KubeApiError && err.conflict) return ensureNode();
        throw err;
      }
    }
    if (!isVirtualNode(found)) {
      throw new VirtualNodeError(
        `Node ${id.nodeName} already exists and is not a Liqo virtual node (no liqo.io/type=virtual-node label); ` +
          `refusing to overwrite it: delete that Node or choose another name for the virtual node (nodeName)`,
      );
    }
    if (!isOurVirtualNode(found, id.remoteClusterId)) {
      throw new VirtualNodeError(
        `Node ${id.nodeName} is the virtual node of another remote cluster (${found.metadata.labels?.["liqo.io/remote-cluster-id"]}), ` +
          `not of ${id.remoteClusterId}; choose another name for the virtual node (nodeName)`,
      );
    }
    const wantLabels = virtualNodeLabels(id);
    const wantTaints = nodeTaints(id);
    const sameTaint = (a: NodeTaint, b: NodeTaint) =>
      a.key === b.key && a.effect === b.effect && (a.value ?? "") === (b.value ?? "");
    // Taints others put (kubectl taint, the node lifecycle controller) stay; ours are as asked.
    const ourKeys = new Set([...givenTaintKeys, ...wantTaints.map((t) => t.key)]);
    const others = (found.spec?.taints ?? []).filter((t) => !ourKeys.has(t.key));
    const ours = (found.spec?.taints ?? []).filter((t) => ourKeys.has(t.key));
    const taintsDrifted =
      ours.length !== wantTaints.length || wantTaints.some((w) => !ours.some((t) => sameTaint(t, w)));
    const labelsDrifted = Object.entries(wantLabels).some(([k, v]) => found.metadata.labels?.[k] !== v);
    const gone = [...droppedLabels].filter((k) => !(k in wantLabels) && found.metadata.labels?.[k] !== undefined);
    const wantAnnotations = id.annotations ?? {};
    const annotationsDrifted =
      Object.entries(wantAnnotations).some(([k, v]) => found.metadata.annotations?.[k] !== v) ||
      [...droppedAnnotations].some((k) => !(k in wantAnnotations) && found.metadata.annotations?.[k] !== undefined);
    if (labelsDrifted || gone.length || taintsDrifted || annotationsDrifted) {
      const taints = taintsDrifted ? [...others, ...wantTaints] : found.spec?.taints;
      const patched = await local.mergePatch<VirtualNodeObject>(Resources.nodes, id.nodeName, undefined, {
        metadata: {
          labels: { ...wantLabels, ...Object.fromEntries(gone.map((k) => [k, null])) },
          annotations: {
            ...Object.fromEntries([...droppedAnnotations].filter((k) => !(k in wantAnnotations)).map((k) => [k, null])),
            ...wantAnnotations,
          },
        },
        spec: { taints },
      });
      droppedLabels.clear();
      droppedAnnotations.clear();
      return patched;
    }
    return found;
  }

  async function writeStatus(node: VirtualNodeObject, h: RemoteHealth): Promise<void> {
    const conditions = nodeConditions(h, id.remoteClusterName, now(), node.status?.conditions);
    const status = nodeStatus(id, resources, conditions)!;
    // A merge patch keeps map keys it does not mention: resources dropped since must be nulled.
    const dropped = (m?: NodeResources) =>
      Object.fromEntries(
        Object.keys(m ?? {})
          .filter((k) => !(k in resources))
          .map((k) => [k, null]),
      );
    await local.mergePatch(
      Resources.nodes,
      id.nodeName,
      undefined,
      {
        status: {
          ...status,
          capacity: { ...dropped(node.status?.capacity), ...status.capacity },
          allocatable: { ...dropped(node.status?.allocatable), ...status.allocatable },
        },
      },
      "status",
    );
    statusDirty = false;
    lastStatusAt = Date.now();
    st.lastStatusUpdate = now().toISOString();
  }

  async function syncOnce(): Promise<void> {
    const node = await ensureNode();
    st.nodeUid = node.metadata.uid;
    const h = health.current();
    if (statusDirty || Date.now() - lastStatusAt >= opts.statusReportMs) await writeStatus(node, h);
    if (Date.now() - lastLeaseAt >= opts.leaseRenewMs) {
      const lease = await renewNodeLease(local, id.nodeName, node.metadata.uid!, opts.leaseDurationSeconds, now());
      lastLeaseAt = Date.now();
      st.lastLeaseRenew = lease.spec?.renewTime;
    }
    st.error = undefined;
  }

  /** Runs a sync now, or right after the running one: never two at once, never one lost. */
  function sync(): Promise<void> {
    if (inflight) {
      again = true;
      return inflight;
    }
    inflight = (async () => {
      try {
        do {
          again = false;
          await syncOnce();
        } while (again);
      } finally {
        inflight = undefined;
      }
    })();
    return inflight;
  }

  const kick = () => {
    if (!st.running) return;
    sync().catch((err) => {
      st.error = (err as Error).message;
      log.error("virtual node sync failed", { err });
    });
  };

  async function checkHealth(): Promise<void> {
    const h = await health.probe();
    st.ready = h.healthy;
    st.consecutiveFailures = h.consecutiveFailures;
    st.unreachableSince = h.failingSince;
    st.lastProbeError = h.detail;
    if (!h.changed) return;
    statusDirty = true;
    if (h.healthy) log.info("the remote cluster answers again; the virtual node is Ready");
    else
      log.warn("the remote cluster stopped answering; the virtual node is NotReady", {
        failures: h.consecutiveFailures,
        detail: h.detail,
      });
    kick();
    postNodeEvent(
      local,
      id.nodeName,
      st.nodeUid,
      h.healthy
        ? { type: "Normal", reason: "NodeReady", message: `remote cluster ${id.remoteClusterName} answers again` }
        : {
            type: "Warning",
            reason: "RemoteClusterUnreachable",
            message: `remote cluster ${id.remoteClusterName} failed ${h.consecutiveFailures} consecutive health checks: ${h.detail ?? ""}`,
          },
    ).catch((err) => log.warn("could not post a node event", { err }));
  }

  return {
    async start() {
      if (st.running) return;
      await checkHealth();
      st.ready = health.current().healthy;
      st.running = true;
      try {
        await sync();
      } catch (err) {
        st.running = false;
        st.error = (err as Error).message;
        throw err;
      }
      let probing = false;
      timers.push(
        setInterval(() => {
          if (probing) return;
          probing = true;
          checkHealth()
            .catch((err) => log.error("health check failed", { err }))
            .finally(() => {
              probing = false;
            });
        }, opts.healthIntervalMs),
      );
      timers.push(setInterval(kick, Math.min(opts.leaseRenewMs, opts.statusReportMs)));
      informer = createInformer<VirtualNodeObject>({
        client: local,
        resource: Resources.nodes,
        fieldSelector: `metadata.name=${id.nodeName}`,
        logger: log,
      });
      informer.on({
        delete: () => {
          log.warn("the virtual node was deleted; re-creating it");
          kick();
        },
      });
      informer.start();
      log.info("virtual node started", { address: id.address, kubeletPort: id.kubeletPort });
    },
    async stop() {
      st.running = false;
      for (const t of timers.splice(0)) clearInterval(t);
      await informer?.stop();
      informer = undefined;
      await inflight?.catch(() => {});
    },
    async remove() {
      await this.stop();
      const node = await local.find(Resources.nodes, id.nodeName);
      if (node && isOurVirtualNode(node, id.remoteClusterId))
        await local.delete(Resources.nodes, id.nodeName, undefined, { uid: node.metadata.uid });
    },
    async updateResources(next) {
      resources = { ...validateVirtualNodeOptions({ ...options, resources: next }).resources };
      statusDirty = true;
      if (st.running) await sync();
    },
    async updateLabels(next) {
      for (const k of Object.keys(id.remoteClusterLabels)) if (!(k in next)) droppedLabels.add(k);
      for (const k of Object.keys(next)) droppedLabels.delete(k);
      id.remoteClusterLabels = { ...next };
      if (st.running) await sync();
    },
    async updateAnnotations(next) {
      for (const k of Object.keys(id.annotations ?? {})) if (!(k in next)) droppedAnnotations.add(k);
      for (const k of Object.keys(next)) droppedAnnotations.delete(k);
      id.annotations = { ...next };
      if (st.running) await sync();
    },
    async updateTaints(next) {
      for (const t of next) givenTaintKeys.add(t.key);
      id.taints = next.map((t) => ({ ...t }));
      if (st.running) await sync();
    },
    status: () => ({ ...st }),
    // Read from the Node, not from what this controller last wrote: the node lifecycle controller
    // turns Ready to Unknown when the Lease lapses, and that is what the scheduler acts on.
    conditions: () => informer?.get(id.nodeName)?.status?.conditions ?? [],
  };
}
