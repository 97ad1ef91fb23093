// The live memo's bookkeeping (docs/plugins.md "Live calls"): every live plugin run is recorded
// (each read with what it answered, and the answer), and a later call is answered by a recorded
// one whose reads replay equal on its objects, since a plugin is a pure function of what it
// read. Recorded calls are kept per context (a namespace pair), most recent first; one that keeps
// answering is replayed as generated code (replay-jit.ts), reading the cached objects through the
// view's tree when it can (views.ts), else their projections. The reads themselves, and the
// interpreted replay, belong to the instance that recorded them (instance.ts).
import { generateReplay, type Replay, type ReplayHelpers } from "./replay-jit.ts";
import type { LiveView } from "./views.ts";

/** Recorded calls kept per context: the distinct ways a plugin reads objects of one kind are few. */
const PER_CONTEXT = 8;
/** Contexts kept: they are per namespace pair, so few; past this the memo starts over. */
const CONTEXTS = 64;
/** Hits before a recorded call's replay is generated as code (replay-jit.ts). */
const JIT_AFTER_HITS = 8;

/**
 * A recorded call as the memo hands it out: its answer text, a slot the host keeps what it
 * made of it in, and its generated replay once there is one (`raw`: it reads the cached objects
 * themselves; the host may then try it first on the next call, before asking the memo).
 */
export interface MemoEntry { readonly text: string; answer: unknown; readonly replay: Replay | null; readonly raw: boolean }

interface Recorded extends MemoEntry {
  backward: boolean; state: number; log: unknown[]; view: LiveView;
  /** Replays that answered; the generated replay once there are JIT_AFTER_HITS (null: not yet, or not possible). */
  hits: number; replay: Replay | null;
  raw: boolean;
}

/** What the memo needs of the instance: the call's projections, and the interpreted replay of a log on them. */
export interface Replayer {
  projections(view: LiveView, source: unknown, target: unknown): unknown[];
  replay(log: unknown[], source: unknown, target: unknown): boolean;
}

export class LiveMemo {
  #lists = new Map<string, Recorded[]>();
  /** The list of the last context looked up (a list stays the same object while its context is kept). */
  #lastContext: string | null = null;
  #lastList: Recorded[] | undefined = undefined;

  constructor(private readonly helpers: ReplayHelpers, private readonly replayer: Replayer, private readonly jit = { replayJit: true, viewTrees: true }) {}

  /**
   * The recorded call whose reads replay equal on these objects, if any. `source` and `target`
   * are the cached objects (`target` null when the view does not show it).
   */
  find(backward: boolean, context: string, view: LiveView, source: unknown, target: unknown, state: number): MemoEntry | undefined {
    // Calls come in runs of one namespace pair: its list is kept at hand.
    let recorded = this.#lastList;
    if (context !== this.#lastContext) {
      recorded = this.#lists.get(context);
      if (recorded !== undefined) { this.#lastContext = context; this.#lastList = recorded; }
    }
    if (recorded === undefined) return undefined;
    for (let i = 0; i < recorded.length; i++) {
      const r = recorded[i]!;
      if (r.backward !== backward || r.state !== state || r.view !== view) continue;
      let same: boolean;
      if (r.replay !== null && r.raw) same = r.replay(source, target);
      else {
        const p = this.replayer.projections(view, source, target);
        same = r.replay !== null ? r.replay(p[0], p[1]) : this.replayer.replay(r.log, p[0], p[1]);
      }
      if (!same) continue;
      if (this.jit.replayJit && r.replay === null && ++r.hits === JIT_AFTER_HITS) {
        const raw = view.trees === null || !this.jit.viewTrees ? null : generateReplay(r.log, this.helpers, view.trees);
        r.raw = raw !== null;
        r.replay = raw ?? generateReplay(r.log, this.helpers);
      }
      if (i > 0) { recorded.splice(i, 1); recorded.unshift(r); }
      return r;
    }
    return undefined;
  }

  /** Keeps a run's reads and answer, most recent first. */
  record(context: string, backward: boolean, state: number, view: LiveView, log: unknown[], text: string): void {
    let list = this.#lists.get(context);
    if (list === undefined) {
      if (this.#lists.size >= CONTEXTS) { this.#lists.clear(); this.#lastContext = null; this.#lastList = undefined; }
      this.#lists.set(context, (list = []));
    }
    list.unshift({ backward, state, log, view, text, answer: undefined, hits: 0, replay: null, raw: false });
    if (list.length > PER_CONTEXT) list.pop();
  }
}
