// One live plugin instance and the fast call path of ABI v1: the payload is encoded once
// and copied in bulk into the plugin's exported memory (liqo_alloc), the answer is decoded
// straight out of it. No byte goes through Extism's 8-bytes-per-host-call input/output
// functions, which is what made the PDK path ~10x slower than plain TypeScript.
//
// Plugins are built with the SDK's arena runtime: allocation is a pointer increment and the
// heap is rewound when each call begins (liqo_begin), so memory stays flat by construction.
// The instance is still recycled (re-instantiated from the compiled module, fresh memory)
// every N calls or when memory passes a ceiling: a plugin built another way, or one that
// keeps state it should not, cannot grow without bound. That also sidesteps
// @extism/extism 1.0.3's per-call block leak (a plugin breaks after ~16k calls through
// plugin.call): no instance lives that long, and the hot path never uses plugin.call.
import createPlugin, { type Plugin } from "@extism/extism";
import { project } from "./objects.ts";
import { LiveMemo, type MemoEntry } from "./live-memo.ts";
import { replayReaders, type ReplayHelpers } from "./replay-jit.ts";
import type { LiveView } from "./views.ts";
import type { HotPathLayers } from "./host.ts";

export interface HostBindings {
  log(level: number, message: string): void;
  /** Direction is resolved by the caller from the call in progress. */
  translateIp(ip: string): string;
  /** True when translateIp is the identity: calls are answered 0 ("unchanged") without reading the address. */
  identityIp?: boolean;
  /** A JSON request in, a JSON object (text, or its UTF-8 bytes) or null out. */
  lookup(requestJson: string): string | Uint8Array | null;
  /** The same look-up for a live call: the cached object itself (read by handle, never serialized). */
  lookupObject?(requestJson: string): object | null;
  /** A plugin's abort message, reported just before it traps. */
  abort(message: string): void;
}

/** One call's input over the JSON wire as the host prepared it: JSON text (null for an absent object). */
export interface Payload { context: string; source: string | null; target: string | null; state: number }

export interface RecyclePolicy {
  /** Re-instantiate after this many calls (default 10,000). */
  recycleAfterCalls?: number;
  /** ...or once linear memory grows past this many bytes (default 32 MiB). */
  maxMemoryBytes?: number;
  /** Live calls: answer a call from a recorded one whose reads replay equal (default true). */
  memo?: boolean;
  /** Optional layers (host.ts HotPathLayers); all on by default. */
  layers?: HotPathLayers;
}

type Exports = {
  memory: WebAssembly.Memory;
  liqo_context(len: number): number;
  liqo_begin(len: number): number;
  liqo_alloc(len: number): number;
  liqo_output_len(): number;
  [fn: string]: unknown;
};

/** Codes of the packed answers of the live host calls (plugins/sdk/assembly/live.ts). */
const CODE_NULL = 1, CODE_FALSE = 2, CODE_TRUE = 3, CODE_NUMBER = 4, CODE_STRING = 5, CODE_ARRAY = 6, CODE_OBJECT = 7;

/** Reads a live call records for its memo (see #replay): [op, handle, argument, answer] each. */
const OP_GET = 1, OP_AT = 2, OP_LEN = 3, OP_EQ = 4, OP_TEXT = 5, OP_KEY = 6, OP_JSON = 7, OP_IP = 8, OP_LOOKUP = 9, OP_SCALAR = 10;
/** Bun's (and Node's) native Buffer decoder, which the typings do not declare. */
type Utf8Buffer = Buffer & { utf8Slice(start: number, end: number): string };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class InstanceRunner {
  #module: WebAssembly.Module;
  #bindings: HostBindings;
  #policy: { recycleAfterCalls: number; maxMemoryBytes: number };
  #cacheAnswers: boolean;
  #plugin: Plugin | null = null;
  #exports: Exports | null = null;
  #u8 = new Uint8Array(0);
  #u16 = new Uint16Array(0);
  /** The live call's values by handle (index); handle 0 is "none". */
  #vals: unknown[] = [undefined];
  /** Member names of live objects read by position (indexed once per handle). */
  #keysOf: Array<string[] | undefined> = [undefined];
  #handles = 1;
  /** The plugin's string literals by address: the data segment never changes, so each is decoded once. */
  #literals: string[] = [];
  /** liqo_forward_live and liqo_backward_live of the current instance. */
  #live: Array<(s: number, t: number, st: number) => number> = [];
  /** The last answer, bytes and text: a run of equal answers is decoded once. */
  #lastAnswer = Buffer.alloc(0);
  #lastAnswerText = "";
  /** The live call in progress's reads, while it can still be memoized (null: not recording). */
  #log: unknown[] | null = null;
  /** The projections of the call in progress (made once, when a replay or the plugin needs them). */
  #projFor: unknown[] = [null, null, null];
  #projected: unknown[] = [null, null];
  /** Recorded live calls (live-memo.ts); null when the policy turns the memo off. */
  #memo: LiveMemo | null;
  /** Live calls answered by replaying a recorded call instead of running the plugin. */
  memoHits = 0;
  /** A Buffer over the same memory: utf8Slice decodes an answer without a subarray object per call. */
  #buf = Buffer.alloc(0) as Utf8Buffer;
  /** A view starting where liqo_begin put the last payload: after the per-call rewind the
   *  payload lands at the same address every call, so the view is made once, not per call. */
  #inAt = -1;
  #inView = new Uint8Array(0);
  #callsOnInstance = 0;
  /** The context JSON this instance holds; re-sent only when it changes. */
  #context: string | null = null;
  /** Totals, for metrics and the memory-flatness proof. */
  calls = 0;
  recycles = 0;

  private constructor(module: WebAssembly.Module, bindings: HostBindings, policy: RecyclePolicy) {
    this.#module = module;
    this.#bindings = bindings;
    this.#replayHelpers = replayReaders(bindings);
    this.#memo = policy.memo === false ? null : new LiveMemo(this.#replayHelpers, {
      projections: (view, source, target) => this.#projections(view, source, target),
      replay: (log, source, target) => this.#replay(log, source, target),
    }, { replayJit: policy.layers?.replayJit ?? true, viewTrees: policy.layers?.viewTrees ?? true });
    this.#cacheAnswers = policy.layers?.caches ?? true;
    this.#policy = { recycleAfterCalls: policy.recycleAfterCalls ?? 10_000, maxMemoryBytes: policy.maxMemoryBytes ?? 32 * 1024 * 1024 };
  }

  static async create(module: WebAssembly.Module, bindings: HostBindings, policy: RecyclePolicy = {}): Promise<InstanceRunner> {
    const runner = new InstanceRunner(module, bindings, policy);
    await runner.recycle();
    runner.recycles = 0;
    return runner;
  }

  #view(): Uint8Array {
    // Growing a wasm memory detaches its old buffer, which empties every view of it: an
    // empty view is the cue to take a new one (memory.buffer itself is a slow getter).
    if (this.#u8.length === 0) {
      const memory = this.#exports!.memory.buffer;
      this.#u8 = new Uint8Array(memory);
      this.#u16 = new Uint16Array(memory);
      this.#buf = Buffer.from(memory) as Utf8Buffer;
      this.#inAt = -1;
    }
    return this.#u8;
  }

  #readString(ptr: number, len: number): string {
    this.#view();
    return this.#buf.utf8Slice(ptr, ptr + len);
  }

  /** Host-function arguments are mostly short ASCII (IP addresses): building the string by
   *  hand is cheaper than a TextDecoder call for a dozen bytes. */
  #readShort(ptr: number, len: number): string {
    const view = this.#view();
    if (len <= 40) {
      let s = "";
      for (let i = ptr, end = ptr + len; i < end; i++) {
        const c = view[i]!;
        if (c >= 0x80) return decoder.decode(view.subarray(ptr, ptr + len));
        s += String.fromCharCode(c);
      }
      return s;
    }
    return decoder.decode(view.subarray(ptr, ptr + len));
  }

  /** Writes a length-prefixed answer into plugin memory for a host function to return. */
  #answer(text: string | null): number {
    if (text === null) return 0;
    const n = text.length;
    let ascii = n <= 64;
    for (let i = 0; ascii && i < n; i++) if (text.charCodeAt(i) >= 0x80) ascii = false;
    if (ascii) {
      const ptr = this.#exports!.liqo_alloc(n + 4);
      const view = this.#view();
      view[ptr] = n & 0xff; view[ptr + 1] = (n >>> 8) & 0xff; view[ptr + 2] = 0; view[ptr + 3] = 0;
      for (let i = 0; i < n; i++) view[ptr + 4 + i] = text.charCodeAt(i);
      return ptr;
    }
    return this.#answerBytes(encoder.encode(text));
  }

  /** Same, for an answer already encoded (a cached look-up result). */
  #answerBytes(bytes: Uint8Array): number {
    const ptr = this.#exports!.liqo_alloc(bytes.length + 4);
    const view = this.#view();
    const n = bytes.length;
    view[ptr] = n & 0xff; view[ptr + 1] = (n >>> 8) & 0xff; view[ptr + 2] = (n >>> 16) & 0xff; view[ptr + 3] = (n >>> 24) & 0xff;
    view.set(bytes, ptr + 4);
    return ptr;
  }

  /** A value of the live call as its packed handle: (handle << 3) | kind code, 0 for undefined. */
  #pack(v: unknown): number {
    let code: number;
    switch (typeof v) {
      case "undefined": return 0;
      case "boolean": return v ? CODE_TRUE : CODE_FALSE;
      case "number": code = CODE_NUMBER; break;
      case "string": code = CODE_STRING; break;
      case "object":
        if (v === null) return CODE_NULL;
        code = Array.isArray(v) ? CODE_ARRAY : CODE_OBJECT;
        break;
      default: return CODE_NULL; // functions, symbols, bigints: not JSON, never in an API object
    }
    const h = this.#handles++;
    this.#vals[h] = v;
    this.#keysOf[h] = undefined;
    return (h << 3) | code;
  }

  /** An AssemblyScript string of the plugin (UTF-16, byte length in the header before it). */
  #plugString(ptr: number, fixed: number): string {
    // Indexed by address / 2 in a dense array (a far index would make it a slow sparse one).
    const slot = ptr >>> 1;
    if (fixed) {
      const hit = this.#literals[slot];
      if (hit !== undefined) return hit;
    }
    const u8 = this.#view();
    const bytes = (u8[ptr - 4]! | (u8[ptr - 3]! << 8) | (u8[ptr - 2]! << 16) | (u8[ptr - 1]! << 24)) >>> 0;
    // Keys and literals are short; a length past this is a plugin that passed no string.
    if (!(bytes <= 65536) || ptr + bytes > u8.length) throw new RangeError(`the plugin passed a string of ${bytes} bytes at ${ptr}: not an AssemblyScript string of its memory`);
    const start = ptr >>> 1;
    const end = start + bytes / 2;
    let s = "";
    for (let i = start; i < end; i++) s += String.fromCharCode(this.#u16[i]!);
    if (fixed) {
      // Kept as the engine's own copy of the name (a key from Object.keys): a string built
      // by concatenation is looked up in the engine's name table every time it is used as a key.
      s = Object.keys({ [s]: 0 })[0]!;
      const lits = this.#literals;
      while (lits.length <= slot) lits.push(undefined as unknown as string);
      lits[slot] = s;
    }
    return s;
  }

  // The reads of a live call, shared by the host calls and the memo's replay.
  #get(h: number, k: string): number {
    const v = this.#replayHelpers.member(this.#vals[h] as Record<string, unknown>, k);
    return v === undefined ? 0 : this.#pack(v);
  }

  #at(h: number, i: number): number {
    const o = this.#vals[h];
    if (Array.isArray(o)) return i >= 0 && i < o.length ? this.#pack(o[i]) : 0;
    const keys = this.#keys(h);
    return i >= 0 && i < keys.length ? this.#pack((o as Record<string, unknown>)[keys[i]!]) : 0;
  }

  #len(h: number): number {
    const o = this.#vals[h];
    return typeof o === "string" || Array.isArray(o) ? o.length : typeof o === "object" && o !== null ? this.#keys(h).length : 0;
  }

  #text(h: number): string { return this.#replayHelpers.text(this.#vals[h]); }
  #translated(h: number): string | null { return this.#replayHelpers.translated(this.#vals[h]); }
  #lookup(req: string): number {
    const found = this.#replayHelpers.lookup(req);
    return found === null ? 0 : this.#pack(found);
  }

  /** The reads the live host calls and both replays (interpreted, generated) share. */
  #replayHelpers: ReplayHelpers;

  /**
   * Replays a recorded live call's reads on new objects: true when every read answers as it
   * did then, so the plugin, a pure function of what it read, would answer the same. Handles
   * are numbered in the order values are handed out, so equal answers give equal numbers.
   */
  #replay(log: unknown[], source: unknown, target: unknown): boolean {
    this.#handles = 1;
    if ((this.#pack(source ?? undefined) & 7) !== log[0] || (this.#pack(target ?? undefined) & 7) !== log[1]) return false;
    const vals = this.#vals;
    for (let i = 2; i < log.length; i += 4) {
      const h = log[i + 1] as number;
      const res = log[i + 3];
      switch (log[i]) {
        case OP_GET: if ((this.#get(h, log[i + 2] as string) & 7) !== res) return false; break;
        case OP_AT: if ((this.#at(h, log[i + 2] as number) & 7) !== res) return false; break;
        case OP_LEN: if (this.#len(h) !== res) return false; break;
        case OP_EQ: if ((vals[h] === log[i + 2] ? 1 : 0) !== res) return false; break;
        case OP_TEXT: if (this.#text(h) !== res) return false; break;
        case OP_KEY: if ((this.#keys(h)[log[i + 2] as number] ?? "") !== res) return false; break;
        case OP_JSON: if ((JSON.stringify(vals[h]) ?? "null") !== res) return false; break;
        case OP_SCALAR: if (vals[h] !== res) return false; break;
        case OP_IP: {
          const out = this.#translated(h);
          if (out !== res) return false;
          if (out !== null) this.#pack(out);
          break;
        }
        case OP_LOOKUP: if ((this.#lookup(log[i + 2] as string) & 7) !== res) return false; break;
        default: return false;
      }
    }
    return true;
  }

  #keys(h: number): string[] {
    let keys = this.#keysOf[h];
    if (keys === undefined) this.#keysOf[h] = keys = Object.keys(this.#vals[h] as object);
    return keys;
  }

  /** Any text into plugin memory, length-prefixed (the live calls' text, key and json answers). */
  #answerText(text: string): number {
    if (text.length <= 64) return this.#answer(text);
    const ptr = this.#exports!.liqo_alloc(text.length * 3 + 4);
    const view = this.#view();
    const n = encoder.encodeInto(text, view.subarray(ptr + 4)).written;
    view[ptr] = n & 0xff; view[ptr + 1] = (n >>> 8) & 0xff; view[ptr + 2] = (n >>> 16) & 0xff; view[ptr + 3] = (n >>> 24) & 0xff;
    return ptr;
  }

  #functions() {
    const b = this.#bindings;
    const vals = this.#vals;
    // Extism passes its CallContext first; ABI v1 host functions only use plugin memory.
    return {
      "liqo:log": {
        log: (_: unknown, level: number, ptr: number, len: number) => { this.#log = null; b.log(level, this.#readString(ptr, len)); },
        abort: (_: unknown, ptr: number, len: number) => b.abort(this.#readString(ptr, len)),
      },
      "liqo:net": {
        // 0 means "unchanged" (docs/plugins.md): the plugin keeps the address it passed.
        translate_ip: (_: unknown, ptr: number, len: number) => {
          this.#log = null; // an address the plugin built itself: not a read the memo can replay
          if (b.identityIp) return 0;
          const ip = this.#readShort(ptr, len);
          const out = b.translateIp(ip);
          return out === ip ? 0 : this.#answer(out);
        },
        translate_ip_value: (_: unknown, h: number) => {
          const out = this.#translated(h);
          this.#log?.push(OP_IP, h, 0, out);
          return out === null ? 0 : this.#pack(out);
        },
      },
      "liqo:cache": {
        lookup: (_: unknown, ptr: number, len: number) => {
          this.#log = null;
          const found = b.lookup(this.#readString(ptr, len));
          return typeof found === "string" || found === null ? this.#answer(found) : this.#answerBytes(found);
        },
        lookup_value: (_: unknown, ptr: number, len: number) => {
          const req = this.#readString(ptr, len);
          const r = this.#lookup(req);
          this.#log?.push(OP_LOOKUP, 0, req, r & 7);
          return r;
        },
      },
      // Live calls: reads of the call's objects by handle (plugins/sdk/assembly/live.ts).
      "liqo:obj": {
        get: (_: unknown, h: number, key: number, fixed: number) => {
          const k = this.#plugString(key, fixed);
          const r = this.#get(h, k);
          this.#log?.push(OP_GET, h, k, r & 7);
          return r;
        },
        at: (_: unknown, h: number, i: number) => {
          const r = this.#at(h, i);
          this.#log?.push(OP_AT, h, i, r & 7);
          return r;
        },
        len: (_: unknown, h: number) => {
          const r = this.#len(h);
          this.#log?.push(OP_LEN, h, 0, r);
          return r;
        },
        eq: (_: unknown, h: number, s: number, fixed: number) => {
          const lit = this.#plugString(s, fixed);
          const r = vals[h] === lit ? 1 : 0;
          this.#log?.push(OP_EQ, h, lit, r);
          return r;
        },
        text: (_: unknown, h: number) => {
          const t = this.#text(h);
          this.#log?.push(OP_TEXT, h, 0, t);
          return this.#answerText(t);
        },
        key: (_: unknown, h: number, i: number) => {
          const k = this.#keys(h)[i] ?? "";
          this.#log?.push(OP_KEY, h, i, k);
          return this.#answerText(k);
        },
        json: (_: unknown, h: number) => {
          const v = vals[h];
          const j = JSON.stringify(v) ?? "null";
          // A scalar is recorded as itself (replayed by ===), a container as its JSON.
          if (typeof v === "object" && v !== null) this.#log?.push(OP_JSON, h, 0, j);
          else this.#log?.push(OP_SCALAR, h, 0, v);
          return this.#answerText(j);
        },
      },
      // Plugins built without the SDK's abort hook import AssemblyScript's default.
      env: { abort: () => b.abort("abort (plugin built without the SDK abort hook)") },
    };
  }

  needsRecycle(): boolean {
    return this.#callsOnInstance >= this.#policy.recycleAfterCalls
      // The view's length is the memory's (memory.buffer is a slow getter); a grown memory
      // detaches it (length 0) until the next call takes a new one, a call later.
      || this.#u8.length > this.#policy.maxMemoryBytes;
  }

  #recycling: Promise<void> | null = null;

  /** Replaces the instance with a fresh one from the compiled module; concurrent callers share one. */
  recycle(): Promise<void> {
    this.#recycling ??= this.#replace().finally(() => { this.#recycling = null; });
    return this.#recycling;
  }

  async #replace(): Promise<void> {
    const next = await createPlugin(this.#module, { useWasi: false, runInWorker: false, functions: this.#functions() });
    const instance = await next.getInstance();
    const old = this.#plugin;
    this.#plugin = next;
    this.#exports = instance.exports as unknown as Exports;
    const ex = this.#exports;
    this.#live = typeof ex.liqo_forward_live === "function" && typeof ex.liqo_backward_live === "function"
      ? [ex.liqo_forward_live as (s: number, t: number, st: number) => number, ex.liqo_backward_live as (s: number, t: number, st: number) => number]
      : [];
    this.#u8 = new Uint8Array(0);
    this.#callsOnInstance = 0;
    this.#context = null;
    this.recycles++;
    if (old) await old.close();
  }

  hasExport(fn: string): boolean {
    return typeof this.#exports?.[fn] === "function";
  }

  /** Calls a no-argument export returning an i32 (liqo_abi_version). */
  callNumber(fn: string): number {
    return (this.#exports![fn] as () => number)();
  }

  /** Calls an export that answers through the output buffer (liqo_manifest). */
  callNoInput(fn: string): string {
    const ptr = (this.#exports![fn] as () => number)();
    return this.#readString(ptr, this.#exports!.liqo_output_len());
  }

  /**
   * The hot path. The context is copied only when it changed since the last call; the
   * source and target JSON are encoded back to back and copied in one go. `state` tells the
   * plugin whether the target exists and is ours (0 absent, 1 owned, 2 foreign).
   * Throws what the wasm throws.
   */
  call(fn: string, context: string, source: string | null, target: string | null, state: number): string {
    const ex = this.#exports!;
    this.#callsOnInstance++;
    this.calls++;
    if (context !== this.#context) this.#writeContext(context);
    // Room for the worst case (3 UTF-8 bytes per UTF-16 unit): arena allocation is a pointer
    // bump, so reserving more than is written costs nothing, and the JSON is encoded straight
    // into plugin memory instead of through a scratch buffer.
    const room = ((source?.length ?? 0) + (target?.length ?? 0)) * 3;
    const ptr = ex.liqo_begin(room);
    this.#view();
    if (ptr !== this.#inAt) { this.#inAt = ptr; this.#inView = this.#u8.subarray(ptr); }
    const a = source === null ? 0 : encoder.encodeInto(source, this.#inView).written;
    const b = target === null ? 0 : encoder.encodeInto(target, this.#inView.subarray(a)).written;
    const out = (ex[fn] as (p: number, a: number, b: number, s: number) => number)(ptr, a, b, state);
    return this.#readString(out, ex.liqo_output_len());
  }

  /** What the plugin is shown of this call's objects (`target` already null when not shown). */
  #projections(view: LiveView, source: unknown, target: unknown): unknown[] {
    const f = this.#projFor;
    if (f[0] !== view || f[1] !== source || f[2] !== target) {
      this.#projected[0] = project(source as never, view.fields);
      this.#projected[1] = target === null ? null : project(target as never, view.targetFields);
      f[0] = view; f[1] = source; f[2] = target;
    }
    return this.#projected;
  }

  /**
   * The recorded live call whose reads replay equal on these objects, if any (its answer is
   * the plugin's for them). `source` and `target` are the cached objects; `target` null when
   * the view does not show it. Projections are made only for replays that read them.
   */
  memoAnswer(backward: boolean, context: string, view: LiveView, source: unknown, target: unknown, state: number): MemoEntry | undefined {
    this.#projFor[0] = null; // projections live for one call
    const hit = this.#memo?.find(backward, context, view, source, target, state);
    if (hit !== undefined) this.memoHits++;
    return hit;
  }

  /**
   * The live hot path: the objects stay here and the plugin reads their projections by handle.
   * Same answer as call(); `source` and `target` as for memoAnswer.
   */
  callLive(backward: boolean, context: string, view: LiveView, source: unknown, target: unknown, state: number): string {
    const ex = this.#exports!;
    this.#callsOnInstance++;
    this.calls++;
    if (context !== this.#context) this.#writeContext(context);
    const p = this.#projections(view, source, target);
    this.#projFor[0] = null;
    this.#handles = 1;
    const s = this.#pack(p[0] ?? undefined);
    const t = this.#pack(p[1] ?? undefined);
    const log = this.#log = this.#memo !== null ? [s & 7, t & 7] : null;
    let out: number;
    try {
      out = this.#live[backward ? 1 : 0]!(s, t, state);
    } catch (err) {
      this.#log = null;
      throw err;
    }
    const text = this.#answerOf(out, ex.liqo_output_len());
    if (log !== null && this.#log === log) {
      this.#log = null;
      this.#memo!.record(context, backward, state, view, log, text);
    }
    return text;
  }

  #answerOf(out: number, n: number): string {
    this.#view();
    // Buffer#compare over a range: no view is made, and an equal answer is not decoded again.
    if (!this.#cacheAnswers) return this.#buf.utf8Slice(out, out + n);
    const last = this.#lastAnswer;
    if (last.length === n && last.compare(this.#buf, out, out + n) === 0) return this.#lastAnswerText;
    const text = this.#buf.utf8Slice(out, out + n);
    if (n <= 4096) { this.#lastAnswer = Buffer.from(this.#buf.subarray(out, out + n)); this.#lastAnswerText = text; }
    return text;
  }

  #writeContext(context: string): void {
    const bytes = encoder.encode(context);
    const ptr = this.#exports!.liqo_context(bytes.length);
    if (ptr === 0) throw new RangeError(`the reflection context is ${bytes.length} bytes, more than the plugin's context buffer holds; pass fewer extra fields`);
    this.#view().set(bytes, ptr);
    this.#context = context;
  }

  memoryBytes(): number {
    return this.#exports?.memory.buffer.byteLength ?? 0;
  }

  async close(): Promise<void> {
    const p = this.#plugin;
    this.#plugin = null;
    this.#exports = null;
    if (p) await p.close();
  }
}
