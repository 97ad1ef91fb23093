// Worker side of the isolated runner (drop-in plugins). The plugin runs here with the same
// bulk-copy ABI as on the main thread; the main thread enforces the time budget by
// terminating this worker. Host functions that must answer synchronously (translateIp,
// lookup) block on a SharedArrayBuffer until the main thread writes the answer.
import { InstanceRunner, type HostBindings, type Payload } from "./instance.ts";

declare const self: Worker;

type Init = {
  type: "init";
  wasm: Uint8Array;
  shared: SharedArrayBuffer;
  recycleAfterCalls?: number;
  maxMemoryBytes?: number;
  identityIp?: boolean;
};
type Call = { type: "call"; id: number; fn: string; payloads: Payload[] };
/** The ABI version and manifest text, read here so that a plugin that loops in them stalls only this worker. */
type ManifestAsk = { type: "manifest" };

let runner: InstanceRunner | null = null;
let flag: Int32Array;
let shared: Uint8Array;
const decoder = new TextDecoder();

/** Asks the main thread and waits: [0] = state flag, [1] = answer length (-1 = null), bytes from 8. */
function ask(kind: "translateIp" | "lookup", arg: string): string | null {
  Atomics.store(flag, 0, 0);
  self.postMessage({ type: "host", kind, arg });
  Atomics.wait(flag, 0, 0);
  const len = flag[1]!;
  return len < 0 ? null : decoder.decode(shared.slice(8, 8 + len));
}

const bindings: HostBindings = {
  log: (level, message) => self.postMessage({ type: "log", level, message }),
  abort: (message) => self.postMessage({ type: "abort", message }),
  translateIp: (ip) => ask("translateIp", ip) ?? ip,
  lookup: (req) => ask("lookup", req),
};

self.onmessage = async (e: MessageEvent<Init | Call | ManifestAsk>) => {
  const msg = e.data;
  if (msg.type === "manifest") {
    try {
      const abi = runner!.callNumber("liqo_abi_version");
      self.postMessage({ type: "manifest", abi, raw: abi === 1 ? runner!.callNoInput("liqo_manifest") : "" });
    } catch (err) {
      self.postMessage({ type: "manifest", error: String(err) });
    }
    return;
  }
  if (msg.type === "init") {
    flag = new Int32Array(msg.shared, 0, 2);
    shared = new Uint8Array(msg.shared);
    // The identity translation is answered in the worker: no round trip to the main thread.
    bindings.identityIp = msg.identityIp === true;
    try {
      runner = await InstanceRunner.create(
        await WebAssembly.compile(msg.wasm as Uint8Array<ArrayBuffer>),
        bindings,
        msg,
      );
      self.postMessage({ type: "ready" });
    } catch (err) {
      self.postMessage({ type: "ready", error: String(err) });
    }
    return;
  }
  const results: Array<{ ok: string } | { trap: string }> = [];
  if (!runner) {
    self.postMessage({
      type: "result",
      id: msg.id,
      results: msg.payloads.map(() => ({ trap: "the plugin failed to start in its worker" })),
    });
    return;
  }
  for (const payload of msg.payloads) {
    try {
      if (runner!.needsRecycle()) await runner!.recycle();
      results.push({ ok: runner!.call(msg.fn, payload.context, payload.source, payload.target, payload.state) });
    } catch (err) {
      results.push({ trap: String(err) });
      await runner!.recycle(); // a trapped instance's memory cannot be trusted
    }
  }
  self.postMessage({ type: "result", id: msg.id, results });
};
