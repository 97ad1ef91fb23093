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

export interface HostBindings {
  log(level: number, message: string): void;
  /** Direction is resolved by the caller from the call in progress. */
  translateIp(ip: string): string;
  /** True when translateIp is the identity: calls are answered 0 ("unchanged") without reading the address. */
  identityIp?: boolean;
  /** A JSON request in, a JSON object (text, or its UTF-8 bytes) or null out. */
  lookup(requestJson: string): string | Uint8Array | null;
  /** A plugin's abort message, reported just before it traps. */
  abort(message: string): void;
}

/** One call's input as the host prepared it (JSON text; null for an absent object). */
export interface Payload { context: string; source: string | null; target: string | null; state: number }

export interface RecyclePolicy {
  /** Re-instantiate after this many calls (default 10,000). */
  recycleAfterCalls?: number;
  /** ...or once linear memory grows past this many bytes (default 32 MiB). */
  maxMemoryBytes?: number;
}

type Exports = {
  memory: WebAssembly.Memory;
  liqo_context(len: number): number;
  liqo_begin(len: number): number;
  liqo_alloc(len: number): number;
  liqo_output_len(): number;
  [fn: string]: unknown;
};

/** Bun's (and Node's) native Buffer decoder, which the typings do not declare. */
type Utf8Buffer = Buffer & { utf8Slice(start: number, end: number): string };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class InstanceRunner {
  #module: WebAssembly.Module;
  #bindings: HostBindings;
  #policy: Required<RecyclePolicy>;
  #plugin: Plugin | null = null;
  #exports: Exports | null = null;
  #u8 = new Uint8Array(0);
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

  #functions() {
    const b = this.#bindings;
    // Extism passes its CallContext first; ABI v1 host functions only use plugin memory.
    return {
      "liqo:log": {
        log: (_: unknown, level: number, ptr: number, len: number) => b.log(level, this.#readString(ptr, len)),
        abort: (_: unknown, ptr: number, len: number) => b.abort(this.#readString(ptr, len)),
      },
      "liqo:net": {
        // 0 means "unchanged" (docs/plugins.md): the plugin keeps the address it passed.
        translate_ip: (_: unknown, ptr: number, len: number) => {
          if (b.identityIp) return 0;
          const ip = this.#readShort(ptr, len);
          const out = b.translateIp(ip);
          return out === ip ? 0 : this.#answer(out);
        },
      },
      "liqo:cache": {
        lookup: (_: unknown, ptr: number, len: number) => {
          const found = b.lookup(this.#readString(ptr, len));
          return typeof found === "string" || found === null ? this.#answer(found) : this.#answerBytes(found);
        },
      },
      // Plugins built without the SDK's abort hook import AssemblyScript's default.
      env: { abort: () => b.abort("abort (plugin built without the SDK abort hook)") },
    };
  }

  needsRecycle(): boolean {
    return this.#callsOnInstance >= this.#policy.recycleAfterCalls
      || (this.#exports !== null && this.#exports.memory.buffer.byteLength > this.#policy.maxMemoryBytes);
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
