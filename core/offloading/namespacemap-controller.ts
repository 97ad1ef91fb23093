// The NamespaceMap controller of one peering: reads the local NamespaceMap of a remote cluster and
// makes the twin namespaces in that cluster match spec.desiredMapping, reporting each one in
// status.currentMapping (Accepted, CreationLoopBackOff, Terminating). The reflection engine's
// namespace pairs follow: a pair starts once its twin exists and stops before the twin is deleted.
import {
  MappingPhase,
  NamespaceMapResource,
  REMOTE_CLUSTER_ID_LABEL,
  REPLICATION_STATUS_LABEL,
  type RemoteNamespaceStatus,
} from "../apis/index.ts";
import { RetryAfterError } from "../kube/errors.ts";
import type { KubeClient } from "../kube/client.ts";
import { splitKey } from "../kube/resources.ts";
import { silentLogger, type Logger } from "../log.ts";
import { createEventRecorder, type EventRecorder } from "../kube/events.ts";
import { namespaceMapKey, type NamespaceMapObject } from "./namespacemaps.ts";
import { createRemoteNamespaces } from "./remote-namespaces.ts";
import { createControllerLoop, type ControllerLoop } from "./runtime.ts";
import { sameStatus } from "./status.ts";

export const NAMESPACE_MAP_FINALIZER = "namespacemap-controller.liqo.io/finalizer";

export interface NamespacePair {
  localNamespace: string;
  remoteNamespace: string;
}

export interface NamespaceMapControllerOptions {
  /** The cluster holding the NamespaceMap (this one). */
  local: KubeClient;
  /** The peer, where twin namespaces are created. */
  remote: KubeClient;
  localClusterId: string;
  remoteClusterId: string;
  /** For messages; defaults to the remote cluster ID. */
  remoteClusterName?: string;
  /** Called with every pair once the set changed (after addPair/removePair). */
  onPairsChanged?: (pairs: NamespacePair[]) => void | Promise<void>;
  /** e.g. `(p) => engine.addNamespacePair(p)`. */
  addPair?: (pair: NamespacePair) => void | Promise<void>;
  /** e.g. `(ns) => engine.removeNamespacePair(ns)`. */
  removePair?: (localNamespace: string) => void | Promise<void>;
  logger?: Logger;
  events?: EventRecorder;
  workers?: number;
  /** How often every NamespaceMap is re-checked against the remote twins (default 10 s; informer resync). */
  remoteResyncMs?: number;
}

export interface NamespaceMapController extends Omit<ControllerLoop, "queue"> {
  /** Reconciles one NamespaceMap, `namespace/name`. */
  handle(key: string): Promise<void>;
  /** The pairs whose twin namespace exists and is ours. */
  pairs(): NamespacePair[];
}

type Current = Record<string, RemoteNamespaceStatus>;

export function createNamespaceMapController(options: NamespaceMapControllerOptions): NamespaceMapController {
  const { local, remote, localClusterId, remoteClusterId } = options;
  const remoteClusterName = options.remoteClusterName ?? remoteClusterId;
  const log = (options.logger ?? silentLogger).child({ controller: "namespacemap", remoteClusterId });
  const events = options.events ?? createEventRecorder(local, "liqo-namespacemap-controller", log);
  const pairsByMap = new Map<string, Map<string, string>>();

  const pairs = () =>
    [...pairsByMap.values()]
      .flatMap((m) => [...m].map(([localNamespace, remoteNamespace]) => ({ localNamespace, remoteNamespace })))
      .sort((a, b) => a.localNamespace.localeCompare(b.localNamespace));

  /** Brings the pairs of one NamespaceMap to `next`, one callback at a time, so a failure resumes where it stopped. */
  async function syncPairs(mapKey: string, next: Map<string, string>) {
    const have = pairsByMap.get(mapKey) ?? new Map<string, string>();
    pairsByMap.set(mapKey, have);
    let changed = false;
    for (const [localNamespace, remoteNamespace] of [...have]) {
      if (next.get(localNamespace) === remoteNamespace) continue;
      await options.removePair?.(localNamespace);
      have.delete(localNamespace);
      changed = true;
    }
    for (const [localNamespace, remoteNamespace] of next) {
      if (have.get(localNamespace) === remoteNamespace) continue;
      await options.addPair?.({ localNamespace, remoteNamespace });
      have.set(localNamespace, remoteNamespace);
      changed = true;
    }
    if (have.size === 0) pairsByMap.delete(mapKey);
    if (changed) {
      log.info("namespace pairs changed", { key: mapKey, pairs: pairs() });
      await options.onPairsChanged?.(pairs());
    }
  }

  async function setFinalizer(nm: NamespaceMapObject, present: boolean): Promise<NamespaceMapObject> {
    const finalizers = nm.metadata.finalizers ?? [];
    if (finalizers.includes(NAMESPACE_MAP_FINALIZER) === present) return nm;
    const next = present
      ? [...finalizers, NAMESPACE_MAP_FINALIZER]
      : finalizers.filter((f) => f !== NAMESPACE_MAP_FINALIZER);
    return local.mergePatch<NamespaceMapObject>(NamespaceMapResource, nm.metadata.name!, nm.metadata.namespace, {
      metadata: { finalizers: next, resourceVersion: nm.metadata.resourceVersion },
    });
  }

  async function handle(key: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    let nm = await local.find<NamespaceMapObject>(NamespaceMapResource, name, namespace);
    if (!nm || nm.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL] !== remoteClusterId) return syncPairs(key, new Map());
    const deleting = !!nm.metadata.deletionTimestamp;
    if (deleting && !nm.metadata.finalizers?.includes(NAMESPACE_MAP_FINALIZER)) return syncPairs(key, new Map());
    if (!deleting) nm = await setFinalizer(nm, true);

    const twins = createRemoteNamespaces({ remote, localClusterId, remoteClusterName, namespaceMapKey: key });
    const desired = deleting ? {} : (nm.spec?.desiredMapping ?? {});
    const before: Current = nm.status?.currentMapping ?? {};
    const current: Current = {};
    const problems: string[] = [];
    let transientOnly = true;
    const accepted = new Map<string, string>();

    for (const [localNamespace, remoteNamespace] of Object.entries(desired)) {
      const previous = before[localNamespace];
      const result = await twins.ensure(
        remoteNamespace,
        localNamespace,
        previous?.remoteNamespace === remoteNamespace ? previous.phase : undefined,
      );
      if (result.phase)
        current[localNamespace] = { remoteNamespace, phase: result.phase as RemoteNamespaceStatus["phase"] };
      if (result.phase === MappingPhase.Accepted) accepted.set(localNamespace, remoteNamespace);
      if (result.problem) {
        problems.push(result.problem);
        if (!result.transient) {
          transientOnly = false;
          events.warning(
            nm,
            "RemoteNamespaceCreationFailed",
            `${localNamespace} -> ${remoteNamespace}: ${result.problem}`,
          );
        }
      }
    }

    // Reflection into a twin stops before the twin is deleted.
    await syncPairs(key, accepted);

    for (const [localNamespace, entry] of Object.entries(before)) {
      if (!entry.remoteNamespace || desired[localNamespace] === entry.remoteNamespace) continue;
      const gone = await twins.remove(entry.remoteNamespace);
      if (!gone) {
        // A renamed mapping reports its new twin; the old one's deletion has started and ends on its own.
        if (!current[localNamespace])
          current[localNamespace] = { remoteNamespace: entry.remoteNamespace, phase: MappingPhase.Terminating };
        problems.push(`namespace ${entry.remoteNamespace} is terminating`);
      } else {
        log.info("remote namespace removed", { key, remoteNamespace: entry.remoteNamespace });
      }
    }

    const status = { ...nm.status, currentMapping: current };
    if (!sameStatus(status, nm.status ?? {})) {
      nm = await local.replace<NamespaceMapObject>(NamespaceMapResource, { ...nm, status }, "status");
    }
    if (deleting && Object.keys(current).length === 0) {
      await setFinalizer(nm, false);
      return;
    }
    if (problems.length === 0) return;
    // Terminating twins and blips come back soon; a conflict waits for a person, so back off.
    if (transientOnly) throw new RetryAfterError(1000, `NamespaceMap ${key}: ${problems.join("; ")}`);
    throw new Error(`NamespaceMap ${key}: ${problems.join("; ")}`);
  }

  const loop = createControllerLoop({
    name: `namespacemap-${remoteClusterId}`,
    handle,
    logger: log,
    workers: options.workers,
    watches: [
      {
        client: local,
        resource: NamespaceMapResource,
        labelSelector: `${REMOTE_CLUSTER_ID_LABEL}=${remoteClusterId},${REPLICATION_STATUS_LABEL}!=true`,
        // A twin deleted or changed behind our back is found by this periodic re-check, not by
        // watching the remote namespaces: a peer's identity may get, create and delete its twins by
        // name but not list or watch the provider's namespaces.
        resyncMs: options.remoteResyncMs ?? 10_000,
        keys: (o) => [namespaceMapKey(o)],
      },
    ],
  });
  return { handle, pairs, start: loop.start, stop: loop.stop, idle: loop.idle };
}
