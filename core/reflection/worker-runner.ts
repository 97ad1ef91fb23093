// Main-thread side of the isolated runner for drop-in plugins. Not Extism's runInWorker:
// in 1.0.3 it has no time limit, hides the instance (no bulk copy) and costs ~400 µs a call.
// Our own worker runs the same fast ABI, answers host functions through a
// SharedArrayBuffer, and is terminated when a batch outlives its budget.
import { PluginError } from "./errors.ts";
import type { HostBindings, Payload, RecyclePolicy } from "./instance.ts";

type Out = { ok: string } | { trap: string };

/** `work`, or the error `late()` makes if it has not settled within ms. */
async function deadline<T>(work: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
const SHARED_BYTES = 1 << 20;
const encoder = new TextEncoder();

export class WorkerRunner {
  #worker: Worker;
  #flag: Int32Array;
  #shared: Uint8Array;
  #bindings: HostBindings;
  #pending = new Map<number, { resolve(o: Out[]): void; reject(e: unknown): void }>();
  #nextId = 1;
  #calls = 0;
  #lastAbort: string | null = null;
  #dead: string | null = null;
  #onManifest: ((m: { abi: number; raw: string; error?: string }) => void) | null = null;

  private constructor(worker: Worker, shared: SharedArrayBuffer, bindings: HostBindings) {
    this.#worker = worker;
    this.#flag = new Int32Array(shared, 0, 2);
    this.#shared = new Uint8Array(shared);
    this.#bindings = bindings;
  }

  /**
   * Takes bytes, not a compiled module: Bun cannot post a WebAssembly.Module to a worker.
   * The module's start function runs in the worker: one that does not return within
   * startTimeoutMs (worker boot and compilation included) gets the worker terminated.
   */
  static async create(
    wasm: Uint8Array,
    bindings: HostBindings,
    policy: RecyclePolicy & { startTimeoutMs?: number; label?: string },
  ): Promise<WorkerRunner> {
    const worker = new Worker(new URL("./worker.ts", import.meta.url).href);
    const shared = new SharedArrayBuffer(SHARED_BYTES);
    const runner = new WorkerRunner(worker, shared, bindings);
    const ready = new Promise<void>((resolve, reject) => {
      worker.onmessage = (e) => {
        if (e.data.type !== "ready") return;
        if (e.data.error) reject(new Error(e.data.error));
        else resolve();
        worker.onmessage = (ev) => runner.#onMessage(ev.data);
      };
      worker.onerror = (e) => reject(new Error(e.message));
    });
    worker.postMessage({
      type: "init",
      wasm,
      shared,
      recycleAfterCalls: policy.recycleAfterCalls,
      maxMemoryBytes: policy.maxMemoryBytes,
      identityIp: bindings.identityIp === true,
    });
    const startMs = policy.startTimeoutMs ?? 5_000;
    try {
      await deadline(
        ready,
        startMs,
        () =>
          new PluginError(
            "timeout",
            policy.label ?? "(unloaded)",
            `did not finish starting (its start function) within ${startMs} ms; its worker was terminated`,
          ),
      );
    } catch (err) {
      runner.#dead = (err as Error).message;
      worker.terminate();
      throw err;
    }
    return runner;
  }

  /** The plugin's ABI version and manifest text, read in the worker under a deadline. */
  async manifest(label: string, timeoutMs: number): Promise<{ abi: number; raw: string }> {
    const answer = new Promise<{ abi: number; raw: string }>((resolve, reject) => {
      this.#onManifest = (m) =>
        m.error
          ? reject(new PluginError("trap", label, `trapped while reporting its manifest: ${m.error}`))
          : resolve(m);
    });
    this.#worker.postMessage({ type: "manifest" });
    try {
      return await deadline(
        answer,
        timeoutMs,
        () =>
          new PluginError(
            "timeout",
            label,
            `did not report its manifest within ${timeoutMs} ms; its worker was terminated`,
          ),
      );
    } catch (err) {
      if ((err as PluginError).code === "timeout") await this.close();
      throw err;
    } finally {
      this.#onManifest = null;
    }
  }

  // biome-ignore lint/suspicious/noExplicitAny: the messages worker.ts posts, told apart by their type field below
  #onMessage(msg: any): void {
    if (msg.type === "log") this.#bindings.log(msg.level, msg.message);
    else if (msg.type === "abort") this.#lastAbort = msg.message;
    else if (msg.type === "manifest") this.#onManifest?.(msg);
    else if (msg.type === "host") {
      const answer = msg.kind === "translateIp" ? this.#bindings.translateIp(msg.arg) : this.#bindings.lookup(msg.arg);
      const bytes = answer === null ? null : typeof answer === "string" ? encoder.encode(answer) : answer;
      // An answer too big for the shared buffer is reported as "not found" rather than truncated.
      if (bytes && bytes.length <= SHARED_BYTES - 8) {
        this.#shared.set(bytes, 8);
        this.#flag[1] = bytes.length;
      } else this.#flag[1] = -1;
      Atomics.store(this.#flag, 0, 1);
      Atomics.notify(this.#flag, 0);
    } else if (msg.type === "result") {
      const p = this.#pending.get(msg.id);
      this.#pending.delete(msg.id);
      const results = (msg.results as Out[]).map((r) =>
        "trap" in r && this.#lastAbort ? { trap: this.#lastAbort } : r,
      );
      this.#lastAbort = null;
      p?.resolve(results);
    }
  }

  /**
   * Runs a batch with a budget of budgetMs per payload. Host-function context is the batch's
   * first item: the engine batches per namespace pair, so the pair is the same for all.
   */
  run(fn: string, payloads: Payload[], budgetMs: number, setCurrent: (i: number) => void): Promise<Out[]> {
    if (this.#dead) return Promise.reject(new PluginError("quarantined", "worker", this.#dead));
    setCurrent(0);
    const id = this.#nextId++;
    this.#calls += payloads.length;
    const budget = budgetMs * payloads.length;
    return new Promise<Out[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        this.#dead = `a batch of ${payloads.length} call(s) ran past its ${budget} ms budget; its worker was terminated`;
        this.#worker.terminate();
        resolve(payloads.map(() => ({ trap: `timeout: ${this.#dead}` })));
      }, budget);
      this.#pending.set(id, {
        resolve: (o) => {
          clearTimeout(timer);
          resolve(o);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.#worker.postMessage({ type: "call", id, fn, payloads });
    });
  }

  stats() {
    return { calls: this.#calls, recycles: 0, memoryBytes: 0 };
  }

  /** Why this worker takes no more calls (a batch past its budget, or closed); null while it does. */
  get dead(): string | null {
    return this.#dead;
  }

  async close(): Promise<void> {
    this.#dead ??= "closed";
    this.#worker.terminate();
  }
}
