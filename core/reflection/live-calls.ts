// A built-in's calls over the live wire (docs/plugins.md "Live calls"), as loadPlugin (host.ts)
// makes them for a plugin with the live exports: answered by the live memo when a recorded
// call's reads replay equal, else by running the plugin on projections of the objects, which
// it reads by handle. A memo answer is finished by generated code once it keeps being handed
// out (finish-jit.ts), and a call like the last one answered that way tries it before any other
// check. What it costs, and how that is measured: docs/reflection.md.
import type { Decision, Direction, KubeObject, ReflectionContext, Resource } from "./abi.ts";
import { PluginError } from "./errors.ts";
import { generateFinisher, type Finisher } from "./finish-jit.ts";
import { finishPlan, targetState, writesStatusOnly, type CallFacts, type Plan } from "./finish.ts";
import type { HotPathLayers } from "./host.ts";
import type { InstanceRunner } from "./instance.ts";
import { contextJson } from "./payloads.ts";
import type { Replay } from "./replay-jit.ts";
import { liveView, type LiveView } from "./views.ts";

/** A plugin run's outcome: its answer text, or why it trapped. */
export type Out = { ok: string } | { trap: string };

export const shapeOk = (o: KubeObject | null) => o === null || (typeof o === "object" && typeof o.metadata?.name === "string");

/** The error for objects a call cannot take (no metadata.name, or neither object). */
export const badShape = (plugin: string, direction: Direction, source: unknown) =>
  new PluginError("invalid-input", plugin, `${direction} needs objects with metadata.name (got ${JSON.stringify(source)?.slice(0, 80)}); pass null for an absent object`);

/** Uses of a recorded call's answer before it is finished by generated code (finish-jit.ts). */
const FINISH_JIT_AFTER = 4;

/** What the host keeps on a live memo entry (instance.ts MemoEntry.answer): the plan, and its finisher once generated. */
interface Kept { plan: Plan; uses: number; fin: Finisher | null }

/**
 * The last recorded call that answered with generated code on both sides (a raw replay and a
 * finisher), with what it was recorded for. A recorded call stays a true statement about the
 * plugin when the memo drops it, so it may answer after that.
 */
interface Quick {
  /** Unset (null replay) until a memo answer with generated code on both sides sets it. */
  direction: Direction; kind: string | undefined; apiVersion: string | undefined; ctx: ReflectionContext | null; st: number; origin: string;
  /** The view shows the target's content. */
  shows: boolean;
  /** What look-ups during the replay read the namespace pair from. */
  facts: CallFacts;
  replay: Replay | null; fin: Finisher | null;
}

export interface LiveDeps {
  name: string;
  inst: InstanceRunner;
  /** The plugin's resource for an object and direction (throws the plugin's error for others). */
  resourceFor(obj: KubeObject | null, direction: Direction): Resource;
  /** Runs the plugin under the host's time budget checks. */
  run(call: () => string): Out;
  /** The plan of an answer text (host.ts keeps recent ones). */
  planned(text: string): Plan;
  /** The error of a trapped run (the host quarantines the plugin). */
  trapped(facts: CallFacts, out: { trap: string }): PluginError;
  quarantine(err: PluginError): void;
  /** What host functions read as the call in progress (look-ups read its namespace pair); null after it. */
  setCurrent(facts: CallFacts | null): void;
  layers: HotPathLayers;
}

export function createLiveCalls(deps: LiveDeps): (direction: Direction, source: KubeObject | null, target: KubeObject | null, ctx: ReflectionContext) => Decision {
  const { name, inst, layers } = deps;
  // The call's facts: one object per handle, filled in for each call (nothing keeps it past the call).
  const facts: CallFacts = { plugin: name, direction: "forward", resource: null as unknown as Resource, source: null, target: null, ctx: null as unknown as ReflectionContext };
  // Set in place on every memo answer it can describe: the engine's pod status calls each bring a
  // new context object, and a new Quick per call would be garbage per call.
  const quick: Quick = {
    direction: "forward", kind: undefined, apiVersion: undefined, ctx: null, st: -1, origin: "", shows: false,
    facts: { plugin: name, direction: "forward", resource: null as unknown as Resource, source: null, target: null, ctx: null as unknown as ReflectionContext },
    replay: null, fin: null,
  };

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

  const finish = (plan: Plan): Decision => {
    try {
      return finishPlan(plan, facts, layers.editsJit);
    } catch (err) {
      if ((err as PluginError).quarantines) deps.quarantine(err as PluginError);
      throw err;
    }
  };

  /** The live memo's answer, finished (undefined: no recorded call replays equal, the plugin runs). */
  const hit = (backward: boolean, context: string, view: LiveView, source: KubeObject | null, shown: KubeObject | null, st: number): Decision | undefined => {
    const entry = inst.memoAnswer(backward, context, view, source, shown, st);
    if (entry === undefined) return undefined;
    let kept = entry.answer as Kept | undefined;
    if (kept === undefined) entry.answer = kept = { plan: deps.planned(entry.text), uses: 0, fin: null };
    if (kept.fin !== null && (source !== null || kept.plan.decision !== "apply")) {
      if (layers.quick && entry.raw && entry.replay !== null && source !== null) {
        const f = facts;
        const q = quick;
        q.direction = f.direction; q.kind = source.kind; q.apiVersion = source.apiVersion; q.ctx = f.ctx; q.st = st;
        q.origin = backward ? f.ctx.remoteClusterId : f.ctx.localClusterId; q.shows = view.targetFields !== undefined;
        q.facts.direction = f.direction; q.facts.resource = f.resource; q.facts.ctx = f.ctx;
        q.replay = entry.replay; q.fin = kept.fin;
      }
      try {
        return kept.fin(source!);
      } catch {
        // The object's shape does not fit the edits: finishPlan reports it.
      }
    } else if (layers.finishJit && kept.fin === null && ++kept.uses === FINISH_JIT_AFTER) kept.fin = finisherFor(kept.plan, facts, st);
    return finish(kept.plan);
  };

  /** Runs the plugin on projections of the objects, which it reads by handle. */
  const run = (backward: boolean, context: string, view: LiveView, source: KubeObject | null, shown: KubeObject | null, st: number): Decision => {
    // A due recycle is started in the background and swapped in between calls.
    if (inst.needsRecycle()) void inst.recycle();
    const out = deps.run(() => inst.callLive(backward, context, view, source, shown, st));
    if ("trap" in out) throw deps.trapped(facts, out);
    return finish(deps.planned(out.ok));
  };

  return (direction, source, target, ctx) => {
    // The last call answered by generated code, tried first when this call is like it: the same
    // kind, direction, context object and target state. The checks below would find the same
    // resource, view and context (they depend on nothing else).
    const q = quick;
    if (q.replay !== null && source !== null && ctx === q.ctx && direction === q.direction && source.kind === q.kind && source.apiVersion === q.apiVersion
      && typeof source.metadata?.name === "string" && shapeOk(target) && targetState(target, q.origin) === q.st) {
      deps.setCurrent(q.facts);
      try {
        if (q.replay(source, q.shows ? target : null)) {
          inst.memoHits++;
          return q.fin!(source);
        }
      } catch {
        // A finisher that does not fit this object: the full path below reports it.
      } finally {
        deps.setCurrent(null);
      }
    }
    if ((!source && !target) || !shapeOk(source) || !shapeOk(target)) throw badShape(name, direction, source);
    const resource = deps.resourceFor(source ?? target, direction);
    const backward = direction === "backward";
    const view = viewFor(resource, backward);
    const st = targetState(target, backward ? ctx.remoteClusterId : ctx.localClusterId);
    const context = contextJson(ctx);
    // The target's content only when declared; its ownership always (the state).
    const shown = target === null || view.targetFields === undefined ? null : target;
    const f = facts;
    f.direction = direction; f.resource = resource; f.source = source; f.target = target; f.ctx = ctx;
    deps.setCurrent(f);
    try {
      return hit(backward, context, view, source, shown, st) ?? run(backward, context, view, source, shown, st);
    } finally {
      deps.setCurrent(null);
    }
  };
}
