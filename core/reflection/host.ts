// The plugin host: one async factory, loadPlugin(wasm, options), returning a handle with the
// plugin's manifest, forward/backward transforms, quarantine state and close().
//
// Trust decides where a plugin runs. Built-ins run on the main thread (a call costs a few
// µs; they are our code and reviewed). Drop-ins run in a worker: a main-thread wasm call
// cannot be interrupted, so only a worker can be terminated when a call loops past its
// budget. Workers cost a message round trip per call, so the engine batches (forwardBatch).
//
// One call, whatever the plugin: prepare (checks, the projections of the declared fields and
// their JSON) → the decision memo (memo.ts) → run the plugin (live wire on the main thread, JSON
// wire in a worker) → answerToDecision (finish.ts: the answer checked and turned into a Decision).
import type { Logger } from "../log.ts";
import { silentLogger } from "../log.ts";
import {
  type CacheLookup,
  type Decision,
  type Direction,
  type IpTranslator,
  type KubeObject,
  type Manifest,
  type ReflectionContext,
  type Resource,
  apiVersionOf,
  identityTranslator,
} from "./abi.ts";
import { PluginError, objectKey } from "./errors.ts";
import { type CallFacts, type Plan, finishPlan, planOfText, targetState } from "./finish.ts";
import { type HostBindings, InstanceRunner, type Payload, type RecyclePolicy } from "./instance.ts";
import { type Out, type Prepared, createMainThreadRunner } from "./main-runner.ts";
import { checkExports, checkManifest, readManifest } from "./manifest.ts";
import { DecisionMemo, type Dependency, foundStamp } from "./memo.ts";
import { project } from "./objects.ts";
import { WorkerRunner } from "./worker-runner.ts";

export type Trust = "builtin" | "dropin";

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
  /**
   * Entries of the decision memo (memo.ts); 0 turns it off, so that every call runs the plugin.
   * Default: 8192 for drop-ins (a hit saves a worker round trip), 0 for built-ins (their run costs
   * a few µs; on the rig the memo kept memory and CPU and answered no new object: docs/reflection.md).
   */
  memoEntries?: number;
}

export interface CallItem {
  source: KubeObject | null;
  target: KubeObject | null;
  ctx: ReflectionContext;
}

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
export interface PluginStats {
  calls: number;
  recycles: number;
  memoryBytes: number;
  memoHits: number;
}

interface Runner {
  /** `setCurrent(i)` is called before call i runs, so host functions see that call's context. */
  run(fn: string, calls: Prepared[], budgetMs: number, setCurrent: (i: number) => void): Promise<Out[]>;
  /** One call, synchronously (main thread only). */
  runOne?(fn: string, call: Prepared, budgetMs: number): Out;
  stats(): { calls: number; recycles: number; memoryBytes: number };
  close(): Promise<void>;
}

/** A drop-in batch cut at its budget runs once more, on a fresh worker, with this many times the budget. */
export const DROPIN_RETRY_BUDGET_FACTOR = 10;

const shapeOk = (o: KubeObject | null) => o === null || (typeof o === "object" && typeof o.metadata?.name === "string");

/** The memo's key for a call: the source object's name (memo.ts compares the payload itself). */
const memoKey = (f: CallFacts): string => f.source?.metadata?.name ?? "";

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
    throw new PluginError(
      "invalid-manifest",
      options.label ?? "(unloaded)",
      `is not a valid WebAssembly module: ${(err as Error).message}`,
      { cause: err },
    );
  }
  let current: CallFacts | null = null;
  let lastAbort: string | null = null;
  // What the call in progress asked the host (memo.ts); a call that logged is not memoized.
  type CallRecord = { deps: Dependency[]; logged: boolean };
  let rec: CallRecord | null = null;
  const memoizable = (r: CallRecord | undefined): Dependency[] | null => (r && !r.logged ? r.deps : null);
  const memoEntries = options.memoEntries ?? (trust === "builtin" ? 0 : 8192);
  const memo = memoEntries === 0 ? null : new DecisionMemo(memoEntries);
  let memoHits = 0;
  // Named once the manifest is read (below); a drop-in's start function may log before that.
  let log = logger;

  const bindings: HostBindings = {
    log: (level, message) => {
      if (rec) rec.logged = true;
      const fields = { object: objectKey(current?.source ?? current?.target ?? null) };
      (level >= 3 ? log.error : level === 2 ? log.warn : level === 1 ? log.info : log.debug)(message, fields);
    },
    abort: (message) => {
      lastAbort = message;
    },
    translateIp: (ip) => {
      const out = translate(ip, current?.direction ?? "forward");
      rec?.deps.push({ fn: "translateIp", ip, out });
      return out;
    },
    identityIp: translate === identityTranslator,
    lookup: (reqJson) => {
      const found = lookupRecorded(reqJson);
      return found ? JSON.stringify(found) : null;
    },
    lookupObject: (reqJson) => lookupRecorded(reqJson),
  };

  /** The call in progress looks an object up; the memo records what it found. */
  function lookupRecorded(reqJson: string): KubeObject | null {
    const found = lookupFor(reqJson, current);
    rec?.deps.push({ fn: "lookup", request: reqJson, found: foundStamp(found) });
    return found;
  }

  function lookupFor(reqJson: string, facts: CallFacts | null): KubeObject | null {
    const req = JSON.parse(reqJson);
    const c = facts?.ctx;
    const allowed = req.cluster === "local" ? c?.localNamespace : c?.remoteNamespace;
    // Read-only and confined to the call's namespace pair (or cluster-scoped objects).
    if (!options.lookup || (req.namespace !== "" && req.namespace !== allowed)) return null;
    return options.lookup(req);
  }

  /** A memoized answer for this call, if an equal earlier call's host-function answers still hold. */
  const fromMemo = (fn: string, p: Prepared): Plan | undefined => {
    if (!memo) return undefined;
    return memo.get(fn, memoKey(p.facts), p.payload, (d) =>
      d.fn === "lookup"
        ? foundStamp(lookupFor(d.request, p.facts)) === d.found
        : translate(d.ip, p.facts.direction) === d.out,
    ) as Plan | undefined;
  };

  // A drop-in's code runs only in its worker, from its start function on: one that loops while
  // starting or reporting its manifest is terminated there, never stalling this thread.
  let dropin: WorkerRunner | undefined;
  let read: { manifest: Manifest; name: string };
  const startMs = options.startTimeoutMs ?? Math.max(5_000, budgetMs * 10);
  if (trust === "dropin") {
    const label = options.label ?? "(unloaded)";
    checkExports(module, label);
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
  // Main-thread plugins built with the live exports read the projections by handle (set below).
  let live = false;
  if (trust === "builtin") {
    const inst = await InstanceRunner.create(module, bindings, options);
    live = inst.hasExport("liqo_forward_live") && inst.hasExport("liqo_backward_live") && options.live !== false;
    const takeAbort = () => {
      const message = lastAbort;
      lastAbort = null;
      return message;
    };
    const runOne = createMainThreadRunner(inst, live, { name, logger, clock, takeAbort });
    runner = {
      async run(fn, calls, budget, setCurrent) {
        return calls.map((c, i) => {
          setCurrent(i);
          return runOne(fn, c, budget);
        });
      },
      runOne,
      stats: () => ({ calls: inst.calls, recycles: inst.recycles, memoryBytes: inst.memoryBytes() }),
      close: () => inst.close(),
    };
  } else {
    let worker = dropin!;
    const label = options.label ?? name;
    runner = {
      async run(fn, calls, budget, setCurrent) {
        const payloads = calls.map((c) => c.payload);
        const outs = await worker.run(fn, payloads, budget, setCurrent);
        if (worker.dead === null) return outs;
        // Its worker was cut at the budget. A loaded node can stall a thread that long, so the batch
        // runs once more on a fresh worker with DROPIN_RETRY_BUDGET_FACTOR × the budget before the
        // plugin is quarantined: one that loops is caught all the same.
        const first = worker.dead;
        log.warn("drop-in plugin ran past its time budget; once more on a fresh worker", { budgetMs: budget });
        worker = await WorkerRunner.create(bytes, bindings, { ...options, startTimeoutMs: startMs, label });
        const again = await worker.run(fn, payloads, budget * DROPIN_RETRY_BUDGET_FACTOR, setCurrent);
        if (worker.dead === null) return again;
        return again.map(() => ({ trap: `timeout: ${first}; again on a fresh worker: ${worker.dead}` }));
      },
      stats: () => worker.stats(),
      close: () => worker.close(),
    };
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

  const resourceFor = (obj: KubeObject | null, direction: Direction): Resource => {
    const r = manifest.resources.find((x) => x.kind === obj?.kind && apiVersionOf(x) === obj?.apiVersion);
    if (r && (r.direction === "both" || r.direction === direction)) return r;
    const key = objectKey(obj) ?? "(none)";
    if (!r) {
      const declared = manifest.resources.map((x) => `${apiVersionOf(x)}/${x.kind}`).join(", ");
      throw new PluginError(
        "invalid-input",
        name,
        `does not reflect ${obj?.apiVersion}/${obj?.kind} (object ${key}); it declares ${declared}`,
        { object: key },
      );
    }
    throw new PluginError("invalid-input", name, `has no ${direction} transform for ${r.kind} (object ${key})`, {
      object: key,
    });
  };

  const prepare = (
    direction: Direction,
    source: KubeObject | null,
    target: KubeObject | null,
    ctx: ReflectionContext,
  ): Prepared => {
    if ((!source && !target) || !shapeOk(source) || !shapeOk(target)) {
      const got = JSON.stringify(source)?.slice(0, 80);
      throw new PluginError(
        "invalid-input",
        name,
        `${direction} needs objects with metadata.name (got ${got}); pass null for an absent object`,
      );
    }
    const resource = resourceFor(source ?? target, direction);
    const fields = direction === "forward" ? resource.fields : resource.backwardFields;
    const origin = direction === "forward" ? ctx.localClusterId : ctx.remoteClusterId;
    // The target's content only when declared; its ownership always (the state: guards need it).
    const shown = {
      source: project(source, fields),
      target: target === null || !resource.targetFields ? null : project(target, resource.targetFields),
    };
    // The JSON is what the JSON wire sends and what the memo compares; a live call without a memo needs none.
    const json = memo !== null || !live;
    const payload: Payload = {
      context: JSON.stringify(ctx),
      source: source === null || !json ? null : JSON.stringify(shown.source),
      target: shown.target === null || !json ? null : JSON.stringify(shown.target),
      state: targetState(target, origin),
    };
    return { facts: { plugin: name, direction, resource, source, target, ctx }, shown, payload };
  };

  /** A plan (a fresh answer or a memoized one) finished against this call's objects: the rules are checked every time. */
  const finish = (plan: Plan, facts: CallFacts): Decision | PluginError => {
    try {
      return finishPlan(plan, facts);
    } catch (err) {
      if ((err as PluginError).quarantines) quarantine(err as PluginError);
      return err as PluginError;
    }
  };

  /**
   * A runner's answer to a Decision, or the error (quarantining when it is the plugin's fault).
   * `deps` (the call's host-function answers, null when not memoizable) stores a good answer.
   */
  const answerToDecision = (fn: string, c: Prepared, out: Out, deps: Dependency[] | null): Decision | PluginError => {
    const facts = c.facts;
    if ("trap" in out) {
      const key = objectKey(facts.source) ?? objectKey(facts.target);
      const timeout = out.trap.startsWith("timeout");
      const what = timeout ? "ran past its time budget" : "trapped";
      const e = new PluginError(timeout ? "timeout" : "trap", name, `${what} on ${key}: ${out.trap}`, { object: key });
      quarantine(e);
      return e;
    }
    const plan = planOfText(out.ok);
    const res = finish(plan, facts);
    // The object's own problem (the plugin's "error" answer) is as pure as a decision.
    const pure = !(res instanceof PluginError) || res.code === "invalid-input";
    if (deps && pure) memo?.set(fn, memoKey(facts), c.payload, plan, deps);
    return res;
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
    const fn = direction === "forward" ? "liqo_forward" : "liqo_backward";
    const results: Array<Decision | PluginError | Prepared> = items.map((it) => {
      try {
        const c = prepare(direction, it.source, it.target, it.ctx);
        const hit = fromMemo(fn, c);
        if (hit === undefined) return c;
        memoHits++;
        return finish(hit, c.facts);
      } catch (err) {
        return err as PluginError;
      }
    });
    const toRun = results.filter((r): r is Prepared => !(r instanceof PluginError) && "payload" in r);
    // Host-function answers per call; a worker reports a batch's host calls without saying which
    // call made them, so only its calls that made none (or a batch of one) are memoized.
    const recorded: CallRecord[] = [];
    let outs: Out[] = [];
    try {
      const setCurrent = (idx: number) => {
        current = toRun[idx]?.facts ?? null;
        rec = recorded[idx] = { deps: [], logged: false };
      };
      outs = toRun.length ? await runner.run(fn, toRun, budgetMs, setCurrent) : [];
    } catch (err) {
      const e = err instanceof PluginError ? err : new PluginError("trap", name, String(err), { cause: err });
      quarantine(e);
      throw e;
    } finally {
      current = null;
      rec = null;
    }
    const depsOf = (idx: number): Dependency[] | null => {
      if (recorded.length === toRun.length) return memoizable(recorded[idx]);
      return recorded.every((r) => !r.logged && r.deps.length === 0) ? [] : null;
    };
    let i = 0;
    return results.map((r) => {
      if (r instanceof PluginError || !("payload" in r)) return r;
      const idx = i++;
      return answerToDecision(fn, r, outs[idx]!, depsOf(idx));
    });
  };

  /** Main-thread plugins only: the whole call is synchronous. */
  const oneSync = (
    direction: Direction,
    source: KubeObject | null,
    target: KubeObject | null,
    ctx: ReflectionContext,
  ): Decision => {
    if (!runner.runOne) {
      throw new PluginError(
        "invalid-input",
        name,
        "runs in a worker (trust: dropin); use forward/backward, which are asynchronous",
      );
    }
    if (state !== "ready") {
      throw new PluginError(state, name, state === "closed" ? "was closed" : `is quarantined: ${quarantineReason}`);
    }
    const c = prepare(direction, source, target, ctx);
    const fn = direction === "forward" ? "liqo_forward" : "liqo_backward";
    const hit = fromMemo(fn, c);
    let res: Decision | PluginError;
    if (hit !== undefined) {
      memoHits++;
      res = finish(hit, c.facts);
    } else {
      current = c.facts;
      const mine: CallRecord = { deps: [], logged: false };
      rec = mine;
      let out: Out;
      try {
        out = runner.runOne(fn, c, budgetMs);
      } finally {
        current = null;
        rec = null;
      }
      res = answerToDecision(fn, c, out, memoizable(mine));
    }
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
    get state() {
      return state;
    },
    get quarantineReason() {
      return quarantineReason;
    },
    forward: (local, remote, ctx) => one("forward", { source: local, target: remote, ctx }),
    backward: (remote, local, ctx) => one("backward", { source: remote, target: local, ctx }),
    forwardBatch: (items) => callMany("forward", items),
    forwardSync: (local, remote, ctx) => oneSync("forward", local, remote, ctx),
    backwardSync: (remote, local, ctx) => oneSync("backward", remote, local, ctx),
    stats: () => ({ ...runner.stats(), memoHits }),
    async close() {
      if (state === "closed") return;
      state = "closed";
      log = silentLogger;
      await runner.close();
    },
  };
}
