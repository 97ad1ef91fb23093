// Kubernetes Events on the objects a reflector handles: what a user sees with `kubectl describe`.
// The same (object, reason, message) is recorded once per window, so a failing retry loop does
// not flood the API server. A write the API server could not take right now (timeout, 5xx, 429,
// a generated name that collided) is retried with backoff, and one that finally fails frees its
// slot in the window, so the next occurrence records it: an Event is never dropped silently.
import type { KubeClient } from "./client.ts";
import { KubeApiError } from "./errors.ts";
import { keyOf, objectKey, Resources, type KubeObject } from "./resources.ts";
import type { Logger } from "../log.ts";

export interface EventRecorder {
  warning(obj: KubeObject, reason: string, message: string): void;
  normal(obj: KubeObject, reason: string, message: string): void;
  /** Resolves once every Event recorded so far is written or given up on. */
  flush(): Promise<void>;
}

export interface EventRecorderOptions {
  windowMs?: number;
  /** Attempts per Event for transient failures (default 6, about 6 s of backoff in all). */
  attempts?: number;
  baseDelayMs?: number;
}

/** Worth another attempt: no answer, an overloaded or failing server, or a generateName collision. */
export function isTransientEventError(err: unknown): boolean {
  if (!(err instanceof KubeApiError)) return true;
  return err.status === 0 || err.status === 409 || err.status === 429 || err.status >= 500;
}

export function createEventRecorder(
  client: KubeClient,
  component: string,
  logger: Logger,
  options: EventRecorderOptions | number = {},
): EventRecorder {
  const o = typeof options === "number" ? { windowMs: options } : options;
  const windowMs = o.windowMs ?? 10 * 60_000;
  const attempts = o.attempts ?? 6;
  const baseDelayMs = o.baseDelayMs ?? 200;
  const recent = new Map<string, number>();
  const pending = new Set<Promise<void>>();

  async function write(body: Record<string, unknown>, namespace: string, dedupe: string, key: string, reason: string) {
    for (let attempt = 1; ; attempt++) {
      try {
        await client.create(Resources.events, body as KubeObject, namespace);
        return;
      } catch (err) {
        if (attempt >= attempts || !isTransientEventError(err)) {
          recent.delete(dedupe);
          logger.warn("could not record event", { key, reason, attempts: attempt, err });
          return;
        }
        await Bun.sleep(Math.min(baseDelayMs * 2 ** (attempt - 1), 5_000));
      }
    }
  }

  function record(type: "Normal" | "Warning", obj: KubeObject, reason: string, message: string) {
    const m = obj.metadata;
    if (!m?.name) return;
    const dedupe = `${m.uid ?? objectKey(obj)}|${reason}|${message}`;
    const now = Date.now();
    if ((recent.get(dedupe) ?? 0) > now - windowMs) return;
    recent.set(dedupe, now);
    if (recent.size > 10_000) for (const [k, at] of recent) if (at < now - windowMs) recent.delete(k);
    const namespace = m.namespace ?? "default";
    const stamp = new Date(now).toISOString().replace(/\.\d+Z$/, "Z");
    const body = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { generateName: `${m.name}.`, namespace },
      involvedObject: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resourceVersion: m.resourceVersion,
      },
      reason,
      message: message.slice(0, 1024),
      type,
      source: { component },
      reportingComponent: component,
      firstTimestamp: stamp,
      lastTimestamp: stamp,
      count: 1,
    };
    const done = write(body, namespace, dedupe, keyOf(namespace, m.name), reason).finally(() => pending.delete(done));
    pending.add(done);
  }
  return {
    warning: (obj, reason, message) => record("Warning", obj, reason, message),
    normal: (obj, reason, message) => record("Normal", obj, reason, message),
    flush: async () => {
      while (pending.size) await Promise.all([...pending]);
    },
  };
}
