// One replicated kind in one direction: informers on the source namespace (objects asking to be
// sent) and the target namespace (our copies), one work queue keyed by name. A worker reads both
// caches and makes the target match: spec source → target, status target → source, copy deleted
// when its source is gone. It never writes a target object without our marks.
import type { KubeClient } from "../../kube/client.ts";
import { createInformer, type Informer } from "../../kube/informer.ts";
import { keyOf, type KubeObject } from "../../kube/resources.ts";
import { createWorkQueue, type WorkQueue } from "../../kube/workqueue.ts";
import type { Logger } from "../../log.ts";
import type { EventRecorder } from "../../kube/events.ts";
import {
  isReplicaOf,
  replicaOf,
  replicaUpToDate,
  sourceSelector,
  statusPatch,
  targetSelector,
  type ReplicatedKind,
} from "./forge.ts";

export const REPLICATOR_FIELD_MANAGER = "liqo-crd-replicator";
/** How long a name held by someone else's object waits before it is checked again. */
const CONFLICT_RECHECK_MS = 30_000;

export interface Side {
  client: KubeClient;
  namespace: string;
  clusterId: string;
  /** Records Events in this side's cluster (only the local side has one). */
  events?: EventRecorder;
}

export interface ChannelCounters {
  writes(what: "spec" | "status" | "delete"): void;
  conflict(): void;
}

export interface Channel {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly synced: boolean;
  idle(): Promise<void>;
  /** Names whose target is held by an object we did not make. */
  conflicts(): string[];
  handle(name: string): Promise<void>;
}

export function createChannel(o: {
  kind: ReplicatedKind;
  source: Side;
  target: Side;
  logger: Logger;
  counters: ChannelCounters;
  workers?: number;
  conflictRecheckMs?: number;
}): Channel {
  const { kind, source, target, counters } = o;
  const name = `${kind.direction}-${kind.resource.plural}`;
  const log = o.logger.child({ channel: name });
  // The source side asks for the target cluster; copies carry the source cluster as origin.
  const sources: Informer = createInformer({
    client: source.client,
    resource: kind.resource,
    namespace: source.namespace,
    labelSelector: sourceSelector(target.clusterId),
    logger: log,
  });
  const targets: Informer = createInformer({
    client: target.client,
    resource: kind.resource,
    namespace: target.namespace,
    labelSelector: targetSelector(source.clusterId),
    logger: log,
  });
  const conflicted = new Set<string>();
  let queue: WorkQueue | undefined;
  let recheck: ReturnType<typeof setInterval> | undefined;

  async function handle(objName: string) {
    const src = sources.get(keyOf(source.namespace, objName));
    const tgt = targets.get(keyOf(target.namespace, objName));
    if (!src || src.metadata.deletionTimestamp) {
      conflicted.delete(objName);
      // The informer's selector only ever holds our copies: deleting with its UID cannot hit another object.
      if (tgt && !tgt.metadata.deletionTimestamp && isReplicaOf(tgt, source.clusterId)) {
        if (await target.client.delete(kind.resource, objName, target.namespace, { uid: tgt.metadata.uid })) {
          counters.writes("delete");
          log.info("replica deleted: its source is gone", { key: keyOf(target.namespace, objName) });
        }
      }
      return;
    }
    const desired = replicaOf(src, kind, target.namespace, source.clusterId);
    if (!tgt) {
      // Not in our cache: absent, or present without our marks. Never take over the latter.
      const found = await target.client.find(kind.resource, objName, target.namespace);
      if (found && !isReplicaOf(found, source.clusterId)) {
        // Held back, not retried through the queue (that would keep idle() waiting): a timer rechecks it.
        reportConflict(src, found);
        return;
      }
    }
    conflicted.delete(objName);
    if (!tgt || !replicaUpToDate(tgt, desired, REPLICATOR_FIELD_MANAGER)) {
      await target.client.apply(kind.resource, desired, { fieldManager: REPLICATOR_FIELD_MANAGER, force: true });
      counters.writes("spec");
      log.debug("replica applied", { key: keyOf(target.namespace, objName) });
    }
    // The target's owner answers in its status; the source shows that answer.
    const patch = tgt ? statusPatch(src.status, tgt.status) : undefined;
    if (patch) {
      await source.client.mergePatch(
        kind.resource,
        objName,
        source.namespace,
        { metadata: { resourceVersion: src.metadata.resourceVersion }, status: patch },
        "status",
      );
      counters.writes("status");
    }
  }

  function reportConflict(src: KubeObject, found: KubeObject) {
    const first = !conflicted.has(src.metadata.name!);
    conflicted.add(src.metadata.name!);
    if (!first) return;
    counters.conflict();
    const where = `${kind.resource.kind} ${target.namespace}/${src.metadata.name} in cluster ${target.clusterId}`;
    const message =
      `${where} already exists and was not made by the replicator from cluster ${source.clusterId} ` +
      `(it lacks liqo.io/replicated=true, liqo.io/originID=${source.clusterId}); it is left alone — delete or rename it to let replication proceed`;
    log.warn("replication conflict", {
      key: keyOf(target.namespace, src.metadata.name!),
      owner: found.metadata.labels ?? {},
    });
    // The Event goes on whichever of the two objects lives in the local cluster.
    if (source.events) source.events.warning(src, "ReplicationConflict", message);
    else target.events?.warning(found, "ReplicationConflict", message);
  }

  const queueKey = (obj: KubeObject) => obj.metadata.name!;
  return {
    name,
    handle,
    get synced() {
      return sources.synced && targets.synced;
    },
    conflicts: () => [...conflicted].sort(),
    async start() {
      queue = createWorkQueue({
        name: `crd-replicator-${name}`,
        workers: o.workers ?? 2,
        logger: log,
        maxDelayMs: 30_000,
        // The queue logs failures with the key and retries them with backoff (a remote outage, a revoked identity).
        handler: handle,
      });
      const enqueue = (obj: KubeObject) => queue?.add(queueKey(obj));
      for (const inf of [sources, targets])
        inf.on({ add: enqueue, update: (_old, obj) => enqueue(obj), delete: enqueue });
      sources.start();
      targets.start();
      await Promise.all([sources.waitForSync(), targets.waitForSync()]);
      queue.start();
      recheck = setInterval(() => {
        for (const n of conflicted) queue?.add(n);
      }, o.conflictRecheckMs ?? CONFLICT_RECHECK_MS);
    },
    async stop() {
      clearInterval(recheck);
      await queue?.shutdown();
      await Promise.all([sources.stop(), targets.stop()]);
    },
    async idle() {
      await queue?.idle();
    },
  };
}
