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
  source: string;
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
  // Keyed by the object's name, the entries holding the source payload they answered. Keying by
  // the payload itself cost a hash of the whole JSON text on every call, and a call whose
  // content changed (the common cold case) only ever misses: by name, the miss is a short-key
  // look-up and a string compare that fails at the length or the first differing byte. Equal
  // payloads of different objects cannot happen (the payload holds name and namespace), so
  // nothing is lost. An object's entries differ by direction, target or context; a new version
  // replaces the old one's entry, so a list never holds stale versions.
  // Two generations instead of one map evicted oldest-first: deleting a Map's first entries
  // leaves tombstones that keys().next() walks over again on every eviction, which made set()
  // the most expensive step of a call once the memo was full. Here the young map fills up to
  // half the capacity, then becomes the old one and the previous old one is dropped whole:
  // between capacity/2 and capacity names are kept, and names still in use move back into the
  // young map when read.
  #young = new Map<string, Entry[]>();
  #old = new Map<string, Entry[]>();
  readonly #half: number;
  constructor(capacity = 8192) {
    this.#half = Math.max(1, capacity >> 1);
  }

  #list(name: string): Entry[] | undefined {
    const list = this.#young.get(name);
    if (list !== undefined) return list;
    const old = this.#old.get(name);
    if (old !== undefined) this.#adopt(name, old);
    return old;
  }

  #adopt(name: string, list: Entry[]): void {
    if (this.#young.size >= this.#half) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(name, list);
  }

  /** The parsed answer of an equal earlier call whose dependencies still answer the same, or undefined. */
  get(fn: string, name: string, p: Payload, stillSame: (d: Dependency) => boolean): unknown {
    if (p.source === null) return undefined;
    const list = this.#list(name);
    if (list === undefined) return undefined;
    for (const e of list) {
      if (e.fn !== fn || e.state !== p.state || e.target !== p.target || e.context !== p.context) continue;
      return e.source === p.source && e.deps.every(stillSame) ? e.answer : undefined;
    }
    return undefined;
  }

  set(fn: string, name: string, p: Payload, answer: unknown, deps: Dependency[]): void {
    if (p.source === null) return;
    let list = this.#list(name);
    if (list === undefined) {
      list = [];
      this.#adopt(name, list);
    }
    const entry: Entry = { fn, source: p.source, context: p.context, state: p.state, target: p.target, answer, deps };
    const i = list.findIndex(
      (e) => e.fn === fn && e.state === p.state && e.target === p.target && e.context === p.context,
    );
    if (i >= 0) list[i] = entry;
    else if (list.length < 8) list.push(entry);
  }

  clear(): void {
    this.#young.clear();
    this.#old.clear();
  }
}
