// An informer: list, then watch from the list's resourceVersion with bookmarks; relist on 410 Gone;
// reconnect with exponential backoff and jitter; optional periodic resync; a cache keyed by
// namespace/name. Handlers run synchronously and should only enqueue keys.
import { KubeApiError } from "./errors.ts";
import type { KubeClient } from "./client.ts";
import { objectKey, type KubeObject, type ResourceRef } from "./resources.ts";
import { silentLogger, type Logger } from "../log.ts";

export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(oldObj: T, newObj: T): void;
  delete?(obj: T): void;
}

export interface InformerOptions<T extends KubeObject = KubeObject> {
  client: KubeClient;
  resource: ResourceRef;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Re-delivers every cached object as an update this often; 0 turns it off. */
  resyncMs?: number;
  pageSize?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Server-side watch timeout; jittered by up to 20% so informers do not reconnect in lockstep. */
  watchTimeoutSeconds?: number;
  logger?: Logger;
  random?: () => number;
  /**
   * Applied to every listed or watched object before it is cached and handed to handlers, as
   * client-go's SetTransform: e.g. dropping managedFields or a spec the consumer never reads, which
   * for thousands of pods is most of a cache's memory. It must not depend on the previous object.
   */
  transform?: (obj: T) => T;
}

export interface InformerStats {
  lists: number;
  relistsAfterGone: number;
  watchRestarts: number;
  events: number;
  failures: number;
}

export interface Informer<T extends KubeObject = KubeObject> {
  on(handlers: InformerHandlers<T>): () => void;
  start(): void;
  stop(): Promise<void>;
  readonly synced: boolean;
  /** Resolves after the first complete list; rejects when the deadline passes or the informer stops. */
  waitForSync(timeoutMs?: number): Promise<void>;
  get(key: string): T | undefined;
  list(): T[];
  keys(): string[];
  readonly resourceVersion: string | undefined;
  readonly stats: InformerStats;
  readonly lastError: Error | undefined;
}

export function jittered(ms: number, fraction: number, random: () => number): number {
  return ms * (1 + fraction * random());
}

export function createInformer<T extends KubeObject = KubeObject>(options: InformerOptions<T>): Informer<T> {
  const { client, resource } = options;
  const random = options.random ?? Math.random;
  const log = (options.logger ?? silentLogger).child({ informer: resource.plural, namespace: options.namespace ?? "" });
  const cache = new Map<string, T>();
  const handlers = new Set<InformerHandlers<T>>();
  const stats: InformerStats = { lists: 0, relistsAfterGone: 0, watchRestarts: 0, events: 0, failures: 0 };
  let rv: string | undefined;
  let synced = false;
  let stopped = false;
  let lastError: Error | undefined;
  let abort = new AbortController();
  let loop: Promise<void> | undefined;
  let resync: ReturnType<typeof setInterval> | undefined;
  let syncWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  let wakeSleep: (() => void) | undefined;

  const emit = (fn: (h: InformerHandlers<T>) => void) => {
    for (const h of handlers) {
      try {
        fn(h);
      } catch (err) {
        log.error("informer handler threw", { err });
      }
    }
  };

  const transform = options.transform;
  const upsert = (raw: T) => {
    const obj = transform ? transform(raw) : raw;
    const key = objectKey(obj);
    const old = cache.get(key);
    cache.set(key, obj);
    if (!old) emit((h) => h.add?.(obj));
    else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) emit((h) => h.update?.(old, obj));
  };

  const remove = (key: string, last?: T) => {
    const old = cache.get(key);
    if (!old) return;
    cache.delete(key);
    emit((h) => h.delete?.(last ?? old));
  };

  async function relist() {
    const seen = new Set<string>();
    let cont: string | undefined;
    let listRv: string | undefined;
    const items: T[] = [];
    do {
      const page = await client.list<T>(resource, {
        namespace: options.namespace,
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
        limit: options.pageSize ?? 500,
        continue: cont,
        signal: abort.signal,
      });
      items.push(...page.items);
      cont = page.metadata.continue || undefined;
      listRv = page.metadata.resourceVersion;
    } while (cont);
    stats.lists++;
    // Lists omit apiVersion/kind on items; watches carry them. Keep objects uniform.
    const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
    for (const item of items) {
      item.apiVersion ??= apiVersion;
      item.kind ??= resource.kind;
      seen.add(objectKey(item));
      upsert(item);
    }
    for (const key of [...cache.keys()]) if (!seen.has(key)) remove(key);
    rv = listRv;
    if (!synced) {
      synced = true;
      for (const w of syncWaiters) w.resolve();
      syncWaiters = [];
    }
  }

  async function watchOnce(): Promise<boolean> {
    const timeout = Math.round(jittered(options.watchTimeoutSeconds ?? 300, 0.2, random));
    let delivered = false;
    for await (const ev of client.watch<T>(resource, {
      namespace: options.namespace,
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      resourceVersion: rv,
      allowWatchBookmarks: true,
      timeoutSeconds: timeout,
      signal: abort.signal,
    })) {
      if (stopped) return delivered;
      stats.events++;
      delivered = true;
      const obj = ev.object;
      if (ev.type === "ERROR") {
        const status = obj as unknown as { code?: number; reason?: string; message?: string };
        throw new KubeApiError(
          `watch ${resource.plural}: ${status.message ?? "error"}`,
          status.code ?? 500,
          status.reason ?? "Unknown",
          resource.plural,
        );
      }
      if (obj?.metadata?.resourceVersion) rv = obj.metadata.resourceVersion;
      if (ev.type === "BOOKMARK") continue;
      if (ev.type === "DELETED") remove(objectKey(obj), transform ? transform(obj) : obj);
      else upsert(obj);
    }
    return delivered;
  }

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wakeSleep = undefined;
        resolve();
      }, ms);
      wakeSleep = () => {
        clearTimeout(timer);
        wakeSleep = undefined;
        resolve();
      };
    });

  async function run() {
    let failures = 0;
    while (!stopped) {
      try {
        if (rv === undefined) await relist();
        const delivered = await watchOnce();
        if (!stopped) stats.watchRestarts++;
        if (delivered) failures = 0;
        lastError = undefined;
      } catch (err) {
        if (stopped) break;
        if (err instanceof KubeApiError && err.status === 410) {
          // Our resourceVersion is older than etcd keeps: only a fresh list can tell what changed.
          stats.relistsAfterGone++;
          rv = undefined;
          log.info("watch expired (410 Gone), relisting");
          continue;
        }
        failures++;
        stats.failures++;
        lastError = err as Error;
        const delay = Math.min(
          options.backoffMaxMs ?? 30_000,
          (options.backoffBaseMs ?? 200) * 2 ** Math.min(failures - 1, 16),
        );
        log.warn("list/watch failed, backing off", { err, failures, delayMs: Math.round(delay) });
        await sleep(jittered(delay, 0.5, random));
      }
    }
  }

  return {
    on(h) {
      handlers.add(h);
      return () => void handlers.delete(h);
    },
    start() {
      if (loop) return;
      stopped = false;
      abort = new AbortController();
      loop = run();
      if (options.resyncMs) {
        resync = setInterval(() => {
          for (const obj of cache.values()) emit((h) => h.update?.(obj, obj));
        }, options.resyncMs);
      }
    },
    async stop() {
      stopped = true;
      if (resync) clearInterval(resync);
      abort.abort();
      wakeSleep?.();
      for (const w of syncWaiters) w.reject(new Error(`informer for ${resource.plural} stopped before its first list`));
      syncWaiters = [];
      await loop;
      loop = undefined;
    },
    get synced() {
      return synced;
    },
    waitForSync(timeoutMs = 60_000) {
      if (synced) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(
            new Error(
              `informer for ${resource.plural} did not sync within ${timeoutMs}ms: ${lastError?.message ?? "no answer yet"}`,
            ),
          );
        }, timeoutMs);
        syncWaiters.push({
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        });
      });
    },
    get: (key) => cache.get(key),
    list: () => [...cache.values()],
    keys: () => [...cache.keys()],
    get resourceVersion() {
      return rv;
    },
    stats,
    get lastError() {
      return lastError;
    },
  };
}
