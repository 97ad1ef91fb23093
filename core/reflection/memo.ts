// The decision memo: plugins are pure functions of what the host sends them (the context, the
// source projected to the declared fields, the target's declared fields and ownership state)
// plus what their host-function calls answered, so a call whose inputs are all equal to an
// earlier one's gets the earlier answer without running the plugin. It pays off where the
// engine re-reflects often: a resync or a remote-side event (same object, same version), a
// retry, and an update that touches only fields the plugin does not read (a ConfigMap's data,
// a Service's status), which reaches the host as a new version with the same projection.
//
// What the plugin asked the host during the call is part of the inputs: each look-up is
// recorded with the version of what it found and each non-identity IP translation with its
// result, and a hit re-asks them first (map reads, no plugin). A call that logged is not
// memoized (a hit would swallow the line), nor one that trapped or broke the rules.
import type { KubeObject } from "./abi.ts";
import type { Payload } from "./instance.ts";

/** A host-function answer the memoized answer depended on. */
export type Dependency =
  | { fn: "lookup"; request: string; found: string | KubeObject | null }
  | { fn: "translateIp"; ip: string; out: string };

interface Entry {
  fn: string;
  context: string;
  state: number;
  target: string | null;
  answer: unknown;
  deps: Dependency[];
}

/** What a look-up found, as the memo compares it: its version, or the object itself when it has none. */
export function foundStamp(obj: KubeObject | null): string | KubeObject | null {
  if (obj === null) return null;
  const rv = obj.metadata?.resourceVersion;
  return typeof rv === "string" && rv !== "" ? rv : obj;
}

export class DecisionMemo {
  // Keyed by the source payload: the host caches that string per object version, so a repeated
  // call hashes nothing new. The few entries under one key differ by direction, target or context.
  #bySource = new Map<string, Entry[]>();
  constructor(private readonly capacity = 8192) {}

  get size(): number { return this.#bySource.size; }

  /** The parsed answer of an equal earlier call whose dependencies still answer the same, or undefined. */
  get(fn: string, p: Payload, stillSame: (d: Dependency) => boolean): unknown {
    if (p.source === null) return undefined;
    const list = this.#bySource.get(p.source);
    if (list === undefined) return undefined;
    for (const e of list) {
      if (e.fn !== fn || e.state !== p.state || e.target !== p.target || e.context !== p.context) continue;
      return e.deps.every(stillSame) ? e.answer : undefined;
    }
    return undefined;
  }

  set(fn: string, p: Payload, answer: unknown, deps: Dependency[]): void {
    if (p.source === null) return;
    let list = this.#bySource.get(p.source);
    if (list === undefined) {
      // Oldest first out: a Map iterates in insertion order.
      if (this.#bySource.size >= this.capacity) this.#bySource.delete(this.#bySource.keys().next().value!);
      list = [];
      this.#bySource.set(p.source, list);
    }
    const entry: Entry = { fn, context: p.context, state: p.state, target: p.target, answer, deps };
    const i = list.findIndex((e) => e.fn === fn && e.state === p.state && e.target === p.target && e.context === p.context);
    if (i >= 0) list[i] = entry;
    else if (list.length < 8) list.push(entry);
  }

  clear(): void { this.#bySource.clear(); }
}
