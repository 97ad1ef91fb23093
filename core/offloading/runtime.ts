// The loop both offloading controllers share: informers whose handlers only enqueue keys, one work
// queue calling handle(key), and start/stop. handle reads the API server itself, so tests (and a
// restarted process) can call it without the informers.
import { createInformer, type Informer } from "../kube/informer.ts";
import { createWorkQueue, type WorkQueue } from "../kube/workqueue.ts";
import type { KubeClient } from "../kube/client.ts";
import type { KubeObject, ResourceRef } from "../kube/resources.ts";
import type { Logger } from "../log.ts";

export interface Watched {
  client: KubeClient;
  resource: ResourceRef;
  labelSelector?: string;
  /** Re-delivers every cached object this often (informer resync), for state no watch reports. */
  resyncMs?: number;
  /** The keys to reconcile when this object is added, changed or deleted. */
  keys(obj: KubeObject, old?: KubeObject): Iterable<string>;
}

export interface ControllerLoop {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Resolves when nothing is queued or being handled. */
  idle(): Promise<void>;
  readonly queue: WorkQueue;
}

export function createControllerLoop(options: {
  name: string;
  handle: (key: string) => Promise<void>;
  watches: Watched[];
  logger: Logger;
  workers?: number;
  syncTimeoutMs?: number;
}): ControllerLoop {
  const queue = createWorkQueue({
    name: options.name,
    handler: options.handle,
    workers: options.workers ?? 2,
    baseDelayMs: 200,
    maxDelayMs: 30_000,
    logger: options.logger,
  });
  let informers: Informer[] = [];
  return {
    queue,
    async start() {
      informers = options.watches.map((w) => {
        const informer = createInformer({
          client: w.client,
          resource: w.resource,
          labelSelector: w.labelSelector,
          resyncMs: w.resyncMs,
          logger: options.logger,
        });
        const enqueue = (obj: KubeObject, old?: KubeObject) => {
          for (const key of w.keys(obj, old)) queue.add(key);
        };
        informer.on({ add: (o) => enqueue(o), update: (old, o) => enqueue(o, old), delete: (o) => enqueue(o) });
        informer.start();
        return informer;
      });
      await Promise.all(informers.map((i) => i.waitForSync(options.syncTimeoutMs ?? 60_000)));
      queue.start();
    },
    async stop() {
      await Promise.all(informers.map((i) => i.stop()));
      await queue.shutdown();
    },
    idle: () => queue.idle(),
  };
}
