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
import { finishPlan, planOfText, targetState, type CallFacts, type Plan } from "./finish.ts";
import { InstanceRunner, type HostBindings, type Payload, type RecyclePolicy } from "./instance.ts";
import { badShape, createLiveCalls, shapeOk, type Out } from "./live-calls.ts";
import { checkExports, checkManifest, readManifest } from "./manifest.ts";
import { DecisionMemo, foundStamp, type Dependency } from "./memo.ts";
import { contextJson, encodedObject, payloadJson } from "./payloads.ts";
import { WorkerRunner } from "./worker-runner.ts";

export type Trust = "builtin" | "dropin";

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
  /** Drop-ins: how long the worker may take to start the plugin and read its manifest (default max(5 s, 10 × budgetMs)). */
  startTimeoutMs?: number;
  /** Entries of the decision memo (memo.ts); 0 turns it off, so that every call runs the plugin. Default 8192. */
  memoEntries?: number;
  /** The hot path's optional layers, each on unless set false (tests/bench/reflection-layers.ts measures them). */
  hotPath?: Partial<HotPathLayers>;
}

/** The layers around a built-in's call that only save time; switched off, the call answers the same. */
export interface HotPathLayers {
  /** Decision memos: the live memo (recorded reads replayed, live-memo.ts) and the JSON wire's (memo.ts). */
  memo: boolean;
  /** Generated replays of recorded live calls (replay-jit.ts). */
  replayJit: boolean;
  /** Generated replays read the cached objects through view trees (views.ts), not projections. */
  viewTrees: boolean;
  /** Generated finishers of memo answers (finish-jit.ts). */
  finishJit: boolean;
  /** Generated edit lists (edits-jit.ts). */
  editsJit: boolean;
  /** The last generated replay and finisher tried before any other check (live-calls.ts). */
  quick: boolean;
  /** Answer texts planned once, the last answer's bytes decoded once. */
  caches: boolean;
}

export const allLayers = (on: boolean): HotPathLayers =>
  ({ memo: on, replayJit: on, viewTrees: on, finishJit: on, editsJit: on, quick: on, caches: on });

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



/** The memo's key for a call: the source object's name (memo.ts compares the payload itself). */
const memoKey = (f: CallFacts): string => f.source?.metadata?.name ?? "";


export async function loadPlugin(wasm: Uint8Array | ArrayBuffer, options: LoadOptions = {}): Promise<ReflectorPlugin> {
  const trust = options.trust ?? "dropin";
  const budgetMs = options.budgetMs ?? (trust === "builtin" ? 250 : 100);
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? performance;
  const translate = options.translateIp ?? identityTranslator;
  const layers: HotPathLayers = { ...allLayers(true), ...options.hotPath };
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
  const memo = options.memoEntries === 0 || !layers.memo ? null : new DecisionMemo(options.memoEntries);
  let memoHits = 0;
  // Named once the manifest is read (below); a drop-in's start function may log before that.
  let log = logger;

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

  // A drop-in's code runs only in its worker, from its start function on: one that loops while
  // starting or reporting its manifest is terminated there, never stalling this thread.
  let dropin: WorkerRunner | undefined;
  let read: { manifest: Manifest; name: string };
  if (trust === "dropin") {
    const label = options.label ?? "(unloaded)";
    checkExports(module, label);
    const startMs = options.startTimeoutMs ?? Math.max(5_000, budgetMs * 10);
    dropin = await WorkerRunner.create(bytes, bindings, { ...options, startTimeoutMs: startMs, label });
    try {
      const { abi, raw } = await dropin.manifest(label, startMs);
      read = checkManifest(module, abi, raw, label);
    } catch (err) {
      await dropin.close();
      throw err;
    }
  } else {
    read = await readManifest(module, options.label);
  }
  const { manifest, name } = read;
  log = logger.child({ plugin: name });

  let runner: Runner;
  // Built-ins with the live exports: their calls go through live-calls.ts (made below, once the checks exist).
  let liveParts: { inst: InstanceRunner; timed: (budget: number, run: () => string) => Out } | null = null;
  let liveSync: ReturnType<typeof createLiveCalls> | null = null;
  let overruns = 0;
  let timing = 0;
  // Main-thread plugins built with the live exports read the cached objects by handle.
  let live = false;
  if (trust === "builtin") {
    // Live calls are memoized by the runner itself, by replaying what the plugin read (instance.ts).
    const inst = await InstanceRunner.create(module, bindings, { ...options, memo: options.memoEntries !== 0 && layers.memo, layers });
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
    runner = dropin!;
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
    if ((!source && !target) || !shapeOk(source) || !shapeOk(target)) throw badShape(name, direction, source);
    const resource = resourceFor(source ?? target, direction);
    const fields = direction === "forward" ? resource.fields : resource.backwardFields;
    const origin = direction === "forward" ? ctx.localClusterId : ctx.remoteClusterId;
    const state = targetState(target, origin);
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
    if (liveSync !== null) {
      const call = liveSync;
      return items.map((it) => {
        try {
          return call(direction, it.source, it.target, it.ctx);
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
      const decision = finishPlan(plan, facts, layers.editsJit);
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
    if (!layers.caches) return planOfText(text);
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
      return finishPlan(plan as Plan, facts, layers.editsJit);
    } catch (err) {
      return err as PluginError;
    }
  };

  if (liveParts !== null) {
    const { inst, timed } = liveParts;
    liveSync = createLiveCalls({
      name, inst, resourceFor, planned, quarantine, layers,
      run: (call) => timed(budgetMs, call),
      trapped: (facts, out) => settle(facts, out) as PluginError,
      setCurrent: (facts) => { current = facts; rec = null; },
    });
  }

  /** Main-thread plugins only: the whole call is synchronous. */
  const oneSync = (direction: Direction, source: KubeObject | null, target: KubeObject | null, ctx: ReflectionContext): Decision => {
    if (!runner.runOne) throw new PluginError("invalid-input", name, "runs in a worker (trust: dropin); use forward/backward, which are asynchronous");
    if (state !== "ready") throw new PluginError(state, name, state === "closed" ? "was closed" : `is quarantined: ${quarantineReason}`);
    if (liveSync !== null) return liveSync(direction, source, target, ctx);
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
