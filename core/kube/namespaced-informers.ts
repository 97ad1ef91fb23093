// One informer per namespace behind one face, for identities that may read only some namespaces
// (a peer's identity may list ShadowPods and pods in its twin namespaces, never cluster-wide).
// Namespaces come and go at run time; handlers apply to every namespace, present and future.
import type { KubeClient } from "./client.ts";
import { createInformer, type Informer, type InformerHandlers } from "./informer.ts";
import { splitKey, type KubeObject, type ResourceRef } from "./resources.ts";
import type { Logger } from "../log.ts";

export interface NamespacedInformers<T extends KubeObject> {
  on(handlers: InformerHandlers<T>): () => void;
  /** Starts following a namespace (idempotent); its objects arrive as adds. */
  addNamespace(namespace: string): void;
  /** Stops following a namespace; its objects leave the cache without delete events (they still exist). */
  removeNamespace(namespace: string): Promise<void>;
  namespaces(): string[];
  /** Whether this namespace's first list has completed. */
  namespaceSynced(namespace: string): boolean;
  get(key: string): T | undefined;
  list(): T[];
  /** Every followed namespace has listed once. */
  readonly synced: boolean;
  stop(): Promise<void>;
}

export function createNamespacedInformers<T extends KubeObject = KubeObject>(options: {
  client: KubeClient;
  resource: ResourceRef;
  labelSelector?: string;
  logger?: Logger;
  /** As the informer's transform (e.g. dropping managedFields before caching). */
  transform?: (obj: T) => T;
}): NamespacedInformers<T> {
  const informers = new Map<string, Informer<T>>();
  const handlers = new Set<InformerHandlers<T>>();
  let stopped = false;
  return {
    on(h) {
      handlers.add(h);
      // The per-namespace informers call through this set, so later namespaces get the handler too.
      return () => handlers.delete(h);
    },
    addNamespace(namespace) {
      if (stopped || informers.has(namespace)) return;
      const informer = createInformer<T>({
        client: options.client,
        resource: options.resource,
        namespace,
        labelSelector: options.labelSelector,
        logger: options.logger,
        transform: options.transform,
      });
      informer.on({
        add: (o) => {
          for (const h of handlers) h.add?.(o);
        },
        update: (a, b) => {
          for (const h of handlers) h.update?.(a, b);
        },
        delete: (o) => {
          for (const h of handlers) h.delete?.(o);
        },
      });
      informers.set(namespace, informer);
      informer.start();
    },
    async removeNamespace(namespace) {
      const informer = informers.get(namespace);
      if (!informer) return;
      informers.delete(namespace);
      await informer.stop();
    },
    namespaces: () => [...informers.keys()],
    namespaceSynced: (namespace) => informers.get(namespace)?.synced ?? false,
    get(key) {
      return informers.get(splitKey(key).namespace ?? "")?.get(key);
    },
    list: () => [...informers.values()].flatMap((i) => i.list()),
    get synced() {
      return [...informers.values()].every((i) => i.synced);
    },
    async stop() {
      stopped = true;
      await Promise.all([...informers.values()].map((i) => i.stop()));
      informers.clear();
    },
  };
}
