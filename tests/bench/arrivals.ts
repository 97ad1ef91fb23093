// What the reflection benches share: writing a batch of objects the way the engine does, and
// counting their copies' arrivals in the other cluster by watch (no polling).
import type { KubeClient } from "../../core/kube/client.ts";
import { createInformer } from "../../core/kube/informer.ts";
import type { KubeObject, ResourceRef } from "../../core/kube/resources.ts";

export type Batch = [ResourceRef, KubeObject[]][];

/** Every kind at once, `inFlight` requests per kind: the engine's shape (one queue per reflector). */
export async function writeAll(client: KubeClient, batch: Batch, inFlight: number): Promise<void> {
  await Promise.all(
    batch.map(async ([res, items]) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next < items.length) await client.create(res, items[next++]!);
        }),
      );
    }),
  );
}

/**
 * Watches on `remote` that run through every phase (so all phases pay for them); keys are
 * `namespace/Kind/name`. `informers` are in the order of `resources`.
 */
export function createArrivals(remote: KubeClient, resources: ResourceRef[]) {
  const seen = new Set<string>();
  let waiting: { pending: Set<string>; done: () => void } | null = null;
  const informers = resources.map((res) => {
    const inf = createInformer({ client: remote, resource: res });
    inf.on({
      add: (o) => {
        const key = `${o.metadata.namespace}/${res.kind}/${o.metadata.name}`;
        seen.add(key);
        if (waiting?.pending.delete(key) && waiting.pending.size === 0) waiting.done();
      },
    });
    inf.start();
    return inf;
  });
  return {
    informers,
    /** Resolves when every key has been seen (or at the deadline); answers how many were. */
    async arrival(keys: string[], deadlineMs: number): Promise<number> {
      const pending = new Set(keys.filter((k) => !seen.has(k)));
      if (pending.size > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await new Promise<void>((resolve) => {
          waiting = { pending, done: resolve };
          timer = setTimeout(resolve, deadlineMs);
        });
        clearTimeout(timer);
        waiting = null;
      }
      return keys.length - pending.size;
    },
  };
}
