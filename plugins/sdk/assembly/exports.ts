// The wasm exports of ABI v1. A plugin's entry file re-exports this module:
//   export * from "<sdk>/exports";
// Calls: the host writes the context with liqo_context when it changes (it survives the
// per-call arena rewind: it lives in a static buffer), then per object liqo_begin + bulk
// copy of [source JSON][target JSON] + liqo_forward/liqo_backward, and reads the answer
// at the returned pointer, liqo_output_len bytes long.
import { setLive } from "./live";
import { ABI_VERSION, Context, Input, Result, Target, Transform, Writer, parse, Value, registeredManifest, forwardTransform, backwardTransform } from "./index";

const CONTEXT_CAPACITY: i32 = 16384;
const contextBuffer = memory.data(CONTEXT_CAPACITY);
let contextLen: i32 = 0;
let outputLen: i32 = 0;

export function liqo_abi_version(): i32 { return ABI_VERSION; }

// The decoded context, kept across calls until the host sends another one.
let contextValue: Context | null = null;

/** Where the host writes a new context of `len` bytes; 0 if it does not fit. */
export function liqo_context(len: i32): usize {
  if (len > CONTEXT_CAPACITY) return 0;
  contextLen = len;
  contextValue = null;
  return contextBuffer;
}

/**
 * Each call begins here: the arena is rewound (nothing survives a call), then `len` bytes
 * for the payload. After a context change, the context is decoded once, fully (every member
 * indexed, every scalar decoded, so reading it later allocates nothing), into the kept region.
 */
export function liqo_begin(len: i32): usize {
  startCall();
  setLive(false);
  return heap.alloc(<usize>len);
}

/** Rewinds the arena, decoding a new context first if one was sent. */
function startCall(): void {
  if (contextValue == null) {
    __arena_restart();
    const ctx = new Context(slice(contextBuffer, contextLen));
    ctx.raw.prepareAll();
    contextValue = ctx;
    __arena_keep();
  } else __arena_rewind();
}
/** Memory for host-function answers written during a call (no rewind). */
export function liqo_alloc(len: i32): usize { return heap.alloc(<usize>len); }
export function liqo_output_len(): i32 { return outputLen; }

export function liqo_manifest(): usize {
  const w = new Writer(registeredManifest.length * 3 + 8);
  w.rawUtf8(registeredManifest);
  return finish(w);
}

export function liqo_forward(ptr: usize, localLen: i32, remoteLen: i32, remoteState: i32): usize {
  const local = slice(ptr, localLen);
  const remote = slice(ptr + <usize>localLen, remoteLen);
  return run(new Input(context(), local, remote, <Target>remoteState), forwardTransform);
}

export function liqo_backward(ptr: usize, remoteLen: i32, localLen: i32, localState: i32): usize {
  const remote = slice(ptr, remoteLen);
  const local = slice(ptr + <usize>remoteLen, localLen);
  return run(new Input(context(), local, remote, <Target>localState), backwardTransform);
}

/**
 * The live calls (main thread): the objects stay on the host and are read through liqo:obj
 * host calls (live.ts). `source` and `target` are packed handles (0 = absent).
 */
export function liqo_forward_live(source: i32, target: i32, state: i32): usize {
  startCall();
  setLive(true);
  return run(new Input(context(), Value.live(source), Value.live(target), <Target>state), forwardTransform);
}

export function liqo_backward_live(source: i32, target: i32, state: i32): usize {
  startCall();
  setLive(true);
  return run(new Input(context(), Value.live(target), Value.live(source), <Target>state), backwardTransform);
}

function context(): Context { return contextValue != null ? contextValue! : new Context(slice(contextBuffer, contextLen)); }

function slice(ptr: usize, len: i32): Value {
  if (len == 0) return Value.null();
  const r = parse(ptr, len);
  return r.error.length > 0 ? Value.null() : r.value;
}

function run(input: Input, fn: Transform): usize {
  const w = new Writer(1024);
  fn(input).write(w);
  return finish(w);
}

function finish(w: Writer): usize { outputLen = w.len; return w.ptr; }
