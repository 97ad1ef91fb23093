// The NamespaceOffloading controller (consumer side): for the NamespaceOffloading named
// "offloading" in a namespace, picks the remote clusters whose virtual nodes match clusterSelector,
// writes the twin namespace's name into each selected cluster's NamespaceMap (and removes it from
// the others), labels the namespace for the pod webhook, and reports per-cluster conditions. A
// finalizer keeps the object until every twin namespace is gone.
import {
  DEFAULT_NAMESPACE_OFFLOADING_NAME,
  InvalidObjectError,
  NamespaceMapResource,
  NamespaceOffloadingResource,
  PodOffloadingStrategy,
  REMOTE_CLUSTER_ID_LABEL,
  SCHEDULING_ENABLED_LABEL,
  SCHEDULING_ENABLED_VALUE,
  VIRTUAL_NODE_SELECTOR,
  parseNamespaceOffloading,
  type ClusterIdentity,
  type NamespaceOffloading,
} from "../apis/index.ts";
import type { KubeClient } from "../kube/client.ts";
import { objectKey, Resources, splitKey, type KubeObject } from "../kube/resources.ts";
import { silentLogger, type Logger } from "../log.ts";
import { createEventRecorder, type EventRecorder } from "../kube/events.ts";
import {
  LOCAL_NAMESPACE_MAPS_SELECTOR,
  ensureNamespaceMap,
  localNamespaceMaps,
  namespaceMapKey,
  remoteClusterInfo,
  setDesiredMapping,
  type NamespaceMapObject,
} from "./namespacemaps.ts";
import { namespaceNameProblem, remoteNamespaceName } from "./names.ts";
import { createControllerLoop, type ControllerLoop } from "./runtime.ts";
import { matchesNodeSelector, nodeSelectorProblems } from "./selector.ts";
import { computeStatus, sameStatus, type StatusInput } from "./status.ts";
import { enforcePodOffloadingStrategy } from "./strategy-enforcer.ts";

export const NAMESPACE_OFFLOADING_FINALIZER = "namespaceoffloading-controller.liqo.io/finalizer";

type Offloading = NamespaceOffloading & KubeObject;

export interface NamespaceOffloadingControllerOptions {
  client: KubeClient;
  /** This cluster's identity: DefaultName twins are `<namespace>-<clusterName>-<6 hex of sha256(clusterID)>`. */
  localCluster: ClusterIdentity;
  logger?: Logger;
  events?: EventRecorder;
  workers?: number;
  now?: () => Date;
}

export interface NamespaceOffloadingController extends Omit<ControllerLoop, "queue"> {
  /** Reconciles one NamespaceOffloading, `namespace/name`. */
  handle(key: string): Promise<void>;
}

export function createNamespaceOffloadingController(
  options: NamespaceOffloadingControllerOptions,
): NamespaceOffloadingController {
  const { client, localCluster } = options;
  const log = (options.logger ?? silentLogger).child({ controller: "namespaceoffloading" });
  const events = options.events ?? createEventRecorder(client, "liqo-namespaceoffloading-controller", log);
  const now = options.now ?? (() => new Date());
  // Every NamespaceOffloading seen, so a change to a NamespaceMap or a virtual node re-checks them all.
  const known = new Set<string>();

  async function writeStatus(
    obj: Offloading,
    maps: Map<string, NamespaceMapObject>,
    input: Omit<StatusInput, "previous" | "clusters" | "now">,
    requestedOverride?: false,
  ) {
    const namespace = obj.metadata.namespace!;
    const clusters = [...maps.values()].map((nm) => ({
      name: nm.metadata.name!,
      namespaceMapKey: namespaceMapKey(nm),
      requested: requestedOverride ?? nm.spec?.desiredMapping?.[namespace] !== undefined,
      phase: requestedOverride === false ? undefined : nm.status?.currentMapping?.[namespace]?.phase,
    }));
    const status = computeStatus({ ...input, previous: obj.status, clusters, now: now() });
    if (sameStatus(status, obj.status)) return obj;
    return client.replace<Offloading>(NamespaceOffloadingResource, { ...obj, status }, "status");
  }

  async function setFinalizer(obj: Offloading, present: boolean): Promise<Offloading> {
    const finalizers = obj.metadata.finalizers ?? [];
    if (finalizers.includes(NAMESPACE_OFFLOADING_FINALIZER) === present) return obj;
    const next = present
      ? [...finalizers, NAMESPACE_OFFLOADING_FINALIZER]
      : finalizers.filter((f) => f !== NAMESPACE_OFFLOADING_FINALIZER);
    // The resourceVersion makes this a compare-and-swap: a concurrent change fails and retries.
    return client.mergePatch<Offloading>(NamespaceOffloadingResource, obj.metadata.name!, obj.metadata.namespace, {
      metadata: { finalizers: next, resourceVersion: obj.metadata.resourceVersion },
    });
  }

  /** Liqo's pod webhook acts on namespaces with liqo.io/scheduling-enabled=true. */
  async function setSchedulingLabel(namespace: string, present: boolean) {
    const ns = await client.find(Resources.namespaces, namespace);
    if (!ns) return;
    const has = ns.metadata.labels?.[SCHEDULING_ENABLED_LABEL] === SCHEDULING_ENABLED_VALUE;
    if (has === present) return;
    await client.mergePatch(Resources.namespaces, namespace, undefined, {
      metadata: { labels: { [SCHEDULING_ENABLED_LABEL]: present ? SCHEDULING_ENABLED_VALUE : null } },
    });
    log.info(present ? "scheduling label added" : "scheduling label removed", { key: namespace });
  }

  async function reportWrongName(obj: Offloading, maps: Map<string, NamespaceMapObject>) {
    const { namespace, name } = obj.metadata;
    const message =
      `NamespaceOffloading ${namespace}/${name} is ignored: only the one named "${DEFAULT_NAMESPACE_OFFLOADING_NAME}" ` +
      `offloads its namespace; delete this one and create it as "${DEFAULT_NAMESPACE_OFFLOADING_NAME}" (or run liqoctl offload namespace ${namespace})`;
    events.warning(obj, "InvalidName", message);
    await writeStatus(
      obj,
      maps,
      {
        deleting: false,
        observedGeneration: obj.metadata.generation as number | undefined,
        notSelected: { reason: "InvalidName", message },
      },
      false,
    );
  }

  /** Deletion: drop the mappings, wait for every twin to go, then release the object. */
  async function finalize(obj: Offloading, maps: Map<string, NamespaceMapObject>, remoteName: string | undefined) {
    if (!obj.metadata.finalizers?.includes(NAMESPACE_OFFLOADING_FINALIZER)) return;
    const namespace = obj.metadata.namespace!;
    await setSchedulingLabel(namespace, false);
    for (const [id, nm] of maps) maps.set(id, await setDesiredMapping(client, nm, namespace, null));
    const updated = await writeStatus(obj, maps, { deleting: true, remoteNamespaceName: remoteName });
    if (Object.keys(updated.status?.remoteNamespacesConditions ?? {}).length > 0) {
      log.info("waiting for the remote namespaces to be deleted", { key: objectKey(obj) });
      return;
    }
    await setFinalizer(updated, false);
    log.info("offloading removed", { key: objectKey(obj) });
  }

  async function handle(key: string): Promise<void> {
    const { namespace = "", name } = splitKey(key);
    const obj = await client.find<Offloading>(NamespaceOffloadingResource, name, namespace);
    if (!obj) {
      known.delete(key);
      return;
    }
    known.add(key);
    const maps = await localNamespaceMaps(client);
    if (name !== DEFAULT_NAMESPACE_OFFLOADING_NAME) return reportWrongName(obj, maps);

    const problems: string[] = [];
    let spec: NamespaceOffloading["spec"] | undefined;
    try {
      spec = parseNamespaceOffloading(obj).spec;
    } catch (err) {
      if (!(err instanceof InvalidObjectError)) throw err;
      problems.push(...err.issues.map((i) => `${i.path}: ${i.message}`));
    }
    const remoteName = spec && remoteNamespaceName(namespace, spec.namespaceMappingStrategy, localCluster);
    if (obj.metadata.deletionTimestamp) return finalize(obj, maps, remoteName ?? obj.status?.remoteNamespaceName);

    if (spec) problems.push(...nodeSelectorProblems(spec.clusterSelector));
    const nameProblem = remoteName && namespaceNameProblem(remoteName);
    if (nameProblem)
      problems.push(
        `spec.namespaceMappingStrategy: the remote namespace name ${nameProblem}; use a shorter namespace name`,
      );
    if (problems.length > 0 || !spec || !remoteName) {
      // Existing mappings stay as they are: a typo in the selector must not tear down running twins.
      const message = `NamespaceOffloading ${key} is invalid and was not applied: ${problems.join("; ")}; fix it and apply it again`;
      events.warning(obj, "Invalid", message);
      log.warn("invalid NamespaceOffloading", { key, problems });
      await writeStatus(obj, maps, {
        deleting: false,
        remoteNamespaceName: obj.status?.remoteNamespaceName,
        notSelected: { reason: "InvalidSpec", message },
      });
      return;
    }

    const current = await setFinalizer(obj, true);
    const nodes = await client.list(Resources.nodes, { labelSelector: VIRTUAL_NODE_SELECTOR });
    const failures: string[] = [];
    for (const node of nodes.items) {
      const clusterID = node.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL];
      if (!clusterID) {
        failures.push(`virtual node ${node.metadata.name} has no ${REMOTE_CLUSTER_ID_LABEL} label`);
        continue;
      }
      let nm = maps.get(clusterID);
      if (!nm) {
        const info = await remoteClusterInfo(client, clusterID);
        if (!info) {
          failures.push(
            `virtual node ${node.metadata.name} stands for cluster ${clusterID}, but no ForeignCluster has that ID, so its NamespaceMap cannot be created; peer with that cluster or fix the node's ${REMOTE_CLUSTER_ID_LABEL} label`,
          );
          continue;
        }
        nm = await ensureNamespaceMap(client, info, { name: node.metadata.name!, uid: node.metadata.uid! });
      }
      const selected = matchesNodeSelector(
        { name: node.metadata.name!, labels: node.metadata.labels ?? {} },
        spec.clusterSelector,
      );
      maps.set(clusterID, await setDesiredMapping(client, nm, namespace, selected ? remoteName : null));
    }
    await setSchedulingLabel(namespace, spec.podOffloadingStrategy !== PodOffloadingStrategy.Local);
    await writeStatus(current, maps, {
      deleting: false,
      remoteNamespaceName: remoteName,
      observedGeneration: current.metadata.generation as number,
    });
    await enforcePodOffloadingStrategy({
      client,
      offloading: current,
      strategy: spec.podOffloadingStrategy,
      events,
      logger: log,
      virtualNodes: new Set(nodes.items.map((n) => n.metadata.name!)),
    });
    if (failures.length > 0) {
      const message = `NamespaceOffloading ${key}: ${failures.join("; ")}`;
      events.warning(current, "ClusterUnavailable", message);
      throw new Error(message);
    }
  }

  const offloadingKeys = () => [...known];
  const loop = createControllerLoop({
    name: "namespaceoffloading",
    handle,
    logger: log,
    workers: options.workers,
    watches: [
      { client, resource: NamespaceOffloadingResource, keys: (o) => [objectKey(o)] },
      { client, resource: NamespaceMapResource, labelSelector: LOCAL_NAMESPACE_MAPS_SELECTOR, keys: offloadingKeys },
      {
        client,
        resource: Resources.nodes,
        labelSelector: VIRTUAL_NODE_SELECTOR,
        // Virtual nodes update their status often; only their labels (and existence) matter here.
        keys: (o, old) => (old && sameLabels(o, old) ? [] : offloadingKeys()),
      },
    ],
  });
  return { handle, start: loop.start, stop: loop.stop, idle: loop.idle };
}

function sameLabels(a: KubeObject, b: KubeObject) {
  return JSON.stringify(a.metadata.labels ?? {}) === JSON.stringify(b.metadata.labels ?? {});
}
