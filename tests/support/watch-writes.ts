// Every write of some objects from a resourceVersion on, through a watch: a state that lasts less
// than any poll's interval is still seen. For tests that require a condition to hold throughout.
import type { KubeClient } from "../../core/kube/client.ts";
import type { KubeObject, ResourceRef } from "../../core/kube/resources.ts";

export interface WriteWatch<T> {
  /** Stops watching; returns what `pick` made of each ADDED or MODIFIED object, in order. */
  stop(): Promise<T[]>;
}

export async function watchWrites<T>(
  client: KubeClient,
  res: ResourceRef,
  pick: (o: KubeObject) => T,
  o: { namespace?: string } = {},
): Promise<WriteWatch<T>> {
  const { resourceVersion } = (await client.list(res, { namespace: o.namespace, limit: 1 })).metadata;
  const abort = new AbortController();
  const seen: T[] = [];
  const running = (async () => {
    try {
      for await (const ev of client.watch(res, { namespace: o.namespace, resourceVersion, signal: abort.signal }))
        if (ev.type === "ADDED" || ev.type === "MODIFIED") seen.push(pick(ev.object));
    } catch (err) {
      if (!abort.signal.aborted) throw err;
    }
  })();
  return {
    async stop() {
      abort.abort();
      await running;
      return seen;
    },
  };
}
