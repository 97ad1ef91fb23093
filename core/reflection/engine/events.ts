// Kubernetes Events on the objects a reflector handles: what a user sees with `kubectl describe`.
// The same (object, reason, message) is recorded once per window, so a failing retry loop does
// not flood the API server.
import type { KubeClient } from "../../kube/client.ts";
import { Resources, type KubeObject } from "../../kube/resources.ts";
import type { Logger } from "../../log.ts";

export interface EventRecorder {
  warning(obj: KubeObject, reason: string, message: string): void;
  normal(obj: KubeObject, reason: string, message: string): void;
}

export function createEventRecorder(client: KubeClient, component: string, logger: Logger, windowMs = 10 * 60_000): EventRecorder {
  const recent = new Map<string, number>();
  function record(type: "Normal" | "Warning", obj: KubeObject, reason: string, message: string) {
    const m = obj.metadata;
    if (!m?.name) return;
    const dedupe = `${m.uid ?? m.namespace + "/" + m.name}|${reason}|${message}`;
    const now = Date.now();
    if ((recent.get(dedupe) ?? 0) > now - windowMs) return;
    recent.set(dedupe, now);
    if (recent.size > 10_000) for (const [k, at] of recent) if (at < now - windowMs) recent.delete(k);
    const namespace = m.namespace ?? "default";
    const stamp = new Date(now).toISOString().replace(/\.\d+Z$/, "Z");
    client.create(Resources.events, {
      apiVersion: "v1", kind: "Event",
      metadata: { generateName: `${m.name}.`, namespace },
      involvedObject: { apiVersion: obj.apiVersion, kind: obj.kind, name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion },
      reason, message: message.slice(0, 1024), type,
      source: { component }, reportingComponent: component,
      firstTimestamp: stamp, lastTimestamp: stamp, count: 1,
    }, namespace).catch((err) => logger.warn("could not record event", { key: `${namespace}/${m.name}`, reason, err }));
  }
  return {
    warning: (obj, reason, message) => record("Warning", obj, reason, message),
    normal: (obj, reason, message) => record("Normal", obj, reason, message),
  };
}
