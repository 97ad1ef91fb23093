// How loadPlugin (host.ts) runs a built-in: on the main thread, synchronously, over the live wire
// when the plugin has its exports (the JSON wire otherwise). A main-thread call cannot be
// interrupted, so the time budget is checked after the call, and only a run of slow calls
// quarantines: one slow call is as likely a GC pause or a loaded machine as the plugin's fault.
import type { Logger } from "../log.ts";
import type { CallFacts } from "./finish.ts";
import type { InstanceRunner, Payload } from "./instance.ts";

/** A plugin run's outcome: its answer text, or why it trapped. */
export type Out = { ok: string } | { trap: string };

/** One call as the host prepared it: the facts the checks read, what the plugin is shown, and its JSON. */
export interface Prepared {
  facts: CallFacts;
  /** The projections of the declared fields (target null when absent or not declared). */
  shown: { source: unknown; target: unknown };
  /** The JSON wire's input, and the memo's key (its texts null when neither needs them). */
  payload: Payload;
}

/** Built-in runs are timed one in this many (and every run after a slow one). */
const TIME_EVERY = 8;

/** Consecutive calls past the budget that quarantine a built-in (drop-ins are cut at the first). */
export const BUILTIN_OVERRUNS_TO_QUARANTINE = 5;

export interface MainThreadOptions {
  /** The plugin's name, for the log. */
  name: string;
  logger: Logger;
  clock: { now(): number };
  /** The abort message the plugin reported before trapping, if any (read once). */
  takeAbort(): string | null;
}

/** One call of the built-in, synchronously: its answer, or why it trapped or ran too long. */
export type RunOne = (fn: string, call: Prepared, budgetMs: number) => Out;

export function createMainThreadRunner(inst: InstanceRunner, live: boolean, o: MainThreadOptions): RunOne {
  let overruns = 0;
  let timing = 0;
  // A clock read costs ~45 ns, a tenth of a small plugin's run: one run in TIME_EVERY is
  // timed, and every run after a slow one, so a plugin that stays slow is still caught.
  const timed = (budget: number, run: () => string): Out => {
    const timedRun = overruns > 0 || timing++ % TIME_EVERY === 0;
    const started = timedRun ? o.clock.now() : 0;
    let text: string;
    try {
      text = run();
    } catch (err) {
      const trap = o.takeAbort() ?? (err as Error).message;
      void inst.recycle(); // a trapped instance's memory cannot be trusted; the handle is quarantined anyway
      return { trap };
    }
    if (!timedRun) return { ok: text };
    const took = o.clock.now() - started;
    if (took <= budget) {
      overruns = 0;
      return { ok: text };
    }
    overruns++;
    o.logger.warn("built-in reflector call ran past its budget", {
      plugin: o.name,
      tookMs: Math.round(took),
      budgetMs: budget,
      inARow: overruns,
    });
    if (overruns < BUILTIN_OVERRUNS_TO_QUARANTINE) return { ok: text };
    const last = `last took ${took.toFixed(1)} ms, budget ${budget} ms`;
    return { trap: `timeout: ${overruns} calls in a row past the budget (${last})` };
  };
  return (fn, c, budget) => {
    // A due recycle is started in the background and swapped in between calls; calls never
    // wait for it (the arena keeps memory flat meanwhile), so the hot path stays synchronous.
    if (inst.needsRecycle()) void inst.recycle();
    const p = c.payload;
    return timed(budget, () =>
      live
        ? inst.callLive(c.facts.direction === "backward", p.context, c.shown.source, c.shown.target, p.state)
        : inst.call(fn, p.context, p.source, p.target, p.state),
    );
  };
}
