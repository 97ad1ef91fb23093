// One reflector: a plugin's declared resource, reflected for every namespace pair the engine runs.
// Informers on both sides only enqueue keys; a worker reads both caches, asks the plugin, then
// applies (server-side, our field manager), deletes (UID precondition) or skips, and records an
// Event when a user should know. Keys are `<local namespace>/<name>` (just `<name>` for
// cluster-scoped kinds): the remote copy keeps the local object's name.
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../../kube/errors.ts";
import { createInformer, type Informer } from "../../kube/informer.ts";
import type { KubeObject as KubeObj, ResourceRef } from "../../kube/resources.ts";
import { createWorkQueue, type WorkQueue } from "../../kube/workqueue.ts";
import type { Logger } from "../../log.ts";
import type { Decision, KubeObject, ReflectionContext, Resource } from "../abi.ts";
import { PluginError } from "../errors.ts";
import { isOwnedBy, writesStatusOnly } from "../finish.ts";
import type { ReflectorPlugin } from "../host.ts";
import type { EventRecorder } from "./events.ts";
import { isSubset } from "./subset.ts";
import type { EngineMetrics } from "./metrics.ts";

export interface NamespacePair {
  localNamespace: string;
  remoteNamespace: string;
}

export interface ReflectorDeps {
  local: KubeClient;
  remote: KubeClient;
  contextFor(pair: NamespacePair): ReflectionContext;
  fieldManager: string;
  workers: number;
  logger: Logger;
  metrics: EngineMetrics;
  events: EventRecorder;
  /** Called when the plugin is quarantined while this reflector runs it. */
  onQuarantine(reflector: Reflector, reason: string): void;
}

interface PairInformers {
  pair: NamespacePair;
  local: Informer<KubeObj>;
  remote: Informer<KubeObj>;
}

export class Reflector {
  readonly name: string;
  private readonly pairs = new Map<string, PairInformers>();
  private readonly byRemoteNs = new Map<string, string>();
  private readonly queue: WorkQueue;
  private readonly log: Logger;
  private stopped = false;
  /**
   * Per key, the resourceVersions (source|target) the last apply left both sides at. Our own write
   * comes back as a watch event; when neither side moved since, the plugin would answer the same,
   * so the call and the comparison are skipped. Only for plugins whose answer depends on nothing
   * but the two objects and the pair's fixed context, in one direction.
   */
  private readonly settled = new Map<string, string>();
  private readonly memoable: boolean;

  constructor(readonly plugin: ReflectorPlugin, readonly resource: Resource, readonly ref: ResourceRef, private readonly deps: ReflectorDeps) {
    this.name = `${plugin.manifest.name}/${resource.kind}`;
    this.log = deps.logger.child({ reflector: this.name });
    // lookup reads other objects and translateIp may be remapped by the network fabric later: an
    // answer that uses either can change while both objects stay the same.
    this.memoable = resource.direction !== "both" && plugin.manifest.hostFunctions.every((f) => f === "log");
    this.queue = createWorkQueue({
      name: this.name, workers: deps.workers, logger: this.log, baseDelayMs: 50, maxDelayMs: 60_000,
      handler: (key) => this.handle(key),
      observe: (_k, _o, ms) => deps.metrics.latency.observe({ reflector: this.name }, ms / 1000),
    });
    this.queue.start();
  }

  get namespaced(): boolean { return this.resource.namespaced !== false; }
  get queueDepth(): number { return this.queue.depth; }
  get pairCount(): number { return this.pairs.size; }
  get queueStats() { return this.queue.stats; }

  /** Starts reflecting this kind for a pair; cluster-scoped kinds share one pair-less set of informers. */
  async addPair(pair: NamespacePair): Promise<void> {
    const id = this.namespaced ? pair.localNamespace : "";
    if (this.stopped || this.pairs.has(id)) return;
    const mk = (client: KubeClient, namespace?: string) => createInformer<KubeObj>({ client, resource: this.ref, namespace, logger: this.log, resyncMs: 10 * 60_000 });
    const entry: PairInformers = {
      pair,
      local: mk(this.deps.local, this.namespaced ? pair.localNamespace : undefined),
      remote: mk(this.deps.remote, this.namespaced ? pair.remoteNamespace : undefined),
    };
    const enqueue = (obj: KubeObj) => this.queue.add(this.namespaced ? `${pair.localNamespace}/${obj.metadata.name}` : obj.metadata.name!);
    for (const inf of [entry.local, entry.remote]) inf.on({ add: enqueue, update: (_o, n) => enqueue(n), delete: enqueue });
    this.pairs.set(id, entry);
    if (this.namespaced) this.byRemoteNs.set(pair.remoteNamespace, pair.localNamespace);
    entry.local.start();
    entry.remote.start();
    await Promise.all([entry.local.waitForSync(60_000), entry.remote.waitForSync(60_000)]);
  }

  async removePair(localNamespace: string): Promise<void> {
    const id = this.namespaced ? localNamespace : "";
    const entry = this.pairs.get(id);
    if (!entry) return;
    this.pairs.delete(id);
    this.byRemoteNs.delete(entry.pair.remoteNamespace);
    this.settled.clear(); // the pair may come back with another context
    await Promise.all([entry.local.stop(), entry.remote.stop()]);
  }

  /** A read-only view of this reflector's caches, for the plugin host's lookup function. */
  lookup(cluster: "local" | "remote", namespace: string, name: string): KubeObj | undefined {
    for (const entry of this.pairs.values()) {
      const ns = cluster === "local" ? entry.pair.localNamespace : entry.pair.remoteNamespace;
      if (this.namespaced && ns !== namespace) continue;
      return entry[cluster].get(this.namespaced ? `${namespace}/${name}` : name);
    }
    return undefined;
  }

  /** Queues every local object again, so each one gets the Event of a quarantine that happened meanwhile. */
  requeueLocal(): void {
    for (const entry of this.pairs.values()) {
      for (const obj of entry.local.list()) this.queue.add(this.namespaced ? `${entry.pair.localNamespace}/${obj.metadata.name}` : obj.metadata.name!);
    }
  }

  synced(): boolean {
    return [...this.pairs.values()].every((p) => p.local.synced && p.remote.synced);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.queue.shutdown();
    await Promise.all([...this.pairs.keys()].map((id) => this.removePair(this.pairs.get(id)!.pair.localNamespace)));
  }

  private async handle(key: string): Promise<void> {
    if (this.stopped || this.plugin.state === "closed") return;
    const slash = key.indexOf("/");
    const localNs = this.namespaced ? key.slice(0, slash) : "";
    const name = this.namespaced ? key.slice(slash + 1) : key;
    const entry = this.pairs.get(localNs);
    if (!entry) return;
    // Decide only once both caches have listed: with just the remote side listed, a local object
    // looks absent, so its copy would be deleted, or a plugin failure blamed on no local object
    // (a quarantine then had nothing to put its Event on).
    if (!entry.local.synced || !entry.remote.synced) throw new RetryAfterError(100, `caches of namespace ${entry.pair.localNamespace} are still listing`);
    const { pair } = entry;
    const local = entry.local.get(this.namespaced ? `${pair.localNamespace}/${name}` : name) ?? null;
    const remote = entry.remote.get(this.namespaced ? `${pair.remoteNamespace}/${name}` : name) ?? null;
    if (this.plugin.state === "quarantined") {
      // However the plugin got quarantined (this call, another one, the host itself), the user
      // sees why their object is not reflected; the recorder keeps it to one Event per object.
      return this.reportQuarantine(local, this.plugin.quarantineReason ?? "quarantined");
    }
    const ctx = this.deps.contextFor(pair);
    const dir = this.resource.direction;
    if (this.memoable) {
      const [source, target] = dir === "forward" ? [local, remote] : [remote, local];
      const stamp = `${source?.metadata.resourceVersion ?? ""}|${target?.metadata.resourceVersion ?? ""}`;
      if (source && this.settled.get(key) === stamp) return this.count("unchanged");
      this.settled.delete(key);
      const after = await this.step(dir as "forward" | "backward", source, target, ctx);
      if (source && after) this.settled.set(key, `${source.metadata.resourceVersion ?? ""}|${after}`);
      return;
    }
    if (dir === "forward" || dir === "both") await this.step("forward", local, remote, ctx);
    if (dir === "backward" || dir === "both") await this.step("backward", remote, local, ctx);
  }

  /** The engine quarantines the plugin (once); the object gets its Event (the recorder keeps one per object). */
  private reportQuarantine(subject: KubeObj | null | undefined, reason: string): void {
    this.deps.onQuarantine(this, reason);
    if (subject) this.deps.events.warning(subject, "ReflectionPluginQuarantined", `${this.resource.kind} not reflected: ${reason}`);
  }

  /**
   * source → target: forward writes the remote cluster, backward the local one. Returns the
   * target's resourceVersion when the target now holds what the plugin wants (written or already so).
   */
  private async step(direction: "forward" | "backward", source: KubeObj | null, target: KubeObj | null, ctx: ReflectionContext): Promise<string | undefined> {
    if (!source && !target) return;
    const forward = direction === "forward";
    const targetClient = forward ? this.deps.remote : this.deps.local;
    const origin = forward ? ctx.localClusterId : ctx.remoteClusterId;
    // Events go on the local object only: that is what the user owns and describes.
    const subject = forward ? source : target;
    let decision: Decision;
    const started = performance.now();
    try {
      decision = forward
        ? await this.plugin.forward(source as KubeObject | null, target as KubeObject | null, ctx)
        : await this.plugin.backward(source as KubeObject | null, target as KubeObject | null, ctx);
    } catch (err) {
      this.countError("plugin");
      // "quarantined": another call tripped it first (calls run concurrently); this object is stuck all the same.
      if (err instanceof PluginError && (err.quarantines || err.code === "quarantined")) {
        this.reportQuarantine(subject, this.plugin.quarantineReason ?? err.message);
        return;
      }
      if (err instanceof PluginError) {
        // The object's own problem: report it and wait for the object to change.
        if (subject) this.deps.events.warning(subject, "ReflectionFailed", err.message);
        this.deps.metrics.reconciles.inc({ reflector: this.name, outcome: "error" });
        return;
      }
      throw err;
    } finally {
      this.deps.metrics.pluginCall.observe({ reflector: this.name }, (performance.now() - started) / 1000);
    }
    const statusOnly = writesStatusOnly({ direction, resource: this.resource });
    // Reflection never sets owner references. A destination controller that copies its parent's
    // labels (the EndpointSlice controller copies a reflected Service's) makes objects that carry our
    // labels and an owner: not ours. Deleting them started an endless delete/recreate fight.
    const owned = !!target && (statusOnly || (isOwnedBy(target as KubeObject, origin) && !target.metadata.ownerReferences?.length));
    try {
      if (decision.decision === "apply") {
        if (target && !owned) return this.conflict(subject, target);
        // Our own write comes back as a watch event: answering it with a no-op apply would double the writes.
        if (target && isSubset(statusOnly ? { status: (decision.object as KubeObj).status } : decision.object, target)) {
          this.count("unchanged");
          return target.metadata.resourceVersion;
        }
        if (!target && !statusOnly) {
          // Create, never apply, when our cache sees nothing: an apply would take over an object someone
          // else just made. AlreadyExists means the cache lags; look again once it has caught up.
          const made = await targetClient.create(this.ref, decision.object as KubeObj, undefined, { fieldManager: this.deps.fieldManager }).catch((err) => {
            if (err instanceof KubeApiError && err.status === 409) throw new RetryAfterError(200, `${this.resource.kind} appeared in the destination before our cache saw it`);
            throw err;
          });
          this.count("apply");
          return made.metadata.resourceVersion;
        }
        // The cached resourceVersion is a precondition: if the object changed hands meanwhile, the apply fails.
        const body = { ...(decision.object as KubeObj) };
        if (target && !statusOnly) body.metadata = { ...body.metadata, resourceVersion: target.metadata.resourceVersion };
        const written = await targetClient.apply(this.ref, body, { fieldManager: this.deps.fieldManager, force: true, subresource: statusOnly ? "status" : undefined })
          .catch((err) => {
            if (err instanceof KubeApiError && err.status === 409) throw new RetryAfterError(200, `${this.resource.kind} changed in the destination; re-reading`);
            throw err;
          });
        this.count("apply");
        return written.metadata.resourceVersion;
      } else if (decision.decision === "delete") {
        // Never delete what reflection did not create; with no local object there is no conflict to report.
        if (!target || statusOnly || !owned) return this.count("skip");
        await targetClient.delete(this.ref, target.metadata.name!, target.metadata.namespace, { uid: target.metadata.uid });
      } else if (/conflict/i.test(decision.reason) && target && subject) {
        return this.conflict(subject, target);
      }
      this.count(decision.decision);
    } catch (err) {
      if (err instanceof RetryAfterError) throw err;
      if (err instanceof KubeApiError && err.conflict && decision.decision === "delete") return; // replaced meanwhile: the informer brings the new one
      this.countError("api");
      if (subject && err instanceof KubeApiError) {
        this.deps.events.warning(subject, "ReflectionFailed", `${direction} ${decision.decision} of ${this.resource.kind} failed: ${err.message}`);
      }
      throw err;
    }
  }

  private conflict(subject: KubeObj | null, target: KubeObj) {
    const where = target.metadata.namespace ? `${target.metadata.namespace}/${target.metadata.name}` : target.metadata.name;
    const msg = `${this.resource.kind} ${where} already exists in the destination and was not created by liqo reflection; it is left untouched. Rename or delete it to let reflection proceed.`;
    if (subject) this.deps.events.warning(subject, "ReflectionConflict", msg);
    this.log.warn("conflict: destination object not owned by reflection", { key: where });
    return this.count("conflict");
  }

  private count(outcome: string): undefined {
    this.deps.metrics.reconciles.inc({ reflector: this.name, outcome });
    return undefined;
  }

  private countError(kind: string) {
    this.deps.metrics.errors.inc({ reflector: this.name, kind });
  }
}
