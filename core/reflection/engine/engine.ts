// The reflection engine for one peering (local cluster ↔ remote cluster): runs every reflector
// plugin, built-in or dropped in, over the namespace pairs it is given at run time.
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject as KubeObj } from "../../kube/resources.ts";
import { silentLogger, type Logger } from "../../log.ts";
import { createRegistry, type Registry } from "../../metrics/index.ts";
import type { CacheLookup, IpTranslator, ReflectionContext } from "../abi.ts";
import { apiVersionOf } from "../abi.ts";
import { loadPlugin, type ReflectorPlugin, type Trust } from "../host.ts";
import { createEventRecorder } from "../../kube/events.ts";
import { createEngineMetrics } from "./metrics.ts";
import type { LocalLookup } from "../policy.ts";
import { Reflector, type NamespacePair } from "./reflector.ts";

export interface EngineOptions {
  local: KubeClient;
  remote: KubeClient;
  localClusterId: string;
  remoteClusterId: string;
  /** Extra context every call sees: virtual node name, virtual kubelet IP, storage class. */
  context?: Partial<ReflectionContext>;
  translateIp?: IpTranslator;
  registry?: Registry;
  logger?: Logger;
  /** Workers per reflector. */
  workers?: number;
  /**
   * The reflection policy (core/reflection/policy.ts): a local object it does not admit is treated
   * as absent, so its copy is removed. After the policy changes, call requeueAll. `lookup` reads
   * the local caches of every reflector (an EndpointSlice's Service).
   */
  admits?: (kind: string, local: KubeObj, lookup: LocalLookup) => boolean;
  /**
   * The local objects whose admission follows this one (a Service's EndpointSlices, by label):
   * they are looked at again whenever it changes.
   */
  followers?: (kind: string, local: KubeObj) => { kind: string; labels: Record<string, string> } | undefined;
  fieldManager?: string;
  /** Entries of each plugin's decision memo (host.ts); 0 turns it off. */
  memoEntries?: number;
}

export interface PluginInfo {
  name: string;
  version: string;
  trust: Trust;
  source: string;
  state: "ready" | "quarantined" | "closed";
  quarantineReason?: string;
  resources: string[];
  calls: number;
  recycles: number;
  /** Calls answered by the host's decision memo without running the plugin. */
  memoHits: number;
}

export interface ReflectorInfo {
  name: string;
  kind: string;
  direction: string;
  pairs: number;
  queueDepth: number;
  handled: number;
  failed: number;
}

export interface ReflectionEngine {
  addPlugin(wasm: Uint8Array, options: { trust: Trust; source: string }): Promise<PluginInfo>;
  removePlugin(name: string): Promise<boolean>;
  addNamespacePair(pair: NamespacePair): Promise<void>;
  removeNamespacePair(localNamespace: string): Promise<void>;
  pairs(): NamespacePair[];
  plugins(): PluginInfo[];
  reflectors(): ReflectorInfo[];
  /** True when every running reflector's caches are synced. */
  synced(): boolean;
  /**
   * Re-queues every local object of every reflector: for inputs the engine cannot see change,
   * such as an IP translation that now answers differently (the memo re-checks such answers).
   */
  requeueAll(): void;
  /**
   * Changes the context every call sees (the storage class a provider offers now): every object is
   * looked at again with it, including those whose target converged under the old one.
   */
  setContext(context: Partial<ReflectionContext>): void;
  readonly registry: Registry;
  stop(): Promise<void>;
}

interface Loaded {
  plugin: ReflectorPlugin;
  source: string;
  reflectors: Reflector[];
}

export class PluginConflictError extends Error {
  override name = "PluginConflictError";
}

export function createReflectionEngine(options: EngineOptions): ReflectionEngine {
  const log = (options.logger ?? silentLogger).child({
    component: "reflection",
    remoteClusterId: options.remoteClusterId,
  });
  const registry = options.registry ?? createRegistry();
  const metrics = createEngineMetrics(registry);
  const events = createEventRecorder(options.local, "liqo-reflection", log);
  const loaded = new Map<string, Loaded>();
  const pairs = new Map<string, NamespacePair>();
  const contexts = new Map<string, ReflectionContext>();
  let extra = options.context;
  let stopped = false;

  registry.callbackGauge({
    name: "liqo_reflection_queue_depth",
    help: "Keys waiting in a reflector's work queue.",
    labelNames: ["reflector"] as const,
    collect: () =>
      [...loaded.values()].flatMap((l) =>
        l.reflectors.map((r) => ({ labels: { reflector: r.name }, value: r.queueDepth })),
      ),
  });
  registry.callbackGauge({
    name: "liqo_reflection_plugin_quarantined",
    help: "1 when a plugin is quarantined.",
    labelNames: ["plugin"] as const,
    collect: () =>
      [...loaded.values()].map((l) => ({
        labels: { plugin: l.plugin.manifest.name },
        value: l.plugin.state === "quarantined" ? 1 : 0,
      })),
  });

  // The same context object per pair: the host serialises each context once.
  function contextFor(pair: NamespacePair): ReflectionContext {
    let ctx = contexts.get(pair.localNamespace);
    if (!ctx) {
      ctx = {
        ...extra,
        localClusterId: options.localClusterId,
        remoteClusterId: options.remoteClusterId,
        localNamespace: pair.localNamespace,
        remoteNamespace: pair.remoteNamespace,
      };
      contexts.set(pair.localNamespace, ctx);
    }
    return ctx;
  }

  const lookup: CacheLookup = (req) => {
    for (const l of loaded.values()) {
      for (const r of l.reflectors) {
        if (r.resource.kind !== req.kind || apiVersionOf(r.resource) !== req.apiVersion) continue;
        const found = r.lookup(req.cluster, req.namespace, req.name);
        if (found) return found;
      }
    }
    return null;
  };

  const reflectorsOf = (kind: string) =>
    [...loaded.values()].flatMap((l) => l.reflectors.filter((r) => r.resource.kind === kind));
  const lookupLocal: LocalLookup = (kind, namespace, name) => {
    for (const r of reflectorsOf(kind)) {
      const found = r.lookupLocal(namespace, name);
      if (found) return found;
    }
    return undefined;
  };
  const followers = options.followers;
  const localChanged =
    followers &&
    ((kind: string, obj: KubeObj) => {
      const f = followers(kind, obj);
      if (f) for (const r of reflectorsOf(f.kind)) r.requeueLabelled(obj.metadata.namespace ?? "", f.labels);
    });

  function info(l: Loaded): PluginInfo {
    const s = l.plugin.stats();
    return {
      name: l.plugin.manifest.name,
      version: l.plugin.manifest.version,
      trust: l.plugin.trust,
      source: l.source,
      state: l.plugin.state,
      quarantineReason: l.plugin.quarantineReason,
      resources: l.plugin.manifest.resources.map((r) => `${r.kind}.${apiVersionOf(r)} (${r.direction})`),
      calls: s.calls,
      recycles: s.recycles,
      memoHits: s.memoHits,
    };
  }

  const quarantined = new WeakSet<Loaded>();
  function quarantine(l: Loaded, reason: string) {
    if (quarantined.has(l)) return;
    quarantined.add(l);
    log.error("plugin quarantined: its resources stop reflecting", { plugin: l.plugin.manifest.name, reason });
    // Its reflectors keep their informers but no longer call the plugin: every local object, those
    // already reflected and those created later, gets an Event saying why it is not reflected.
    // (Stopping them left no Event at all when the call that tripped had no local object.)
    for (const r of l.reflectors) r.requeueLocal();
  }

  async function startReflectors(l: Loaded) {
    const deps = {
      local: options.local,
      remote: options.remote,
      contextFor,
      fieldManager: options.fieldManager ?? "liqo-reflection",
      workers: options.workers ?? 4,
      logger: log,
      metrics,
      events,
      admits: options.admits,
      lookupLocal,
      localChanged,
      onQuarantine: (_r: Reflector, reason: string) => quarantine(l, reason),
    };
    for (const res of l.plugin.manifest.resources) {
      const ref = await options.local.resourceFor(apiVersionOf(res), res.kind);
      l.reflectors.push(new Reflector(l.plugin, res, ref, deps));
    }
    await Promise.all(l.reflectors.flatMap((r) => [...pairs.values()].map((p) => r.addPair(p))));
  }

  return {
    registry,
    async addPlugin(wasm, { trust, source }) {
      if (stopped) throw new Error("the reflection engine is stopped");
      const plugin = await loadPlugin(wasm, {
        trust,
        translateIp: options.translateIp,
        lookup,
        logger: log,
        memoEntries: options.memoEntries,
      });
      const name = plugin.manifest.name;
      const clash = [...loaded.values()].flatMap((l) =>
        l.plugin.manifest.resources
          .filter(
            (r) =>
              l.plugin.manifest.name !== name &&
              plugin.manifest.resources.some((n) => n.kind === r.kind && apiVersionOf(n) === apiVersionOf(r)),
          )
          .map((r) => `${r.kind} (already reflected by ${l.plugin.manifest.name} from ${l.source})`),
      );
      if (clash.length) {
        await plugin.close();
        throw new PluginConflictError(
          `plugin ${name} from ${source} declares ${clash.join(", ")}; one kind has one reflector: remove the other plugin first`,
        );
      }
      const previous = loaded.get(name);
      if (previous) await this.removePlugin(name);
      const l: Loaded = { plugin, source, reflectors: [] };
      loaded.set(name, l);
      try {
        await startReflectors(l);
      } catch (err) {
        await this.removePlugin(name);
        throw err;
      }
      log.info(previous ? "plugin replaced" : "plugin loaded", {
        plugin: name,
        version: plugin.manifest.version,
        trust,
        source,
      });
      return info(l);
    },
    async removePlugin(name) {
      const l = loaded.get(name);
      if (!l) return false;
      loaded.delete(name);
      await Promise.all(l.reflectors.map((r) => r.stop()));
      await l.plugin.close();
      return true;
    },
    async addNamespacePair(pair) {
      const existing = pairs.get(pair.localNamespace);
      if (existing && existing.remoteNamespace !== pair.remoteNamespace) {
        throw new Error(
          `namespace ${pair.localNamespace} is already paired with ${existing.remoteNamespace}; remove that pair first`,
        );
      }
      pairs.set(pair.localNamespace, pair);
      await Promise.all([...loaded.values()].flatMap((l) => l.reflectors.map((r) => r.addPair(pair))));
    },
    async removeNamespacePair(localNamespace) {
      if (!pairs.delete(localNamespace)) return;
      contexts.delete(localNamespace);
      await Promise.all(
        [...loaded.values()].flatMap((l) =>
          l.reflectors.filter((r) => r.namespaced).map((r) => r.removePair(localNamespace)),
        ),
      );
    },
    pairs: () => [...pairs.values()],
    plugins: () => [...loaded.values()].map(info),
    reflectors: () =>
      [...loaded.values()].flatMap((l) =>
        l.reflectors.map((r) => ({
          name: r.name,
          kind: r.resource.kind,
          direction: r.resource.direction,
          pairs: r.pairCount,
          queueDepth: r.queueDepth,
          handled: r.queueStats.handled,
          failed: r.queueStats.failed,
        })),
      ),
    synced: () => [...loaded.values()].every((l) => l.reflectors.every((r) => r.synced())),
    requeueAll() {
      for (const l of loaded.values()) for (const r of l.reflectors) r.requeueLocal();
    },
    setContext(context) {
      extra = { ...extra, ...context };
      contexts.clear();
      for (const l of loaded.values()) for (const r of l.reflectors) r.requeueLocal({ contextChanged: true });
    },
    async stop() {
      stopped = true;
      await Promise.all([...loaded.keys()].map((n) => this.removePlugin(n)));
    },
  };
}
