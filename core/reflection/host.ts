// The plugin host: one async factory, loadPlugin(wasm, options), returning a handle with the
// plugin's manifest, forward/backward transforms, quarantine state and close().
//
// Trust decides where a plugin runs. Built-ins run on the main thread (a call costs a few
// µs; they are our code and reviewed). Drop-ins run in a worker: a main-thread wasm call
// cannot be interrupted, so only a worker can be terminated when a call loops past its
// budget. Workers cost a message round trip per call, so the engine batches (forwardBatch).
import type { Logger } from "../log.ts";
import { silentLogger } from "../log.ts";
import {
  HOST_FUNCTIONS, apiVersionOf, identityTranslator,
  type CacheLookup, type Decision, type Direction, type IpTranslator, type KubeObject, type Manifest, type ReflectionContext, type Resource,
} from "./abi.ts";
import { PluginError, objectKey } from "./errors.ts";
import { finishPlan, isOwnedBy, planOfText, writesStatusOnly, type CallFacts, type Plan } from "./finish.ts";
import { generateFinisher, type Finisher } from "./finish-jit.ts";
import { InstanceRunner, type HostBindings, type Payload, type RecyclePolicy } from "./instance.ts";
import type { Replay } from "./replay-jit.ts";
import { liveView, type LiveView } from "./views.ts";
import { readManifest } from "./manifest.ts";
import { DecisionMemo, foundStamp, type Dependency } from "./memo.ts";
import { contextJson, encodedObject, payloadJson } from "./payloads.ts";
import { WorkerRunner } from "./worker-runner.ts";

export type Trust = "builtin" | "dropin";

/** Uses of a recorded call's answer before it is finished by generated code (finish-jit.ts). */
const FINISH_JIT_AFTER = 4;

/** What the host keeps on a live memo entry (instance.ts MemoEntry.answer): the plan, and its finisher once generated. */
interface Kept { plan: Plan; uses: number; fin: Finisher | null }

/** Built-in runs are timed one in this many (and every run after a slow one). */
const TIME_EVERY = 8;

/** Consecutive calls past the budget that quarantine a built-in (drop-ins are cut at the first). */
export const BUILTIN_OVERRUNS_TO_QUARANTINE = 5;

export interface LoadOptions extends RecyclePolicy {
  /** How to call the plugin in errors before its manifest is read (its file name, say). */
  label?: string;
  /** builtin: main thread; dropin: a worker with an enforced time budget. Default dropin. */
  trust?: Trust;
  /** Per-call time budget in ms: default 100 for drop-ins (enforced), 250 for built-ins (checked after the call). */
  budgetMs?: number;
  translateIp?: IpTranslator;
  lookup?: CacheLookup;
  logger?: Logger;
  clock?: { now(): number };
  /** Told once when the plugin is quarantined, so the engine can emit an Event and a metric. */
  onQuarantine?: (reason: string, error: PluginError) => void;
  /** Built-ins: read objects by handle when the plugin supports it (default); false forces the JSON wire. */
  live?: boolean;
  /** Entries of the decision memo (memo.ts); 0 turns it off, so that every call runs the plugin. Default 8192. */
  memoEntries?: number;
}

export interface CallItem { source: KubeObject | null; target: KubeObject | null; ctx: ReflectionContext }

export interface ReflectorPlugin {
  readonly manifest: Manifest;
  readonly trust: Trust;
  readonly state: "ready" | "quarantined" | "closed";
  readonly quarantineReason: string | undefined;
  /** local → remote: what the remote copy of `local` must be (remote = current remote copy or null). */
  forward(local: KubeObject | null, remote: KubeObject | null, ctx: ReflectionContext): Promise<Decision>;
  /** remote → local status (Pods) or object (PersistentVolumes). */
  backward(remote: KubeObject | null, local: KubeObject | null, ctx: ReflectionContext): Promise<Decision>;
  /** Built-ins (main thread) only: the same calls without a promise, for the engine's hot loop. */
  forwardSync(local: KubeObject | null, remote: KubeObject | null, ctx: ReflectionContext): Decision;
  backwardSync(remote: KubeObject | null, local: KubeObject | null, ctx: ReflectionContext): Decision;
  /** Many objects in one call (one worker round trip); each entry is a Decision or the error for that object. */
  forwardBatch(items: CallItem[]): Promise<Array<Decision | PluginError>>;
  stats(): PluginStats;
  close(): Promise<void>;
}

/** calls: plugin runs; memoHits: calls answered from the decision memo without running the plugin. */
export interface PluginStats { calls: number; recycles: number; memoryBytes: number; memoHits: number }

interface Runner {
  /** `setCurrent(i)` is called before payload i runs, so host functions see that call's context. */
  run(fn: string, payloads: Payload[], budgetMs: number, setCurrent: (i: number) => void): Promise<Out[]>;
  /** The single-object fast path (main thread only): synchronous, no batch arrays. */
  runOne?(fn: string, payload: Payload, budgetMs: number): Out;
  stats(): { calls: number; recycles: number; memoryBytes: number; memoHits?: number };
  close(): Promise<void>;
}

type Out = { ok: string } | { trap: string };


/** The memo's key for a call: the source object's name (memo.ts compares the payload itself). */
const memoKey = (f: CallFacts): string => f.source?.metadata?.name ?? "";

const shapeOk = (o: KubeObject | null) => o === null || (typeof o === "object" && typeof o.metadata?.name === "string");

export async function loadPlugin(wasm: Uint8Array | ArrayBuffer, options: LoadOptions = {}): Promise<ReflectorPlugin> {
  const trust = options.trust ?? "dropin";
  const budgetMs = options.budgetMs ?? (trust === "builtin" ? 250 : 100);
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? performance;
  const translate = options.translateIp ?? identityTranslator;
  const bytes = wasm instanceof Uint8Array ? wasm : new Uint8Array(wasm);
  let module: WebAssembly.Module;
  try {
    module = await WebAssembly.compile(bytes as Uint8Array<ArrayBuffer>);
  } catch (err) {
    throw new PluginError("invalid-manifest", options.label ?? "(unloaded)", `is not a valid WebAssembly module: ${(err as Error).message}`, { cause: err });
  }
  let current: CallFacts | null = null;
  let lastAbort: string | null = null;
  // What the call in progress asked the host (memo.ts); a call that logged is not memoized.
  type CallRecord = { deps: Dependency[]; logged: boolean };
  // Null during live calls, whose memo (instance.ts) records the reads itself.
  let rec: CallRecord | null = null;
  const memoizable = (r: CallRecord | undefined): Dependency[] | null => (r && !r.logged ? r.deps : null);
  const memo = options.memoEntries === 0 ? null : new DecisionMemo(options.memoEntries);
  let memoHits = 0;
  const { manifest, name } = await readManifest(module, options.label);
  let log = logger.child({ plugin: name });

  const bindings: HostBindings = {
    log: (level, message) => {
      if (rec) rec.logged = true;
      const fields = { object: objectKey(current?.source ?? current?.target ?? null) };
      (level >= 3 ? log.error : level === 2 ? log.warn : level === 1 ? log.info : log.debug)(message, fields);
    },
    abort: (message) => { lastAbort = message; },
    translateIp: (ip) => {
      const out = translate(ip, current?.direction ?? "forward");
      rec?.deps.push({ fn: "translateIp", ip, out });
      return out;
    },
    identityIp: translate === identityTranslator,
    lookup: (reqJson) => {
      const found = lookupFor(reqJson, current);
      rec?.deps.push({ fn: "lookup", request: reqJson, found: foundStamp(found) });
      return found ? encodedObject(found) : null;
    },
    lookupObject: (reqJson) => lookupFor(reqJson, current),
  };

  function lookupFor(reqJson: string, facts: CallFacts | null): KubeObject | null {
    const req = JSON.parse(reqJson);
    const c = facts?.ctx;
    const allowed = req.cluster === "local" ? c?.localNamespace : c?.remoteNamespace;
    // Read-only and confined to the call's namespace pair (or cluster-scoped objects).
    if (!options.lookup || (req.namespace !== "" && req.namespace !== allowed)) return null;
    return options.lookup(req);
  }

  /** A memoized answer for this call, if an equal earlier call's host-function answers still hold. */
  const fromMemo = (fn: string, p: { facts: CallFacts; payload: Payload }): unknown => {
    if (!memo) return undefined;
    return memo.get(fn, memoKey(p.facts), p.payload, (d) => d.fn === "lookup"
      ? foundStamp(lookupFor(d.request, p.facts)) === d.found
      : translate(d.ip, p.facts.direction) === d.out);
  };

  let runner: Runner;
  // Built-ins with the live exports: their calls go through liveSync (below).
  let liveParts: { inst: InstanceRunner; timed: (budget: number, run: () => string) => Out } | null = null;
  let overruns = 0;
  let timing = 0;
  // Main-thread plugins built with the live exports read the cached objects by handle.
  let live = false;
  if (trust === "builtin") {
    // Live calls are memoized by the runner itself, by replaying what the plugin read (instance.ts).
    const inst = await InstanceRunner.create(module, bindings, { ...options, memo: options.memoEntries !== 0 });
    live = inst.hasExport("liqo_forward_live") && inst.hasExport("liqo_backward_live") && options.live !== false;
    // A clock read costs ~45 ns, a tenth of a small plugin's run: one run in TIME_EVERY is
    // timed, and every run after a slow one, so a plugin that stays slow is still caught.
    const timed = (budget: number, run: () => string): Out => {
      const timedRun = overruns > 0 || timing++ % TIME_EVERY === 0;
      const started = timedRun ? clock.now() : 0;
      let text: string;
      try {
        text = run();
      } catch (err) {
        const trap = lastAbort ?? (err as Error).message;
        lastAbort = null;
        void inst.recycle(); // a trapped instance's memory cannot be trusted; the handle is quarantined anyway
        return { trap };
      }
      if (!timedRun) return { ok: text };
      const took = clock.now() - started;
      // A main-thread call cannot be interrupted; a slow one is caught after the fact. One slow call
      // is as likely a GC pause or a loaded machine as the plugin's fault: only a run of
      // BUILTIN_OVERRUNS_TO_QUARANTINE slow calls in a row quarantines a built-in.
      if (took <= budget) {
        overruns = 0;
        return { ok: text };
      }
      overruns++;
      logger.warn("built-in reflector call ran past its budget", { plugin: name, tookMs: Math.round(took), budgetMs: budget, inARow: overruns });
      return overruns >= BUILTIN_OVERRUNS_TO_QUARANTINE
        ? { trap: `timeout: ${overruns} calls in a row past the budget (last took ${took.toFixed(1)} ms, budget ${budget} ms)` }
        : { ok: text };
    };
    const runOne = (fn: string, p: Payload, budget: number): Out => timed(budget, () => inst.call(fn, p.context, p.source, p.target, p.state));
    if (live) liveParts = { inst, timed };
    // A due recycle is started in the background and swapped in between calls; calls never
    // wait for it (the arena keeps memory flat meanwhile), so the hot path stays synchronous.
    const runOneRecycling = (fn: string, p: Payload, budget: number): Out => {
      if (inst.needsRecycle()) void inst.recycle();
      return runOne(fn, p, budget);
    };
    runner = {
      async run(fn, payloads, budget, setCurrent) {
        const out: Out[] = [];
        for (const [idx, p] of payloads.entries()) {
          setCurrent(idx);
          out.push(runOneRecycling(fn, p, budget));
        }
        return out;
      },
      runOne: (fn, p, budget) => runOneRecycling(fn, p, budget),
      stats: () => ({ calls: inst.calls, recycles: inst.recycles, memoryBytes: inst.memoryBytes(), memoHits: inst.memoHits }),
      close: () => inst.close(),
    };
  } else {
    runner = await WorkerRunner.create(bytes, bindings, options);
  }

  let state: ReflectorPlugin["state"] = "ready";
  let quarantineReason: string | undefined;
  const quarantine = (err: PluginError) => {
    if (state !== "ready") return;
    state = "quarantined";
    quarantineReason = err.message;
    log.error("plugin quarantined", { err });
    options.onQuarantine?.(err.message, err);
  };

  // apiVersion strings built once, not per call; the error message (and its object key) only on failure.
  const declared = manifest.resources.map((r) => ({ r, kind: r.kind, apiVersion: apiVersionOf(r) }));
  // Calls come in runs of one kind: the last match is tried first.
  let lastDeclared = declared[0]!;
  const resourceFor = (obj: KubeObject | null, direction: Direction): Resource => {
    let r: Resource | undefined;
    const kind = obj?.kind;
    const apiVersion = obj?.apiVersion;
    if (lastDeclared.kind === kind && lastDeclared.apiVersion === apiVersion) r = lastDeclared.r;
    else for (let i = 0; i < declared.length; i++) { const d = declared[i]!; if (d.kind === kind && d.apiVersion === apiVersion) { r = d.r; lastDeclared = d; break; } }
    if (r !== undefined && (r.direction === "both" || r.direction === direction)) return r;
    const key = objectKey(obj) ?? "(none)";
    if (!r) throw new PluginError("invalid-input", name, `does not reflect ${obj?.apiVersion}/${obj?.kind} (object ${key}); it declares ${manifest.resources.map((x) => `${apiVersionOf(x)}/${x.kind}`).join(", ")}`, { object: key });
    if (r.direction !== "both" && r.direction !== direction) throw new PluginError("invalid-input", name, `has no ${direction} transform for ${r.kind} (object ${key})`, { object: key });
    return r;
  };

  const prepare = (direction: Direction, source: KubeObject | null, target: KubeObject | null, ctx: ReflectionContext): { facts: CallFacts; payload: Payload } => {
    if ((!source && !target) || !shapeOk(source) || !shapeOk(target)) {
      throw new PluginError("invalid-input", name, `${direction} needs objects with metadata.name (got ${JSON.stringify(source)?.slice(0, 80)}); pass null for an absent object`);
    }
    const resource = resourceFor(source ?? target, direction);
    const fields = direction === "forward" ? resource.fields : resource.backwardFields;
    const origin = direction === "forward" ? ctx.localClusterId : ctx.remoteClusterId;
    const state = target === null ? 0 : isOwnedBy(target, origin) ? 1 : 2;
    const payload: Payload = {
      context: contextJson(ctx),
      source: source === null ? null : payloadJson(source, fields),
      // The target's content only when declared; its ownership always (guards need it).
      target: target === null || !resource.targetFields ? null : payloadJson(target, resource.targetFields),
      state,
    };
    return { facts: { plugin: name, direction, resource, source, target, ctx }, payload };
  };

  // One batch in flight at a time: host functions answered during a batch read `current`.
  let inFlight: Promise<unknown> = Promise.resolve();
  const callMany = (direction: Direction, items: CallItem[]): Promise<Array<Decision | PluginError>> => {
    const next = inFlight.then(() => callManyNow(direction, items));
    inFlight = next.catch(() => {});
    return next;
  };

  const callManyNow = async (direction: Direction, items: CallItem[]): Promise<Array<Decision | PluginError>> => {
    if (state === "closed") throw new PluginError("closed", name, "was closed");
    if (state === "quarantined") throw new PluginError("quarantined", name, `is quarantined: ${quarantineReason}`);
    if (liveParts !== null) {
      return items.map((it) => {
        try {
          return liveSync(direction, it.source, it.target, it.ctx);
        } catch (err) {
          if (err instanceof PluginError) return err;
          throw err;
        }
      });
    }
    const fn = direction === "forward" ? "liqo_forward" : "liqo_backward";
    const prepared = items.map((it) => {
      try {
        const p = prepare(direction, it.source, it.target, it.ctx);
        const hit = fromMemo(fn, p);
        return hit === undefined ? p : settleMemo(p.facts, hit);
      } catch (err) {
        return err as PluginError;
      }
    });
    const live = prepared.filter((p): p is { facts: CallFacts; payload: Payload } => typeof p === "object" && p !== null && "payload" in p);
    let outs: Out[] = [];
    // Host-function answers per item; a worker reports a batch's host calls without saying which
    // item made them, so only its calls that made none (or a batch of one) are memoized.
    const recorded: CallRecord[] = [];
    let i = 0;
    try {
      const setCurrent = (idx: number) => { current = live[idx]?.facts ?? null; rec = recorded[idx] = { deps: [], logged: false }; };
      outs = live.length ? await runner.run(fn, live.map((p) => p.payload), budgetMs, setCurrent) : [];
    } catch (err) {
      const e = err instanceof PluginError ? err : new PluginError("trap", name, String(err), { cause: err });
      quarantine(e);
      throw e;
    } finally {
      current = null;
    }
    const batchDeps = (idx: number): Dependency[] | null => {
      if (recorded.length === live.length) return memoizable(recorded[idx]);
      return recorded.every((r) => !r.logged && r.deps.length === 0) ? [] : null;
    };
    return prepared.map((p) => {
      if (!(typeof p === "object" && p !== null && "payload" in p)) return p;
      const idx = i++;
      return settle(p.facts, outs[idx]!, { fn, payload: p.payload, deps: batchDeps(idx) });
    });
  };

  /**
   * A raw runner answer to a Decision, or the error (quarantining when it is the plugin's fault).
   * `remember` (the call's host-function answers, null when not memoizable) stores a good answer.
   */
  const settle = (facts: CallFacts, out: Out, remember?: { fn: string; payload: Payload; deps: Dependency[] | null }): Decision | PluginError => {
    if ("trap" in out) {
      const key = objectKey(facts.source) ?? objectKey(facts.target);
      const timeout = out.trap.startsWith("timeout");
      const e = new PluginError(timeout ? "timeout" : "trap", name, `${timeout ? "ran past its time budget" : "trapped"} on ${key}: ${out.trap}`, { object: key });
      quarantine(e);
      return e;
    }
    const plan = planned(out.ok);
    try {
      const decision = finishPlan(plan, facts);
      if (remember?.deps) memo?.set(remember.fn, memoKey(facts), remember.payload, plan, remember.deps);
      return decision;
    } catch (err) {
      if ((err as PluginError).quarantines) quarantine(err as PluginError);
      // The object's own problem (the plugin's "error" answer) is as pure as a decision.
      else if (remember?.deps && (err as PluginError).code === "invalid-input") memo?.set(remember.fn, memoKey(facts), remember.payload, plan, remember.deps);
      return err as PluginError;
    }
  };

  // Many objects get the very same answer text (every ConfigMap: apply, no edits; every Service
  // without node ports: the same removals), and finishing never changes a plan: short texts
  // seen lately are planned once.
  const answers = new Map<string, Plan>();
  let lastText = "";
  let lastPlan: Plan | null = null;
  const planned = (text: string): Plan => {
    // Runs of objects of one kind mostly get the very answer of the call before: one string
    // compare instead of hashing the answer for the map.
    if (text === lastText && lastPlan !== null) return lastPlan;
    if (text.length > 512) return planOfText(text);
    let plan = answers.get(text);
    if (plan === undefined) {
      plan = planOfText(text);
      if (answers.size >= 256) answers.delete(answers.keys().next().value!);
      answers.set(text, plan);
    }
    lastText = text;
    lastPlan = plan;
    return plan;
  };

  /** A memoized answer (a plan, memo.ts) finished against this call's objects (the rules are checked again). */
  const settleMemo = (facts: CallFacts, plan: unknown): Decision | PluginError => {
    memoHits++;
    try {
      return finishPlan(plan as Plan, facts);
    } catch (err) {
      return err as PluginError;
    }
  };

  // The live call's facts: one object per handle, filled in for each call (nothing keeps it past the call).
  const liveFacts: CallFacts = { plugin: name, direction: "forward", resource: declared[0]!.r, source: null, target: null, ctx: null as unknown as ReflectionContext };
  // What each resource shows the plugin, per direction (views.ts), made once.
  const views = new Map<Resource, LiveView[]>();
  let lastViews: [Resource | null, LiveView[]] = [null, []];
  const viewFor = (resource: Resource, backward: boolean): LiveView => {
    if (lastViews[0] === resource) return lastViews[1][backward ? 1 : 0]!;
    let v = views.get(resource);
    if (v === undefined) {
      v = [liveView(resource.fields, resource.targetFields), liveView(resource.backwardFields, resource.targetFields)];
      views.set(resource, v);
    }
    lastViews = [resource, v];
    return v[backward ? 1 : 0]!;
  };

  /** The generated finisher of a plan for calls like `f` with target state `st`, or null (finishPlan finishes it). */
  const finisherFor = (plan: Plan, f: CallFacts, st: number): Finisher | null => {
    const statusOnly = writesStatusOnly(f);
    // An answer over a target the project does not own is refused by finishPlan, every time.
    if (st === 2 && plan.decision !== "skip" && !statusOnly) return null;
    const backward = f.direction === "backward";
    return generateFinisher(plan, {
      statusOnly,
      keepStatus: backward,
      namespace: f.resource.namespaced === false ? undefined : backward ? f.ctx.localNamespace : f.ctx.remoteNamespace,
      origin: backward ? f.ctx.remoteClusterId : f.ctx.localClusterId,
    });
  };

  /**
   * A built-in's call over the live wire: answered by the live memo when a recorded call's reads
   * replay equal (the plugin does not run, nothing is projected for a generated replay), else by
   * running the plugin on projections of the objects, which it reads by handle.
   */
  const liveSync = (direction: Direction, source: KubeObject | null, target: KubeObject | null, ctx: ReflectionContext): Decision => {
    // The last recorded call that answered with generated code, tried first when this call is
    // like it: the same kind, direction, context object and target state. The checks below
    // would find the same resource, view and context (they depend on nothing else).
    const q = quick;
    if (q !== null && source !== null && ctx === q.ctx && direction === q.direction && source.kind === q.kind && source.apiVersion === q.apiVersion
      && typeof source.metadata?.name === "string" && (target === null ? 0 : shapeOk(target) ? (isOwnedBy(target, q.origin) ? 1 : 2) : -1) === q.st) {
      current = q.facts;
      try {
        if (q.replay(source, q.shows ? target : null)) {
          liveParts!.inst.memoHits++;
          return q.fin(source);
        }
      } catch {
        // A finisher that does not fit this object: the full path below reports it.
      } finally {
        current = null;
      }
    }
    if ((!source && !target) || !shapeOk(source) || !shapeOk(target)) {
      throw new PluginError("invalid-input", name, `${direction} needs objects with metadata.name (got ${JSON.stringify(source)?.slice(0, 80)}); pass null for an absent object`);
    }
    const resource = resourceFor(source ?? target, direction);
    const backward = direction === "backward";
    const view = viewFor(resource, backward);
    const st = target === null ? 0 : isOwnedBy(target, backward ? ctx.remoteClusterId : ctx.localClusterId) ? 1 : 2;
    const context = contextJson(ctx);
    // The target's content only when declared; its ownership always (the state).
    const shown = target === null || view.targetFields === undefined ? null : target;
    const f = liveFacts;
    f.direction = direction; f.resource = resource; f.source = source; f.target = target; f.ctx = ctx;
    // Look-ups (replayed or made by the plugin) read the call's namespace pair from `current`.
    current = f;
    rec = null; // the live memo records the reads itself
    try {
      return liveHit(backward, context, view, source, shown, st) ?? liveRun(backward, context, view, source, shown, st);
    } finally {
      current = null;
    }
  };

  // The last recorded call that answered with generated code on both sides (a raw replay and a
  // finisher), with what it was recorded for: runs of one kind from one namespace pair try it
  // first (liveSync), before any other check. A recorded call stays a true statement about the
  // plugin when the memo drops it, so it may answer after that.
  interface Quick {
    direction: Direction; kind: string | undefined; apiVersion: string | undefined; ctx: ReflectionContext; st: number; origin: string;
    /** The view shows the target's content. */
    shows: boolean;
    /** What look-ups during the replay read the namespace pair from. */
    facts: CallFacts;
    replay: Replay; fin: Finisher;
  }
  let quick: Quick | null = null;

  /** The live memo's answer, finished (undefined: no recorded call replays equal, the plugin runs). */
  const liveHit = (backward: boolean, context: string, view: LiveView, source: KubeObject | null, shown: KubeObject | null, st: number): Decision | undefined => {
    const inst = liveParts!.inst;
    const hit = inst.memoAnswer(backward, context, view, source, shown, st);
    if (hit === undefined) return undefined;
    let kept = hit.answer as Kept | undefined;
    if (kept === undefined) hit.answer = kept = { plan: planned(hit.text), uses: 0, fin: null };
    if (kept.fin !== null && (source !== null || kept.plan.decision !== "apply")) {
      if (hit.raw && hit.replay !== null && source !== null) {
        const f = liveFacts;
        quick = {
          direction: f.direction, kind: source.kind, apiVersion: source.apiVersion, ctx: f.ctx, st, origin: backward ? f.ctx.remoteClusterId : f.ctx.localClusterId,
          shows: view.targetFields !== undefined, facts: { ...f, source: null, target: null }, replay: hit.replay, fin: kept.fin,
        };
      }
      try {
        return kept.fin(source!);
      } catch {
        // The object's shape does not fit the edits: finishPlan reports it.
      }
    } else if (kept.fin === null && ++kept.uses === FINISH_JIT_AFTER) kept.fin = finisherFor(kept.plan, liveFacts, st);
    return finishLive(kept.plan);
  };

  /** Runs the plugin on projections of the objects, which it reads by handle. */
  const liveRun = (backward: boolean, context: string, view: LiveView, source: KubeObject | null, shown: KubeObject | null, st: number): Decision => {
    const { inst, timed } = liveParts!;
    // A due recycle is started in the background and swapped in between calls.
    if (inst.needsRecycle()) void inst.recycle();
    const out = timed(budgetMs, () => inst.callLive(backward, context, view, source, shown, st));
    if ("trap" in out) throw settle(liveFacts, out);
    return finishLive(planned(out.ok));
  };

  const finishLive = (plan: Plan): Decision => {
    try {
      return finishPlan(plan, liveFacts);
    } catch (err) {
      if ((err as PluginError).quarantines) quarantine(err as PluginError);
      throw err;
    }
  };

  /** Main-thread plugins only: the whole call is synchronous. */
  const oneSync = (direction: Direction, source: KubeObject | null, target: KubeObject | null, ctx: ReflectionContext): Decision => {
    if (!runner.runOne) throw new PluginError("invalid-input", name, "runs in a worker (trust: dropin); use forward/backward, which are asynchronous");
    if (state !== "ready") throw new PluginError(state, name, state === "closed" ? "was closed" : `is quarantined: ${quarantineReason}`);
    if (liveParts !== null) return liveSync(direction, source, target, ctx);
    const p = prepare(direction, source, target, ctx);
    const fn = direction === "forward" ? "liqo_forward" : "liqo_backward";
    const hit = fromMemo(fn, p);
    if (hit !== undefined) {
      const res = settleMemo(p.facts, hit);
      if (res instanceof PluginError) throw res;
      return res;
    }
    current = p.facts;
    const mine: CallRecord = rec = { deps: [], logged: false };
    let out: Out;
    try {
      out = runner.runOne(fn, p.payload, budgetMs);
    } finally {
      current = null;
    }
    const res = settle(p.facts, out, { fn, payload: p.payload, deps: memoizable(mine) });
    if (res instanceof PluginError) throw res;
    return res;
  };

  const one = async (direction: Direction, item: CallItem): Promise<Decision> => {
    if (runner.runOne) return oneSync(direction, item.source, item.target, item.ctx);
    const [res] = await callMany(direction, [item]);
    if (res instanceof PluginError) throw res;
    return res!;
  };

  return {
    manifest,
    trust,
    get state() { return state; },
    get quarantineReason() { return quarantineReason; },
    forward: (local, remote, ctx) => one("forward", { source: local, target: remote, ctx }),
    backward: (remote, local, ctx) => one("backward", { source: remote, target: local, ctx }),
    forwardBatch: (items) => callMany("forward", items),
    forwardSync: (local, remote, ctx) => oneSync("forward", local, remote, ctx),
    backwardSync: (remote, local, ctx) => oneSync("backward", remote, local, ctx),
    stats: () => { const st = runner.stats(); return { ...st, memoHits: memoHits + (st.memoHits ?? 0) }; },
    async close() {
      if (state === "closed") return;
      state = "closed";
      log = silentLogger;
      await runner.close();
    },
  };
}

export { HOST_FUNCTIONS };
