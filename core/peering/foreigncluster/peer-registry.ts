// One metrics registry, many virtual kubelets. The controller manager runs a virtual kubelet (and
// its reflection engine) per peering in one process with one registry, but each engine declares
// its metrics as if it were alone; a second declaration of a name is an error, so without this
// only the first peering's virtual kubelet could start (and none again after an unpeer).
// A peer view declares each metric once on the shared registry with an extra remote_cluster_id
// label, hands every peer an instrument that fills that label in, and merges the peers' callback
// metrics into one family; closing a view drops its callbacks and series.
import type { Registry } from "../../metrics/index.ts";
import type { CallbackOptions, CallbackResult, LabeledValue } from "../../metrics/index.ts";

export const PEER_LABEL = "remote_cluster_id";

type Labels = Record<string, string | number>;
type Callback = CallbackOptions<string>["collect"];
interface Removable {
  remove(labels: Labels): boolean;
}
interface Shared {
  instruments: Map<string, unknown>;
  /** Per callback metric name: each peer's collect function. */
  callbacks: Map<string, Map<string, Callback>>;
  /** Per instrument name and peer: the label sets it used (by key), so closing a view can remove its series. */
  series: Map<string, Map<string, Map<string, Labels>>>;
}
const shared = new WeakMap<Registry, Shared>();

function stateOf(parent: Registry): Shared {
  let s = shared.get(parent);
  if (!s) shared.set(parent, (s = { instruments: new Map(), callbacks: new Map(), series: new Map() }));
  return s;
}

const withPeerLabel = <O extends { labelNames?: readonly string[] }>(opts: O): O => ({
  ...opts,
  labelNames: [...(opts.labelNames ?? []), PEER_LABEL],
});

export interface PeerRegistry extends Registry {
  /** Removes this peer's callback metrics and series (the virtual kubelet is gone). */
  close(): void;
}

export function peerRegistry(parent: Registry, remoteClusterId: string): PeerRegistry {
  const state = stateOf(parent);
  const mine = new Set<string>(); // callback names this peer registered

  // Wraps a shared instrument: label-less calls get {remote_cluster_id}, labelled calls get it added.
  function scoped<T extends object>(name: string, instrument: T): T {
    const used = state.series.get(name) ?? new Map<string, Map<string, Labels>>();
    state.series.set(name, used);
    const label = (args: unknown[]): unknown[] => {
      const first = args[0];
      const given = first !== null && typeof first === "object";
      const labels: Labels = given
        ? { ...(first as Labels), [PEER_LABEL]: remoteClusterId }
        : { [PEER_LABEL]: remoteClusterId };
      let mineUsed = used.get(remoteClusterId);
      if (!mineUsed) used.set(remoteClusterId, (mineUsed = new Map()));
      const key = Object.keys(labels)
        .sort()
        .map((k) => `${k}=${labels[k]}`)
        .join(",");
      if (!mineUsed.has(key)) mineUsed.set(key, labels);
      return given ? [labels, ...args.slice(1)] : [labels, ...args];
    };
    return new Proxy(instrument, {
      get(target, key) {
        const value = (target as Record<string | symbol, unknown>)[key];
        if (typeof value !== "function") return value;
        // reset() would clear every peer's series: a peer may only clear its own.
        if (key === "reset")
          return () => {
            for (const l of used.get(remoteClusterId)?.values() ?? []) (target as unknown as Removable).remove(l);
            used.delete(remoteClusterId);
          };
        if (["inc", "dec", "set", "get", "observe", "startTimer", "with", "remove"].includes(key as string)) {
          return (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, label(args));
        }
        return (value as (...a: unknown[]) => unknown).bind(target);
      },
    });
  }

  function instrument<T extends object>(name: string, declare: () => T): T {
    let inst = state.instruments.get(name) as T | undefined;
    if (!inst) state.instruments.set(name, (inst = declare()));
    return scoped(name, inst);
  }

  function callback(type: "callbackGauge" | "callbackCounter", opts: CallbackOptions<string>) {
    let peers = state.callbacks.get(opts.name);
    if (!peers) {
      const all = new Map<string, Callback>();
      state.callbacks.set(opts.name, (peers = all));
      parent[type]({
        ...withPeerLabel(opts),
        async collect() {
          const out: LabeledValue<string>[] = [];
          for (const [peer, collect] of all) {
            const result: CallbackResult<string> = await collect();
            if (typeof result === "number") out.push({ labels: { [PEER_LABEL]: peer }, value: result });
            else for (const r of result) out.push({ labels: { ...r.labels, [PEER_LABEL]: peer }, value: r.value });
          }
          return out;
        },
      });
    }
    peers.set(remoteClusterId, opts.collect);
    mine.add(opts.name);
  }

  return {
    counter: (opts) => instrument(opts.name, () => parent.counter(withPeerLabel(opts) as never)) as never,
    gauge: (opts) => instrument(opts.name, () => parent.gauge(withPeerLabel(opts) as never)) as never,
    histogram: (opts) => instrument(opts.name, () => parent.histogram(withPeerLabel(opts) as never)) as never,
    callbackGauge: (opts) => callback("callbackGauge", opts as CallbackOptions<string>),
    callbackCounter: (opts) => callback("callbackCounter", opts as CallbackOptions<string>),
    unregister(name) {
      return state.callbacks.get(name)?.delete(remoteClusterId) ?? false;
    },
    has: (name) => parent.has(name),
    collect: () => parent.collect(),
    expose: () => parent.expose(),
    close() {
      for (const name of mine) state.callbacks.get(name)?.delete(remoteClusterId);
      mine.clear();
      for (const [name, used] of state.series) {
        const inst = state.instruments.get(name) as Removable | undefined;
        for (const l of used.get(remoteClusterId)?.values() ?? []) inst?.remove(l);
        used.delete(remoteClusterId);
      }
    },
  };
}
