// One reflector: a plugin's declared resource, reflected for every namespace pair the engine runs.
// Informers on both sides only enqueue keys; a worker reads both caches, asks the plugin, then
// applies (server-side, our field manager), deletes (UID precondition) or skips, and records an
// Event when a user should know. Keys are `<local namespace>/<name>` (just `<name>` for
// cluster-scoped kinds): the remote copy keeps the local object's name.
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../../kube/errors.ts";
import { createInformer, type Informer } from "../../kube/informer.ts";
import { keyOf, objectKey, splitKey, type KubeObject as KubeObj, type ResourceRef } from "../../kube/resources.ts";
import { createWorkQueue, type WorkQueue } from "../../kube/workqueue.ts";
import type { Logger } from "../../log.ts";
import type { Decision, KubeObject, ReflectionContext, Resource } from "../abi.ts";
import { PluginError } from "../errors.ts";
import { isOwnedBy, writesStatusOnly } from "../finish.ts";
import type { ReflectorPlugin } from "../host.ts";
import type { LocalLookup } from "../policy.ts";
import type { EventRecorder } from "../../kube/events.ts";
import { convergence, isEqual, type Convergence } from "./ownership.ts";
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
  /** The reflection policy: a local object it does not admit counts as absent (its copy goes). */
  admits?: (kind: string, local: KubeObj, lookup: LocalLookup) => boolean;
  /** Reads the local caches of every reflector, for what admits follows (an EndpointSlice its Service). */
  lookupLocal: LocalLookup;
  /** A local object of this reflector's kind was added, changed or deleted. */
  localChanged?: (kind: string, local: KubeObj) => void;
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
   * Per key, the resourceVersions (source|target) at which the target was last seen to EQUAL the
   * plugin's answer (write() checks it against managedFields; containment is not enough). Our own
   * write comes back as a watch event; when neither side moved since, the plugin would answer the
   * same and the target still equals it, so the call and the comparison are skipped. Only for
   * plugins whose answer depends on nothing but the two objects and the pair's fixed context, in
   * one direction.
   */
  private readonly converged = new Map<string, string>();
  private readonly usesConvergedStamps: boolean;
  /** Bumped when the context changes; part of every converged stamp. */
  private generation = 0;
  /** Per key, the uid of an object this reflector created and its cache has not shown yet (createByApply). */
  private readonly createdHere = new Map<string, string>();

  constructor(
    readonly plugin: ReflectorPlugin,
    readonly resource: Resource,
    readonly ref: ResourceRef,
    private readonly deps: ReflectorDeps,
  ) {
    this.name = `${plugin.manifest.name}/${resource.kind}`;
    this.log = deps.logger.child({ reflector: this.name });
    // lookup reads other objects and translateIp may be remapped by the network fabric later: an
    // answer that uses either can change while both objects stay the same.
    this.usesConvergedStamps = resource.direction !== "both" && plugin.manifest.hostFunctions.every((f) => f === "log");
    this.queue = createWorkQueue({
      name: this.name,
      workers: deps.workers,
      logger: this.log,
      baseDelayMs: 50,
      maxDelayMs: 60_000,
      handler: (key) => this.handle(key),
      observe: (_k, _o, ms) => deps.metrics.latency.observe({ reflector: this.name }, ms / 1000),
    });
    this.queue.start();
  }

  get namespaced(): boolean {
    return this.resource.namespaced !== false;
  }
  /** An object's key in a cache of `namespace` (cluster-scoped: its name); queue keys use the local namespace. */
  private cacheKey(namespace: string, name: string): string {
    return keyOf(this.namespaced ? namespace : undefined, name);
  }
  get queueDepth(): number {
    return this.queue.depth;
  }
  get pairCount(): number {
    return this.pairs.size;
  }
  get queueStats() {
    return this.queue.stats;
  }

  /** Starts reflecting this kind for a pair; cluster-scoped kinds share one pair-less set of informers. */
  async addPair(pair: NamespacePair): Promise<void> {
    const id = this.namespaced ? pair.localNamespace : "";
    if (this.stopped || this.pairs.has(id)) return;
    const mk = (client: KubeClient, namespace?: string) =>
      createInformer<KubeObj>({ client, resource: this.ref, namespace, logger: this.log, resyncMs: 10 * 60_000 });
    const entry: PairInformers = {
      pair,
      local: mk(this.deps.local, this.namespaced ? pair.localNamespace : undefined),
      remote: mk(this.deps.remote, this.namespaced ? pair.remoteNamespace : undefined),
    };
    const enqueue = (obj: KubeObj) => this.queue.add(this.cacheKey(pair.localNamespace, obj.metadata.name!));
    for (const inf of [entry.local, entry.remote])
      inf.on({ add: enqueue, update: (_o, n) => enqueue(n), delete: enqueue });
    const changed = this.deps.localChanged;
    if (changed) {
      const kind = this.resource.kind;
      entry.local.on({
        add: (o) => changed(kind, o),
        update: (_o, n) => changed(kind, n),
        delete: (o) => changed(kind, o),
      });
    }
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
    this.converged.clear(); // the pair may come back with another context
    this.createdHere.clear();
    await Promise.all([entry.local.stop(), entry.remote.stop()]);
  }

  /**
   * A local object for the policy's look-ups; throws RetryAfterError while that namespace's local
   * cache is still listing (an object not listed yet must not look absent, or a follower's copy
   * would be deleted), undefined when this reflector does not run the namespace.
   */
  lookupLocal(namespace: string, name: string): KubeObj | undefined {
    const entry = this.pairs.get(this.namespaced ? namespace : "");
    if (!entry) return undefined;
    if (!entry.local.synced)
      throw new RetryAfterError(100, `the local ${this.resource.kind} cache of ${namespace} is still listing`);
    return entry.local.get(this.cacheKey(namespace, name));
  }

  /** Queues the local objects of a namespace whose labels include these (a Service's EndpointSlices). */
  requeueLabelled(localNamespace: string, labels: Record<string, string>): void {
    const entry = this.pairs.get(this.namespaced ? localNamespace : "");
    if (!entry) return;
    const want = Object.entries(labels);
    for (const obj of entry.local.list()) {
      const have = obj.metadata.labels ?? {};
      if (want.every(([k, v]) => have[k] === v)) this.queue.add(this.cacheKey(localNamespace, obj.metadata.name!));
    }
  }

  /** A read-only view of this reflector's caches, for the plugin host's lookup function. */
  lookup(cluster: "local" | "remote", namespace: string, name: string): KubeObj | undefined {
    for (const entry of this.pairs.values()) {
      const ns = cluster === "local" ? entry.pair.localNamespace : entry.pair.remoteNamespace;
      if (this.namespaced && ns !== namespace) continue;
      return entry[cluster].get(this.cacheKey(namespace, name));
    }
    return undefined;
  }

  /**
   * Queues every local object again, so each one gets the Event of a quarantine that happened
   * meanwhile; `contextChanged` when the context changed, so no answer is taken as still standing.
   */
  requeueLocal(o: { contextChanged?: boolean } = {}): void {
    if (o.contextChanged) {
      this.converged.clear();
      this.generation++; // an answer still in flight was made under the old context: not converged
    }
    for (const entry of this.pairs.values()) {
      for (const obj of entry.local.list())
        this.queue.add(this.cacheKey(entry.pair.localNamespace, obj.metadata.name!));
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
    const { namespace: localNs = "", name } = splitKey(key);
    const entry = this.pairs.get(localNs);
    if (!entry) return;
    // Decide only once both caches have listed: with just the remote side listed, a local object
    // looks absent, so its copy would be deleted, or a plugin failure blamed on no local object
    // (a quarantine then had nothing to put its Event on).
    if (!entry.local.synced || !entry.remote.synced)
      throw new RetryAfterError(100, `caches of namespace ${entry.pair.localNamespace} are still listing`);
    const { pair } = entry;
    const seen = entry.local.get(this.cacheKey(pair.localNamespace, name)) ?? null;
    const local =
      seen && this.deps.admits && !this.deps.admits(this.resource.kind, seen, this.deps.lookupLocal) ? null : seen;
    const remote = entry.remote.get(this.cacheKey(pair.remoteNamespace, name)) ?? null;
    if (this.plugin.state === "quarantined") {
      // However the plugin got quarantined (this call, another one, the host itself), the user
      // sees why their object is not reflected; the recorder keeps it to one Event per object.
      return this.reportQuarantine(local, this.plugin.quarantineReason ?? "quarantined");
    }
    const ctx = this.deps.contextFor(pair);
    const dir = this.resource.direction;
    // Done once the cache shows the object, or once there is nothing left to create it from.
    if (this.createdHere.size && (dir === "backward" ? local || !remote : remote || !local))
      this.createdHere.delete(key);
    if (this.usesConvergedStamps) {
      const [source, target] = dir === "forward" ? [local, remote] : [remote, local];
      const gen = this.generation;
      const stamp = `${gen}|${source?.metadata.resourceVersion ?? ""}|${target?.metadata.resourceVersion ?? ""}`;
      if (source && this.converged.get(key) === stamp) return this.count("unchanged");
      this.converged.delete(key);
      const after = await this.step(key, dir as "forward" | "backward", source, target, ctx);
      if (source && after) this.converged.set(key, `${gen}|${source.metadata.resourceVersion ?? ""}|${after}`);
      return;
    }
    if (dir === "forward" || dir === "both") await this.step(key, "forward", local, remote, ctx);
    if (dir === "backward" || dir === "both") await this.step(key, "backward", remote, local, ctx);
  }

  /** The engine quarantines the plugin (once); the object gets its Event (the recorder keeps one per object). */
  private reportQuarantine(subject: KubeObj | null | undefined, reason: string): void {
    this.deps.onQuarantine(this, reason);
    if (subject)
      this.deps.events.warning(
        subject,
        "ReflectionPluginQuarantined",
        `${this.resource.kind} not reflected: ${reason}`,
      );
  }

  /**
   * source → target: forward writes the remote cluster, backward the local one. Returns the
   * target's resourceVersion when the target now equals what the plugin answered (written or already so).
   */
  private async step(
    key: string,
    direction: "forward" | "backward",
    source: KubeObj | null,
    target: KubeObj | null,
    ctx: ReflectionContext,
  ): Promise<string | undefined> {
    if (!source && !target) return;
    const forward = direction === "forward";
    const targetClient = forward ? this.deps.remote : this.deps.local;
    const origin = forward ? ctx.localClusterId : ctx.remoteClusterId;
    // Events go on the local object only: that is what the user owns and describes.
    const subject = forward ? source : target;
    let decision: Decision;
    const started = performance.now();
    try {
      const [s, t] = [source as KubeObject | null, target as KubeObject | null];
      // A built-in answers synchronously: no promise, and the metric times the call alone.
      if (this.plugin.trust === "builtin")
        decision = forward ? this.plugin.forwardSync(s, t, ctx) : this.plugin.backwardSync(s, t, ctx);
      else decision = forward ? await this.plugin.forward(s, t, ctx) : await this.plugin.backward(s, t, ctx);
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
    const owned =
      !!target && (statusOnly || (isOwnedBy(target as KubeObject, origin) && !target.metadata.ownerReferences?.length));
    try {
      if (decision.decision === "apply") {
        if (target && !owned) return this.conflict(subject, target);
        return await this.write(key, targetClient, decision.object as KubeObj, target, statusOnly);
      } else if (decision.decision === "delete") {
        // Never delete what reflection did not create; with no local object there is no conflict to report.
        if (!target || statusOnly || !owned) return this.count("skip");
        await targetClient.delete(this.ref, target.metadata.name!, target.metadata.namespace, {
          uid: target.metadata.uid,
        });
      } else if (/conflict/i.test(decision.reason) && target && subject) {
        return this.conflict(subject, target);
      }
      this.count(decision.decision);
    } catch (err) {
      if (err instanceof RetryAfterError) throw err;
      if (err instanceof KubeApiError && err.conflict && decision.decision === "delete") return; // replaced meanwhile: the informer brings the new one
      this.countError("api");
      if (subject && err instanceof KubeApiError) {
        this.deps.events.warning(
          subject,
          "ReflectionFailed",
          `${direction} ${decision.decision} of ${this.resource.kind} failed: ${err.message}`,
        );
      }
      throw err;
    }
  }

  /**
   * Makes the destination EQUAL the answer (ownership.ts), and returns the resourceVersion at
   * which it does (undefined if it could not). Nothing is sent when the destination already
   * equals the answer: our own write coming back as a watch event costs no request. Otherwise a
   * server-side apply under the one field manager, which also removes what it applied before and
   * the answer dropped; then, for fields another manager added that the answer does not have
   * (a hand edit, our own manager's old create), a JSON patch that removes exactly those. A full
   * replace (PUT) would do it in one request but would hand every field to an Update entry,
   * which later applies never remove, and would drop what the destination's own controllers set.
   */
  private async write(
    key: string,
    client: KubeClient,
    answer: KubeObj,
    target: KubeObj | null,
    statusOnly: boolean,
  ): Promise<string | undefined> {
    const fieldManager = this.deps.fieldManager;
    const scope = statusOnly ? "status" : "main";
    if (!target && !statusOnly) {
      const made = await this.createByApply(client, answer, key);
      this.count("apply");
      return this.convergedAt(made, convergence(answer, made, fieldManager));
    }
    let current = target;
    let plan: Convergence = current ? convergence(answer, current, fieldManager, scope) : { apply: true, removals: [] };
    if (current && isEqual(plan)) {
      this.count("unchanged");
      return current.metadata.resourceVersion;
    }
    if (plan.apply) {
      // The cached resourceVersion is a precondition: if the object changed hands meanwhile, the apply fails.
      const body = { ...answer };
      if (current && !statusOnly)
        body.metadata = { ...body.metadata, resourceVersion: current.metadata.resourceVersion };
      current = await client
        .apply(this.ref, body, { fieldManager, force: true, subresource: statusOnly ? "status" : undefined })
        .catch((err) => {
          if (err instanceof KubeApiError && err.status === 409)
            throw new RetryAfterError(200, `${this.resource.kind} changed in the destination; re-reading`);
          throw err;
        });
      this.count("apply");
      plan = convergence(answer, current, fieldManager, scope);
    }
    if (plan.removals.length && current) {
      const { name, namespace, resourceVersion } = current.metadata;
      // Replacing the resourceVersion with itself is the precondition: another version fails with a Conflict.
      const ops = [
        { op: "replace" as const, path: "/metadata/resourceVersion", value: resourceVersion },
        ...plan.removals.map((path) => ({ op: "remove" as const, path })),
      ];
      current = await client.jsonPatch(this.ref, name!, namespace, ops, { fieldManager }).catch((err) => {
        if (err instanceof KubeApiError && (err.status === 409 || err.status === 422))
          throw new RetryAfterError(200, `${this.resource.kind} changed in the destination; re-reading`);
        throw err;
      });
      this.count("repair");
      plan = convergence(answer, current, fieldManager, scope);
    }
    return current ? this.convergedAt(current, plan) : undefined;
  }

  /**
   * Creates by server-side apply, so our field manager owns every field from the start (a POST
   * hands them to an Update entry, which later applies never remove). An apply also changes an
   * existing object, and we must never take over one someone else made under this name while
   * our cache did not show it yet. The apply is not forced, so a field they set otherwise is a
   * Conflict and nothing changes; if it still found an object (200, not 201 Created), it only
   * added fields or set equal values, and applying nothing under our manager takes exactly those
   * away again. Either way the key is read again once the cache has caught up. Our own create
   * also answers 200 when the key is handled again before its watch event arrived: createdHere
   * tells the two apart by uid.
   */
  private async createByApply(client: KubeClient, answer: KubeObj, key: string): Promise<KubeObj> {
    const fieldManager = this.deps.fieldManager;
    const appeared = () =>
      new RetryAfterError(200, `${this.resource.kind} appeared in the destination before our cache saw it`);
    const { object, created } = await client
      .applyReporting(this.ref, answer, { fieldManager, force: false })
      .catch((err) => {
        if (err instanceof KubeApiError && err.status === 409) throw appeared();
        throw err;
      });
    if (created) {
      this.createdHere.set(key, object.metadata.uid!);
      return object;
    }
    // Ours after all: our own create, whose watch event the cache has not seen yet.
    if (this.createdHere.get(key) === object.metadata.uid) return object;
    const { name, namespace } = answer.metadata;
    await client.apply(
      this.ref,
      { apiVersion: answer.apiVersion, kind: answer.kind, metadata: { name, namespace } },
      { fieldManager, force: false },
    );
    throw appeared();
  }

  private convergedAt(obj: KubeObj, plan: Convergence): string | undefined {
    if (isEqual(plan)) return obj.metadata.resourceVersion;
    this.log.warn("the destination still differs from the answer after writing it", {
      key: objectKey(obj),
      removals: plan.removals,
    });
    return undefined;
  }

  private conflict(subject: KubeObj | null, target: KubeObj) {
    const where = objectKey(target);
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
