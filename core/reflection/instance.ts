// One live plugin instance and the two ways of calling it (ABI v1, docs/plugins.md):
// - the JSON wire (`call`): the payload is encoded and copied in bulk into the plugin's exported
//   memory (liqo_alloc), the answer decoded straight out of it. No byte goes through Extism's
//   8-bytes-per-host-call input/output functions, which made the PDK path ~10x slower;
// - the live wire (`callLive`, built-ins on the main thread): the plugin reads the projections
//   of the objects by handle through the `liqo:obj` host calls; nothing is serialized for it.
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
  /** The same look-up for a live call: the cached object itself (read by handle, never serialized). */
  lookupObject?(requestJson: string): object | null;
  /** A plugin's abort message, reported just before it traps. */
  abort(message: string): void;
}

/** One call's input over the JSON wire as the host prepared it: JSON text (null for an absent object). */
export interface Payload {
  context: string;
  source: string | null;
  target: string | null;
  state: number;
}

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

/** Codes of the packed answers of the live host calls (plugins/sdk/assembly/live.ts). */
const CODE_NULL = 1;
const CODE_FALSE = 2;
const CODE_TRUE = 3;
const CODE_NUMBER = 4;
const CODE_STRING = 5;
const CODE_ARRAY = 6;
const CODE_OBJECT = 7;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class InstanceRunner {
  #module: WebAssembly.Module;
  #bindings: HostBindings;
  #policy: { recycleAfterCalls: number; maxMemoryBytes: number };
  #plugin: Plugin | null = null;
  #exports: Exports | null = null;
  /** Views of the plugin's memory, made once per buffer: in Bun, reading memory.buffer or making a
   *  view of it costs far more than a host call, so doing it per host call made calls many times slower. */
  #mem = { u8: new Uint8Array(0), u16: new Uint16Array(0), dv: new DataView(new ArrayBuffer(0)) };
  /** The live call's values by handle (index); handle 0 is "none". */
  #vals: unknown[] = [undefined];
  /** The plugin's string literals by address: the data segment never changes, so each is decoded once. */
  #literals: string[] = [];
  #callsOnInstance = 0;
  /** The context JSON this instance holds; re-sent only when it changes. */
  #context: string | null = null;
  /** Totals, for metrics and the memory-flatness proof. */
  calls = 0;
  recycles = 0;

  private constructor(module: WebAssembly.Module, bindings: HostBindings, policy: RecyclePolicy) {
    this.#module = module;
    this.#bindings = bindings;
    this.#policy = {
      recycleAfterCalls: policy.recycleAfterCalls ?? 10_000,
      maxMemoryBytes: policy.maxMemoryBytes ?? 32 * 1024 * 1024,
    };
  }

  static async create(
    module: WebAssembly.Module,
    bindings: HostBindings,
    policy: RecyclePolicy = {},
  ): Promise<InstanceRunner> {
    const runner = new InstanceRunner(module, bindings, policy);
    await runner.recycle();
    runner.recycles = 0;
    return runner;
  }

  /** The views of the plugin's memory; a grown memory detaches the old buffer (its views read
   *  length 0), which is the cue to make new ones. */
  #views() {
    if (this.#mem.u8.length === 0) {
      const buffer = this.#exports!.memory.buffer;
      this.#mem = { u8: new Uint8Array(buffer), u16: new Uint16Array(buffer), dv: new DataView(buffer) };
    }
    return this.#mem;
  }

  #readString(ptr: number, len: number): string {
    return decoder.decode(this.#views().u8.subarray(ptr, ptr + len));
  }

  /** Writes a length-prefixed UTF-8 answer into plugin memory for a host function to return (0 for null). */
  #answer(text: string | Uint8Array | null): number {
    if (text === null) return 0;
    const bytes = typeof text === "string" ? encoder.encode(text) : text;
    const ptr = this.#exports!.liqo_alloc(bytes.length + 4);
    const { u8, dv } = this.#views();
    dv.setUint32(ptr, bytes.length, true);
    u8.set(bytes, ptr + 4);
    return ptr;
  }

  /** A value of the live call as its packed handle: (handle << 3) | kind code, 0 for undefined. */
  #pack(v: unknown): number {
    let code: number;
    switch (typeof v) {
      case "undefined":
        return 0;
      case "boolean":
        return v ? CODE_TRUE : CODE_FALSE;
      case "number":
        code = CODE_NUMBER;
        break;
      case "string":
        code = CODE_STRING;
        break;
      case "object":
        if (v === null) return CODE_NULL;
        code = Array.isArray(v) ? CODE_ARRAY : CODE_OBJECT;
        break;
      default:
        return CODE_NULL; // functions, symbols, bigints: not JSON, never in an API object
    }
    const h = this.#vals.push(v) - 1;
    return (h << 3) | code;
  }

  /** An AssemblyScript string of the plugin (UTF-16, byte length in the header before it). */
  #plugString(ptr: number, fixed: number): string {
    if (fixed) {
      const hit = this.#literals[ptr];
      if (hit !== undefined) return hit;
    }
    const { u8, u16, dv } = this.#views();
    const bytes = ptr >= 4 && ptr <= u8.length ? dv.getUint32(ptr - 4, true) : Number.NaN;
    // Keys and literals are short; a length past this is a plugin that passed no string.
    if (!(bytes <= 65536) || ptr + bytes > u8.length || ptr % 2 !== 0) {
      throw new RangeError(
        `the plugin passed a string of ${bytes} bytes at ${ptr}: not an AssemblyScript string of its memory`,
      );
    }
    let s = "";
    for (let i = ptr >>> 1, end = (ptr + bytes) >>> 1; i < end; i++) s += String.fromCharCode(u16[i]!);
    if (fixed) this.#literals[ptr] = s;
    return s;
  }

  /** An own member of an object (inherited names such as constructor or __proto__ are absent). */
  #member(h: number, k: string): unknown {
    const o = this.#vals[h];
    if (o === null || typeof o !== "object" || !Object.hasOwn(o, k)) return undefined;
    return (o as Record<string, unknown>)[k];
  }

  #keys(h: number): string[] {
    const o = this.#vals[h];
    return o !== null && typeof o === "object" ? Object.keys(o) : [];
  }

  #functions() {
    const b = this.#bindings;
    const vals = this.#vals;
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
          const ip = this.#readString(ptr, len);
          const out = b.translateIp(ip);
          return out === ip ? 0 : this.#answer(out);
        },
        translate_ip_value: (_: unknown, h: number) => {
          const ip = vals[h];
          if (b.identityIp || typeof ip !== "string") return 0;
          const out = b.translateIp(ip);
          return out === ip ? 0 : this.#pack(out);
        },
      },
      "liqo:cache": {
        lookup: (_: unknown, ptr: number, len: number) => this.#answer(b.lookup(this.#readString(ptr, len))),
        lookup_value: (_: unknown, ptr: number, len: number) => {
          const req = this.#readString(ptr, len);
          if (b.lookupObject) return this.#pack(b.lookupObject(req) ?? undefined);
          const found = b.lookup(req);
          return found === null ? 0 : this.#pack(JSON.parse(typeof found === "string" ? found : decoder.decode(found)));
        },
      },
      // Live calls: reads of the call's objects by handle (plugins/sdk/assembly/live.ts).
      "liqo:obj": {
        get: (_: unknown, h: number, key: number, fixed: number) =>
          this.#pack(this.#member(h, this.#plugString(key, fixed))),
        at: (_: unknown, h: number, i: number) => {
          const o = vals[h];
          if (Array.isArray(o)) return this.#pack(o[i]);
          const keys = this.#keys(h);
          return i >= 0 && i < keys.length ? this.#pack((o as Record<string, unknown>)[keys[i]!]) : 0;
        },
        len: (_: unknown, h: number) => {
          const o = vals[h];
          return typeof o === "string" || Array.isArray(o) ? o.length : this.#keys(h).length;
        },
        eq: (_: unknown, h: number, s: number, fixed: number) => (vals[h] === this.#plugString(s, fixed) ? 1 : 0),
        text: (_: unknown, h: number) => {
          const v = vals[h];
          return this.#answer(typeof v === "string" ? v : JSON.stringify(v));
        },
        key: (_: unknown, h: number, i: number) => this.#answer(this.#keys(h)[i] ?? ""),
        json: (_: unknown, h: number) => this.#answer(JSON.stringify(vals[h]) ?? "null"),
      },
      // Plugins built without the SDK's abort hook import AssemblyScript's default.
      env: { abort: () => b.abort("abort (plugin built without the SDK abort hook)") },
    };
  }

  needsRecycle(): boolean {
    // The view's length is the memory's (memory.buffer is slow to read); a grown memory detaches
    // it (length 0) until a call makes new views, a call later.
    return this.#callsOnInstance >= this.#policy.recycleAfterCalls || this.#mem.u8.length > this.#policy.maxMemoryBytes;
  }

  #recycling: Promise<void> | null = null;

  /** Replaces the instance with a fresh one from the compiled module; concurrent callers share one. */
  recycle(): Promise<void> {
    this.#recycling ??= this.#replace().finally(() => {
      this.#recycling = null;
    });
    return this.#recycling;
  }

  async #replace(): Promise<void> {
    const next = await createPlugin(this.#module, { useWasi: false, runInWorker: false, functions: this.#functions() });
    const instance = await next.getInstance();
    const old = this.#plugin;
    this.#plugin = next;
    this.#exports = instance.exports as unknown as Exports;
    this.#mem.u8 = new Uint8Array(0);
    this.#literals = [];
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
   * The JSON wire. The context is copied only when it changed since the last call; the source
   * and target JSON are encoded back to back and copied in one go. `state` tells the plugin
   * whether the target exists and is ours (0 absent, 1 owned, 2 foreign). Throws what the wasm throws.
   */
  call(fn: string, context: string, source: string | null, target: string | null, state: number): string {
    const ex = this.#begin(context);
    const src = source === null ? null : encoder.encode(source);
    const tgt = target === null ? null : encoder.encode(target);
    const a = src?.length ?? 0;
    const ptr = ex.liqo_begin(a + (tgt?.length ?? 0));
    const { u8 } = this.#views();
    if (src) u8.set(src, ptr);
    if (tgt) u8.set(tgt, ptr + a);
    const out = (ex[fn] as (p: number, a: number, b: number, s: number) => number)(ptr, a, tgt?.length ?? 0, state);
    return this.#readString(out, ex.liqo_output_len());
  }

  /**
   * The live wire: the plugin reads `source` and `target` (the projections it is shown, null when
   * absent or not shown) by handle. Same answer as call() on their JSON.
   */
  callLive(backward: boolean, context: string, source: unknown, target: unknown, state: number): string {
    const ex = this.#begin(context);
    const fn = ex[backward ? "liqo_backward_live" : "liqo_forward_live"] as (
      s: number,
      t: number,
      st: number,
    ) => number;
    try {
      const out = fn(this.#pack(source ?? undefined), this.#pack(target ?? undefined), state);
      return this.#readString(out, ex.liqo_output_len());
    } finally {
      this.#vals.length = 1; // handles die with the call
    }
  }

  #begin(context: string): Exports {
    const ex = this.#exports!;
    this.#callsOnInstance++;
    this.calls++;
    if (context !== this.#context) {
      const bytes = encoder.encode(context);
      const ptr = ex.liqo_context(bytes.length);
      if (ptr === 0) {
        throw new RangeError(
          `the reflection context is ${bytes.length} bytes, more than the plugin's context buffer holds; pass fewer extra fields`,
        );
      }
      this.#views().u8.set(bytes, ptr);
      this.#context = context;
    }
    return ex;
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
