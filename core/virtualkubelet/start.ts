// One virtual kubelet for one remote cluster, wired from its parts: the virtual node, pod
// offloading through ShadowPods, the reflection engine for the twin namespaces, the NamespaceMap
// controller that creates them, and the kubelet API (logs, exec). The `liqo virtual-kubelet` role
// and the ForeignCluster controller (one in-process kubelet per outgoing peering) both start it here.
import { STORAGE_AVAILABLE_LABEL, STORAGE_CLASS_ANNOTATION } from "../apis/labels.ts";
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError } from "../kube/errors.ts";
import { Resources, type KubeObject } from "../kube/resources.ts";
import { silentLogger, type Logger } from "../log.ts";
import type { Registry } from "../metrics/index.ts";
import { createNamespaceMapController } from "../offloading/index.ts";
import type { IpTranslator } from "../reflection/abi.ts";
import { policyEngineHooks, type ReflectionPolicySource } from "../reflection/policy-watch.ts";
import { createReflectionEngine, type ReflectionEngine } from "../reflection/engine/engine.ts";
import { builtinWasm } from "../../reflectors/index.ts";
import { createCapacityFollower, type CapacityFollower } from "../storage/capacity.ts";
import { createKubeletApi, type KubeletApi } from "./kubeletapi/index.ts";
import { createEventReflector, type EventReflector } from "./events/reflector.ts";
import { createVirtualNode, isOurVirtualNode, type VirtualNode } from "./node/index.ts";
import type { NodeResources, NodeTaint } from "./node/forge.ts";
import { registerVirtualKubeletMetrics } from "./metrics.ts";
import { createPodOffloader, type PodOffloader, type PodPatch } from "./pods/offloader.ts";

/** The built-in reflectors a virtual kubelet runs besides pods (which the offloader handles). */
export const BUILTIN_REFLECTORS = ["configmaps", "secrets", "services", "endpointslices", "ingresses"] as const;

export interface VirtualKubeletOptions {
  local: KubeClient;
  remote: KubeClient;
  localClusterId: string;
  remoteClusterId: string;
  remoteClusterName: string;
  remoteClusterLabels?: Record<string, string>;
  resources: NodeResources;
  /** Default liqo-<remoteClusterName>. */
  nodeName?: string;
  /** Where the local API server reaches the kubelet API (the node's InternalIP), and its port (0 picks one). */
  kubeletHost: string;
  kubeletPort: number;
  tls: { cert: string; key: string };
  /** CA of the local cluster: the API server's kubelet client certificate must be signed by it. */
  clientCA: string;
  healthIntervalMs?: number;
  failureThreshold?: number;
  /** Service continuity (core/continuity): offloaded pods are not Ready once the provider is unreachable this long. */
  continuityThresholdMs?: number;
  /**
   * When the tunnel to the provider stopped answering (its TunnelEndpoint, core/continuity), if it
   * has: a data plane outage the API server probe cannot see counts as unreachable too.
   */
  tunnelUnreachableSince?: () => number | undefined;
  /** Remote pod IPs into what this cluster sees (a fixed remap, without the network fabric). */
  translateIp?: (ip: string) => string;
  /**
   * The network fabric's translation for this peering (netfabric/manager translation watcher or
   * the manager's own translator): backward for the pod IPs reported back, forward for the
   * endpoints reflected to the provider. Takes precedence over translateIp.
   */
  ipTranslator?: IpTranslator;
  /** Why ipTranslator cannot translate the provider's pod IPs now, if so: their status waits (pods/offloader.ts). */
  translationPending?: () => string | undefined;
  registry?: Registry;
  logger?: Logger;
  /** The local API server as the remote cluster's pods reach it (https URL): see pods/forge.ts. */
  apiServerUrl?: string;
  /**
   * The storage fabric (core/storage): claims of the virtual class placed on this node go to the
   * provider with the class it offered; the node is labelled as offering storage.
   */
  storage?: StorageOffer;
  /** What is reflected, per kind (core/reflection/policy.ts); default: everything. */
  reflectionPolicy?: ReflectionPolicySource;
}

/** One more virtual node of the peering (a VirtualNode): its own Node, Lease and health. */
export interface ExtraNode {
  name: string;
  resources: NodeResources;
  labels?: Record<string, string>;
  taints?: NodeTaint[];
  patch?: PodPatch;
}

export interface StorageOffer {
  storageClass: string;
  virtualStorageClass: string;
}

export interface VirtualKubelet {
  readonly nodeName: string;
  readonly node: VirtualNode;
  readonly engine: ReflectionEngine;
  readonly offloader: PodOffloader;
  readonly api: KubeletApi;
  /** Events of the provider's copies, written on their local objects. */
  readonly events: EventReflector;
  /** Stops every loop; the Node stays (the caller decides whether it goes, see remove). */
  stop(): Promise<void>;
  /** Stops and deletes the virtual node. */
  remove(): Promise<void>;
  updateResources(resources: NodeResources): Promise<void>;
  /**
   * Runs one more virtual node for this peering, or brings a running one to `n`. Its pods share
   * everything else with the peering's own node: one reflection, one set of twin namespaces.
   */
  putNode(n: ExtraNode): Promise<void>;
  /** The extra nodes running, by name. */
  extraNodes(): ReadonlyMap<string, VirtualNode>;
  /**
   * Cordons an extra node (or a Node of this peering left over from before a restart) and deletes
   * the pods bound to it; resolves to how many are left. The peering's own node is never drained.
   */
  drainNode(name: string): Promise<number>;
  /** Stops an extra node and deletes its Node (drain it first: the remote copies of its pods go). */
  removeNode(name: string): Promise<void>;
  /**
   * The storage the provider offers now (its ResourceOffer changed): new claims get the new class,
   * reflected ones keep theirs (a claim's class is immutable); the node's storage label follows.
   * Once loaded, the storage reflector stays, so claims already in the provider keep following
   * their local claim (a grown request, a deletion) after the provider stops offering storage.
   */
  updateStorage(storage: StorageOffer | undefined): Promise<void>;
}

export async function startVirtualKubelet(o: VirtualKubeletOptions): Promise<VirtualKubelet> {
  const log = (o.logger ?? silentLogger).child({ remoteClusterId: o.remoteClusterId });
  const ids = { localClusterId: o.localClusterId, remoteClusterId: o.remoteClusterId };
  const nodeName = o.nodeName ?? `liqo-${o.remoteClusterName}`;
  const fixed = o.translateIp;
  const translateIp: IpTranslator | undefined =
    o.ipTranslator ?? (fixed ? (ip, d) => (d === "backward" ? fixed(ip) : ip) : undefined);
  const engine = createReflectionEngine({
    local: o.local,
    remote: o.remote,
    ...ids,
    registry: o.registry,
    logger: log,
    translateIp,
    context: { virtualNodeName: nodeName, virtualKubeletIp: o.kubeletHost, ...o.storage },
    ...(o.reflectionPolicy && policyEngineHooks(o.reflectionPolicy)),
  });
  const stops: (() => Promise<void>)[] = [() => engine.stop()];
  const stopAll = async () => {
    for (const s of stops.splice(0).reverse())
      await s().catch((err) => log.warn("stopping a virtual kubelet part failed", { err }));
  };
  try {
    for (const b of BUILTIN_REFLECTORS)
      await engine.addPlugin(await builtinWasm(b), { trust: "builtin", source: `builtin:${b}` });
    let storage = o.storage;
    let capacity: CapacityFollower | undefined;
    const enableStorage = async (offer: StorageOffer) => {
      if (capacity) return;
      await engine.addPlugin(await builtinWasm("storage"), { trust: "builtin", source: "builtin:storage" });
      capacity = createCapacityFollower({
        local: o.local,
        remote: o.remote,
        ...ids,
        virtualStorageClass: offer.virtualStorageClass,
        logger: log,
      });
      for (const p of engine.pairs()) capacity.addPair(p);
      stops.push(() => capacity!.stop());
    };
    if (storage) await enableStorage(storage);
    // A VirtualNode's own labels win over the provider's; liqo's own (forge.ts) win over both.
    const nodeLabels = (own?: Record<string, string>) =>
      storage
        ? { ...o.remoteClusterLabels, ...own, [STORAGE_AVAILABLE_LABEL]: "true" }
        : { ...o.remoteClusterLabels, ...own };
    const nodeAnnotations = (): Record<string, string> =>
      storage ? { [STORAGE_CLASS_ANNOTATION]: storage.storageClass } : {};
    const twins = new Map<string, string>();
    const events = createEventReflector({
      local: o.local,
      remote: o.remote,
      remoteClusterId: o.remoteClusterId,
      remoteClusterName: o.remoteClusterName,
      nodeName,
      registry: o.registry,
      logger: log,
      admits: o.reflectionPolicy && ((obj) => o.reflectionPolicy!.admits("Event", obj)),
    });
    stops.push(() => events.stop());
    // A policy change applies to what is already reflected: every object is looked at again.
    const unsubscribe = o.reflectionPolicy?.onChange(() => {
      engine.requeueAll();
      events.requeueAll();
    });
    if (unsubscribe)
      stops.push(async () => {
        unsubscribe();
      });
    /** Read once the virtual node exists (it is created after the offloader). */
    let nodeUnreachableSince = (): number | undefined => undefined;
    const offloader = await createPodOffloader({
      local: o.local,
      remote: o.remote,
      ...ids,
      nodeName,
      virtualKubeletIp: o.kubeletHost,
      podsWasm: await builtinWasm("pods"),
      logger: log,
      translateIp,
      translationPending: o.translationPending,
      remoteNamespaceOf: (ns) => twins.get(ns),
      apiServerUrl: o.apiServerUrl,
      // The API server's probes (the virtual node's health) and the tunnel's pings: the earlier outage.
      remoteUnreachableSince: () => earliest(nodeUnreachableSince(), o.tunnelUnreachableSince?.()),
      continuityThresholdMs: o.continuityThresholdMs,
    });
    const maps = createNamespaceMapController({
      local: o.local,
      remote: o.remote,
      ...ids,
      remoteClusterName: o.remoteClusterName,
      logger: log,
      addPair: async (p) => {
        twins.set(p.localNamespace, p.remoteNamespace);
        await engine.addNamespacePair(p);
        events.addPair(p);
        capacity?.addPair(p);
        offloader.resyncNamespace(p.localNamespace);
      },
      removePair: async (ns) => {
        twins.delete(ns);
        await engine.removeNamespacePair(ns);
        await events.removePair(ns);
        await capacity?.removePair(ns);
        offloader.resyncNamespace(ns);
      },
    });
    const api = await createKubeletApi({
      remote: o.remote,
      tls: o.tls,
      auth: { clientCA: o.clientCA },
      host: o.kubeletHost,
      port: o.kubeletPort,
      nodeName,
      logger: log,
      resolvePod: (ns, name) => (twins.has(ns) ? { remoteNamespace: twins.get(ns)!, remoteName: name } : undefined),
    });
    stops.push(() => api.close());
    const node = createVirtualNode({
      local: o.local,
      remote: o.remote,
      remoteClusterId: o.remoteClusterId,
      remoteClusterName: o.remoteClusterName,
      remoteClusterLabels: nodeLabels(),
      annotations: nodeAnnotations(),
      resources: o.resources,
      nodeName,
      address: o.kubeletHost,
      kubeletPort: api.port,
      healthIntervalMs: o.healthIntervalMs,
      failureThreshold: o.failureThreshold,
      logger: log,
    });
    await node.start();
    nodeUnreachableSince = () => node.status().unreachableSince;
    stops.push(() => node.stop());
    const extras = new Map<string, { node: VirtualNode; spec: ExtraNode }>();
    let stopped = false;
    stops.push(async () => {
      stopped = true;
      for (const e of extras.values()) await e.node.stop();
    });
    // Both wait only for local caches; their remote side is per twin namespace (the peer identity
    // may not list the provider cluster-wide).
    stops.push(() => maps.stop());
    await maps.start();
    stops.push(() => offloader.stop());
    await offloader.start();
    // Declared last: a kubelet that failed to start leaves no callback reading its parts.
    if (o.registry)
      registerVirtualKubeletMetrics(o.registry, {
        nodes: () =>
          stopped
            ? []
            : [node, ...[...extras.values()].map((e) => e.node)].map((n) => ({
                name: n.status().nodeName,
                conditions: n.conditions(),
              })),
        pods: () => (stopped ? [] : offloader.pods()),
      });
    return {
      nodeName,
      node,
      engine,
      offloader,
      api,
      events,
      stop: stopAll,
      async remove() {
        await stopAll();
        for (const e of extras.values()) await e.node.remove();
        await node.remove();
      },
      async putNode(n) {
        if (stopped) throw new Error(`the virtual kubelet of ${o.remoteClusterName} is stopped`);
        const known = extras.get(n.name);
        if (!known) {
          const extra = createVirtualNode({
            local: o.local,
            remote: o.remote,
            remoteClusterId: o.remoteClusterId,
            remoteClusterName: o.remoteClusterName,
            remoteClusterLabels: nodeLabels(n.labels),
            annotations: nodeAnnotations(),
            resources: n.resources,
            taints: n.taints,
            nodeName: n.name,
            address: o.kubeletHost,
            kubeletPort: api.port,
            healthIntervalMs: o.healthIntervalMs,
            failureThreshold: o.failureThreshold,
            logger: log,
          });
          await extra.start();
          extras.set(n.name, { node: extra, spec: n });
          await offloader.addNode(n.name, n.patch);
          log.info("virtual node added to the peering", { node: n.name, resources: n.resources });
          return;
        }
        const was = known.spec;
        known.spec = n;
        if (JSON.stringify(was.resources) !== JSON.stringify(n.resources))
          await known.node.updateResources(n.resources);
        if (JSON.stringify(was.labels) !== JSON.stringify(n.labels))
          await known.node.updateLabels(nodeLabels(n.labels));
        if (JSON.stringify(was.taints) !== JSON.stringify(n.taints)) await known.node.updateTaints(n.taints ?? []);
        if (JSON.stringify(was.patch) !== JSON.stringify(n.patch)) await offloader.addNode(n.name, n.patch);
      },
      extraNodes: () => new Map([...extras].map(([k, e]) => [k, e.node])),
      async drainNode(name) {
        if (name === nodeName) return 0;
        const found = await o.local.find<KubeObject & { spec?: { unschedulable?: boolean } }>(Resources.nodes, name);
        const ours = found && isOurVirtualNode(found, o.remoteClusterId);
        if (!extras.has(name) && !ours) return 0;
        // Left over from before a restart, it is followed now, so its pods' remote copies go with them.
        if (!extras.has(name)) await offloader.addNode(name);
        if (ours && !found.spec?.unschedulable)
          await o.local.mergePatch(Resources.nodes, name, undefined, { spec: { unschedulable: true } });
        const pods = await o.local.list<KubeObject>(Resources.pods, { fieldSelector: `spec.nodeName=${name}` });
        for (const p of pods.items)
          if (!p.metadata.deletionTimestamp)
            await o.local.delete(Resources.pods, p.metadata.name!, p.metadata.namespace).catch((err) => {
              if (!(err instanceof KubeApiError && err.notFound)) throw err;
            });
        return pods.items.length;
      },
      async removeNode(name) {
        if (name === nodeName) return;
        const e = extras.get(name);
        extras.delete(name);
        if (e) await e.node.remove();
        else {
          const found = await o.local.find(Resources.nodes, name);
          if (found && isOurVirtualNode(found, o.remoteClusterId))
            await o.local.delete(Resources.nodes, name, undefined, { uid: found.metadata.uid });
        }
        await offloader.removeNode(name);
        log.info("virtual node removed from the peering", { node: name });
      },
      updateResources: (r) => node.updateResources(r),
      async updateStorage(next) {
        if (JSON.stringify(next) === JSON.stringify(storage)) return;
        log.info("the provider's storage offer changed", { from: storage?.storageClass, to: next?.storageClass });
        storage = next;
        engine.setContext({
          storageClass: next?.storageClass,
          ...(next && { virtualStorageClass: next.virtualStorageClass }),
        });
        if (next) await enableStorage(next);
        // The node says which class its new claims get: once it shows the new one, they get it.
        for (const n of [node, ...[...extras.values()].map((e) => e.node)])
          await n.updateAnnotations(nodeAnnotations());
        await node.updateLabels(nodeLabels());
        for (const e of extras.values()) await e.node.updateLabels(nodeLabels(e.spec.labels));
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** The earlier of two times, either of which may be missing. */
function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
