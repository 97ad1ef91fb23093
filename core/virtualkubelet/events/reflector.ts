// Events of offloaded objects come home (Liqo 1.x's event reflection): every Event in a twin
// namespace of the provider about a pod of this virtual node, or about an object the reflectors
// copy there, is written on the local object, so `kubectl describe` shows why an offloaded pod is
// Pending, pulling or crashing. One local Event per remote Event, updated in place as its count
// grows (deduplicated by the provider's own recorder, mirrored here); writes are bounded per local
// object and per peering, so an Event storm on the provider stays a bounded number of writes here.
import { KubeApiError, RetryAfterError } from "../../kube/errors.ts";
import type { KubeClient } from "../../kube/client.ts";
import { createNamespacedInformers } from "../../kube/namespaced-informers.ts";
import { keyOf, objectKey, Resources, type KubeObject } from "../../kube/resources.ts";
import { withoutManagedFields } from "../../kube/slim.ts";
import { createWorkQueue } from "../../kube/workqueue.ts";
import { silentLogger, type Logger } from "../../log.ts";
import { createRegistry, type Registry } from "../../metrics/index.ts";
import { createTokenBuckets } from "./buckets.ts";
import {
  EVENT_KINDS,
  eventSignature,
  eventUpdate,
  homeward,
  localEvent,
  skipReason,
  type RemoteEvent,
} from "./forge.ts";

export interface EventReflectorOptions {
  local: KubeClient;
  remote: KubeClient;
  remoteClusterId: string;
  remoteClusterName: string;
  /** The virtual node: Events about pods come home only for pods bound to it. */
  nodeName: string;
  /** The reflection policy for Events (reflection policy "events"), asked with the local object. */
  admits?: (local: KubeObject) => boolean;
  logger?: Logger;
  registry?: Registry;
  /** New local Events per local object: a burst, then one per refill period (default 25, 30 s). */
  perObjectBurst?: number;
  perObjectRefillMs?: number;
  /** Writes per peering (creates and updates): a burst, then one per refill period (default 100, 20 ms: a kubelet's 50/s). */
  burst?: number;
  refillMs?: number;
}

export interface EventReflector {
  addPair(pair: { localNamespace: string; remoteNamespace: string }): void;
  removePair(localNamespace: string): Promise<void>;
  /** Events handled again (a policy change). */
  requeueAll(): void;
  stop(): Promise<void>;
}

export function createEventReflector(o: EventReflectorOptions): EventReflector {
  const log = (o.logger ?? silentLogger).child({ component: "event-reflection" });
  const registry = o.registry ?? createRegistry();
  const outcomes = registry.counter({
    name: "liqo_event_reflection_total",
    help: "Remote Events handled by event reflection, by outcome (created, updated, unchanged, skipped, dropped: over the per-object limit).",
    labelNames: ["outcome"] as const,
  });
  const perObject = createTokenBuckets({ burst: o.perObjectBurst ?? 25, refillMs: o.perObjectRefillMs ?? 30_000 });
  // A virtual node stands for a whole cluster: its limit is one kubelet's (eventRecordQPS 50, burst 100).
  const overall = createTokenBuckets({ burst: o.burst ?? 100, refillMs: o.refillMs ?? 20 });
  const events = createNamespacedInformers<RemoteEvent>({
    client: o.remote,
    resource: Resources.events,
    logger: log,
    transform: withoutManagedFields,
  });
  /** twin namespace → local namespace */
  const pairs = new Map<string, string>();
  /** remote Event key → the signature last written locally */
  const written = new Map<string, string>();
  const queue = createWorkQueue({
    name: "event-reflection",
    workers: 2,
    logger: log,
    baseDelayMs: 200,
    maxDelayMs: 30_000,
    handler: handle,
  });
  events.on({
    add: (ev) => queue.add(objectKey(ev)),
    update: (_old, ev) => queue.add(objectKey(ev)),
    // The local copy stays: the local API server expires Events by its own TTL.
    delete: (ev) => written.delete(objectKey(ev)),
  });
  queue.start();

  const count = (outcome: string) => {
    outcomes.inc({ outcome });
  };

  async function handle(key: string): Promise<void> {
    const seen = events.get(key);
    if (!seen) return void written.delete(key);
    const ev = homeward(seen);
    const localNamespace = pairs.get(ev.metadata.namespace!);
    if (!localNamespace) return;
    const skip = skipReason(ev);
    if (skip) return count("skipped");
    const signature = eventSignature(ev);
    if (written.get(key) === signature) return count("unchanged");
    const io = ev.involvedObject!;
    const ref = await o.local.resourceFor(EVENT_KINDS[io.kind!]!, io.kind!);
    const local = await o.local.find<KubeObject & { spec?: { nodeName?: string } }>(ref, io.name!, localNamespace);
    // Nothing local to show it on, or a pod of this namespace that is not ours (a peer names only its own).
    if (!local || (io.kind === "Pod" && local.spec?.nodeName !== o.nodeName)) return count("skipped");
    if (o.admits && !o.admits(local)) return count("skipped");
    const isNew = !written.has(key);
    if (isNew && !perObject.take(`${io.kind}/${localNamespace}/${io.name}`)) {
      log.debug("event dropped: too many for one object", { key, object: keyOf(localNamespace, io.name!) });
      return count("dropped");
    }
    if (!overall.take("")) throw new RetryAfterError(overall.wait(""), "event reflection is over its write rate");
    const desired = localEvent(ev, local, {
      localNamespace,
      remoteClusterId: o.remoteClusterId,
      remoteClusterName: o.remoteClusterName,
    });
    const name = desired.metadata.name!;
    try {
      if (isNew) await o.local.create(Resources.events, desired, localNamespace);
      else await o.local.mergePatch(Resources.events, name, localNamespace, eventUpdate(desired));
      count(isNew ? "created" : "updated");
    } catch (err) {
      if (!(err instanceof KubeApiError)) throw err;
      // Created before a restart (the name is fixed), or expired locally meanwhile: the other verb.
      if (isNew && err.conflict) await o.local.mergePatch(Resources.events, name, localNamespace, eventUpdate(desired));
      else if (!isNew && err.notFound) await o.local.create(Resources.events, desired, localNamespace);
      else throw err;
      count(isNew ? "updated" : "created");
    }
    written.set(key, signature);
  }

  return {
    addPair({ localNamespace, remoteNamespace }) {
      for (const [r, l] of pairs)
        if (l === localNamespace && r !== remoteNamespace) void this.removePair(localNamespace);
      pairs.set(remoteNamespace, localNamespace);
      events.addNamespace(remoteNamespace);
    },
    async removePair(localNamespace) {
      for (const [r, l] of [...pairs]) {
        if (l !== localNamespace) continue;
        pairs.delete(r);
        for (const k of written.keys()) if (k.startsWith(`${r}/`)) written.delete(k);
        await events.removeNamespace(r);
      }
    },
    requeueAll() {
      // What was written stays written (its signature still matches); what a policy held back is tried again.
      for (const ev of events.list()) queue.add(objectKey(ev));
    },
    async stop() {
      await queue.shutdown();
      await events.stop();
    },
  };
}
