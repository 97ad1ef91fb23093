// The ForeignCluster controller (consumer side of peering). For each ForeignCluster it brings the
// outgoing peering to what the spec asks: authenticate, request resources, accept the offer, run
// the virtual kubelet in this process; or tear all of it down (finalizer). Level-triggered: every
// reconcile starts from the ForeignCluster, the Secrets, the ResourceRequest and the offer.
import {
  ForeignClusterResource,
  ResourceOfferResource,
  ResourceRequestResource,
  AUTH_TOKEN_LABEL,
  DISCOVERY_CLUSTER_ID_LABEL,
  REMOTE_CLUSTER_ID_LABEL,
  REPLICATION_REQUESTED_LABEL,
  type ResourceOffer,
  type ResourceRequest,
} from "../../apis/index.ts";
import type { PluginInfo } from "../../reflection/engine/engine.ts";
import { watchReflectionPolicy, type ReflectionPolicySource } from "../../reflection/policy-watch.ts";
import { createPluginStore, type PluginProblem, type PluginStore } from "../../reflection/store/watch.ts";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../../kube/errors.ts";
import { createInformer } from "../../kube/informer.ts";
import { Resources, type KubeObject } from "../../kube/resources.ts";
import { createWorkQueue } from "../../kube/workqueue.ts";
import { silentLogger, type Logger } from "../../log.ts";
import type { Registry } from "../../metrics/index.ts";
import { createEventRecorder } from "../../kube/events.ts";
import { authenticate } from "./authenticate.ts";
import {
  conditionOf,
  FOREIGN_CLUSTER_FINALIZER,
  NO_INCOMING_PEERING,
  outgoingWanted,
  type ForeignClusterObject,
} from "./conditions.ts";
import { statusWriter, type ControllerConfig, type KubeletServing, type ReconcileContext } from "./context.ts";
import { networkStatus } from "./network.ts";
import { outgoing } from "./outgoing.ts";
import { stopRuntime, type PeerRuntime, type ReplicatorFactory } from "./runtime.ts";
import { teardown } from "./teardown.ts";
import { createVirtualNodeController } from "./virtualnodes.ts";

export interface ForeignClusterControllerOptions {
  client: KubeClient;
  localCluster: { clusterId: string; clusterName: string; clusterLabels?: Record<string, string> };
  liqoNamespace?: string;
  /** This cluster's auth service URL, sent to providers in the ResourceRequest. */
  authUrl?: string;
  kubelet?: KubeletServing;
  replicator?: ReplicatorFactory;
  registry?: Registry;
  logger?: Logger;
  disconnectTimeoutMs?: number;
  /** Every ForeignCluster is re-examined this often (virtual node health, offer changes missed). */
  resyncMs?: number;
  workers?: number;
  /** See ControllerConfig.ipTranslator (default: the network fabric's translation watcher). */
  ipTranslator?: ControllerConfig["ipTranslator"];
  /**
   * The drop-in reflector plugins every virtual kubelet runs (default: the plugin ConfigMaps of
   * the liqo namespace, core/reflection/store); false: none.
   */
  plugins?: PluginStore | false;
  /**
   * What the virtual kubelets reflect, per kind (default: the ConfigMap liqo-reflection-policy of
   * the liqo namespace, core/reflection/policy-watch.ts); false: everything, fixed.
   */
  reflectionPolicy?: ReflectionPolicySource | false;
  /** See ControllerConfig.continuity (default: the default threshold, the API server probe alone). */
  continuity?: ControllerConfig["continuity"];
}

export interface ForeignClusterController {
  start(): Promise<void>;
  /** Stops the loops and every in-process virtual kubelet; virtual nodes stay (a restart adopts them). */
  stop(): Promise<void>;
  handle(name: string): Promise<void>;
  idle(): Promise<void>;
  /** Per peer: what runs in this process, for the admin API. */
  peers(): {
    clusterId: string;
    node?: string;
    ready?: boolean;
    /** The VirtualNodes running on this peering's virtual kubelet. */
    extraNodes?: { name: string; ready: boolean }[];
    kubelet?: string;
    replicator: boolean;
    plugins?: PluginInfo[];
  }[];
  /** The plugin store's verdicts: what is installed, validated and what was rejected. */
  pluginStore():
    | { ready: { name: string; configMap: string; version: string }[]; problems: PluginProblem[] }
    | undefined;
}

export function createForeignClusterController(o: ForeignClusterControllerOptions): ForeignClusterController {
  const log = (o.logger ?? silentLogger).child({ component: "foreigncluster" });
  const liqoNamespace = o.liqoNamespace ?? "liqo";
  const plugins =
    o.plugins === false
      ? undefined
      : (o.plugins ?? createPluginStore({ client: o.client, namespace: liqoNamespace, logger: log }));
  const reflectionPolicy =
    o.reflectionPolicy === false
      ? undefined
      : (o.reflectionPolicy ?? watchReflectionPolicy({ client: o.client, namespace: liqoNamespace, logger: log }));
  const cfg: ControllerConfig = {
    client: o.client,
    local: o.localCluster,
    liqoNamespace,
    authUrl: o.authUrl ?? "",
    kubelet: o.kubelet,
    replicator: o.replicator,
    plugins,
    reflectionPolicy,
    continuity: o.continuity,
    registry: o.registry,
    logger: log,
    ipTranslator: o.ipTranslator,
    disconnectTimeoutMs: o.disconnectTimeoutMs ?? 120_000,
    now: () => new Date(),
  };
  const peers = new Map<string, PeerRuntime>();
  const virtualNodes = createVirtualNodeController({
    client: o.client,
    peers,
    logger: log,
    established: (id) =>
      fcs
        .list()
        .some(
          (f) =>
            f.spec.clusterIdentity?.clusterID === id &&
            !f.metadata.deletionTimestamp &&
            conditionOf(f, "OutgoingPeering")?.status === "Established",
        ),
  });
  const ctx: ReconcileContext = { cfg, peers, log, virtualNodes };
  const events = createEventRecorder(o.client, "liqo-foreigncluster", log);
  const fcs = createInformer<ForeignClusterObject>({ client: o.client, resource: ForeignClusterResource, logger: log });
  const offers = createInformer<ResourceOffer & KubeObject>({
    client: o.client,
    resource: ResourceOfferResource,
    logger: log,
  });
  const tokens = createInformer({
    client: o.client,
    resource: Resources.secrets,
    namespace: liqoNamespace,
    labelSelector: AUTH_TOKEN_LABEL,
    logger: log,
  });
  const reconciles = o.registry?.counter({
    name: "liqo_foreigncluster_reconciles_total",
    help: "ForeignCluster reconciles by outcome.",
    labelNames: ["outcome"],
  });

  const byClusterId = (id: string | undefined) =>
    fcs
      .list()
      .filter((f) => id && f.spec.clusterIdentity?.clusterID === id)
      .map((f) => f.metadata.name!);
  const queue = createWorkQueue({
    name: "foreigncluster",
    logger: log,
    workers: o.workers ?? 2,
    baseDelayMs: 500,
    maxDelayMs: 30_000,
    handler: guarded,
    observe: (_key, outcome) => reconciles?.inc({ outcome }),
  });
  // Our own status writes must not re-trigger a reconcile (each would ask the auth service again):
  // only spec and metadata changes do; status is re-checked by retries and the periodic resync.
  const meaningful = (a: ForeignClusterObject, b: ForeignClusterObject) =>
    a.metadata.generation !== b.metadata.generation ||
    !!a.metadata.deletionTimestamp !== !!b.metadata.deletionTimestamp ||
    JSON.stringify([a.metadata.annotations, a.metadata.labels, a.metadata.finalizers]) !==
      JSON.stringify([b.metadata.annotations, b.metadata.labels, b.metadata.finalizers]);
  fcs.on({
    add: (f) => queue.add(f.metadata.name!),
    update: (a, f) => {
      if (meaningful(a, f)) queue.add(f.metadata.name!);
    },
    delete: (f) => queue.add(f.metadata.name!),
  });
  const byOffer = (offer: ResourceOffer & KubeObject) =>
    byClusterId(offer.spec?.clusterId).forEach((n) => queue.add(n));
  offers.on({ add: byOffer, update: (_, x) => byOffer(x), delete: byOffer });
  const byToken = (s: KubeObject) =>
    byClusterId(s.metadata.labels?.[DISCOVERY_CLUSTER_ID_LABEL]).forEach((n) => queue.add(n));
  tokens.on({ add: byToken, update: (_, s) => byToken(s) });
  // A plugin installed, changed or removed: every peering brings its ResourceRequest and its
  // virtual kubelet's drop-ins up to date. The provider's answer (the request's status, replicated
  // back) decides what is loaded, so a change of it re-queues the peering too.
  plugins?.onChange(() => fcs.list().forEach((f) => queue.add(f.metadata.name!)));
  const requests = createInformer<ResourceRequest & KubeObject>({
    client: o.client,
    resource: ResourceRequestResource,
    labelSelector: `${REPLICATION_REQUESTED_LABEL}=true`,
    logger: log,
  });
  requests.on({
    update: (a, b) => {
      if (JSON.stringify(a.status?.reflectorPlugins) !== JSON.stringify(b.status?.reflectorPlugins))
        byClusterId(b.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL]).forEach((n) => queue.add(n));
    },
  });
  let resync: ReturnType<typeof setInterval> | undefined;

  async function setFinalizer(fc: ForeignClusterObject, present: boolean): Promise<ForeignClusterObject> {
    const finalizers = fc.metadata.finalizers ?? [];
    if (finalizers.includes(FOREIGN_CLUSTER_FINALIZER) === present) return fc;
    const next = present
      ? [...finalizers, FOREIGN_CLUSTER_FINALIZER]
      : finalizers.filter((f) => f !== FOREIGN_CLUSTER_FINALIZER);
    return o.client.mergePatch<ForeignClusterObject>(ForeignClusterResource, fc.metadata.name!, undefined, {
      metadata: { finalizers: next, resourceVersion: fc.metadata.resourceVersion },
    });
  }

  async function handle(name: string): Promise<void> {
    let fc = await o.client.find<ForeignClusterObject>(ForeignClusterResource, name);
    if (!fc) {
      // Gone without our finalizer (it was never peered, or someone removed it): stop what still runs.
      for (const [id, rt] of peers)
        if (!byClusterId(id).length) {
          await stopRuntime(rt, log, false);
          peers.delete(id);
        }
      return;
    }
    if (!outgoingWanted(fc)) {
      const st = statusWriter(cfg, fc);
      // A ForeignCluster refused as a duplicate never owned the peering of its cluster ID: tearing
      // it down must leave alone the one that does.
      const id = fc.spec.clusterIdentity?.clusterID;
      const holder = fcs
        .list()
        .find(
          (f) =>
            f.metadata.name !== name && !f.metadata.deletionTimestamp && id && f.spec.clusterIdentity?.clusterID === id,
        );
      const done = holder ? true : await teardown(ctx, st);
      if (done && st.fc.metadata.finalizers?.includes(FOREIGN_CLUSTER_FINALIZER)) {
        await setFinalizer(st.fc, false);
        log.info("peering finalizer removed", { foreignCluster: name, deleting: !!fc.metadata.deletionTimestamp });
      }
      return;
    }
    fc = await setFinalizer(fc, true);
    const st = statusWriter(cfg, fc);
    if (!conditionOf(fc, "IncomingPeering")) st.set(NO_INCOMING_PEERING);
    const before = conditionOf(fc, "AuthenticationStatus")?.status;
    let auth;
    try {
      auth = await authenticate(ctx, st, fcs.list());
    } finally {
      const after = conditionOf(st.fc, "AuthenticationStatus");
      if (after && after.status !== before && (after.status === "Denied" || after.status === "Error")) {
        events.warning(st.fc, after.reason ?? "AuthenticationFailed", after.message ?? "");
      }
    }
    if (!auth) return;
    st.set(await networkStatus(o.client, st.fc, auth.localNamespace));
    await st.flush();
    const was = conditionOf(st.fc, "OutgoingPeering")?.status;
    await outgoing(ctx, st, auth);
    if (was !== "Established")
      events.normal(
        st.fc,
        "PeeringEstablished",
        conditionOf(st.fc, "OutgoingPeering")?.message ?? "outgoing peering established",
      );
  }

  async function guarded(name: string): Promise<void> {
    try {
      await handle(name);
    } catch (err) {
      if (err instanceof RetryAfterError) throw err;
      // A stale resourceVersion only means someone wrote in between: re-read and try again soon.
      if (err instanceof KubeApiError && err.conflict) throw new RetryAfterError(200, "conflict");
      throw err;
    }
  }

  return {
    async start() {
      fcs.start();
      offers.start();
      tokens.start();
      requests.start();
      await Promise.all([
        fcs.waitForSync(),
        offers.waitForSync(),
        tokens.waitForSync(),
        requests.waitForSync(),
        plugins?.start(),
        reflectionPolicy?.start(),
      ]);
      queue.start();
      await virtualNodes.start();
      resync = setInterval(() => fcs.list().forEach((f) => queue.add(f.metadata.name!)), o.resyncMs ?? 15_000);
      log.info("ForeignCluster controller started", { clusterId: cfg.local.clusterId });
    },
    async stop() {
      clearInterval(resync);
      await queue.shutdown();
      await virtualNodes.stop();
      await Promise.all([
        fcs.stop(),
        offers.stop(),
        tokens.stop(),
        requests.stop(),
        plugins?.stop(),
        reflectionPolicy?.stop(),
      ]);
      for (const rt of peers.values()) await stopRuntime(rt, log, false);
      peers.clear();
    },
    handle: guarded,
    idle: () => queue.idle(),
    peers: () =>
      [...peers.values()].map((rt) => ({
        clusterId: rt.clusterId,
        replicator: !!rt.replicator,
        ...(rt.vk
          ? {
              node: rt.vk.nodeName,
              ready: rt.vk.node.status().ready,
              extraNodes: [...rt.vk.extraNodes()].map(([name, n]) => ({ name, ready: n.status().ready })),
              kubelet: rt.vk.api.url,
              plugins: rt.vk.engine.plugins().filter((p) => p.trust === "dropin"),
            }
          : {}),
      })),
    pluginStore: () =>
      plugins && {
        ready: plugins.ready().map((p) => ({ name: p.name, configMap: p.configMap, version: p.manifest.version })),
        problems: plugins.problems(),
      },
  };
}
