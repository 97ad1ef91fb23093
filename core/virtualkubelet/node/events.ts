// Events on the virtual Node, in the default namespace as kubelet posts them, so
// `kubectl describe node` shows why the node went NotReady.
import type { KubeClient } from "../../kube/client.ts";
import { Resources } from "../../kube/resources.ts";

export interface NodeEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

export async function postNodeEvent(
  local: KubeClient,
  nodeName: string,
  nodeUid: string | undefined,
  event: NodeEvent,
): Promise<void> {
  const at = new Date().toISOString();
  await local.create(Resources.events, {
    apiVersion: "v1",
    kind: "Event",
    metadata: { generateName: `${nodeName}.`, namespace: "default" },
    involvedObject: { apiVersion: "v1", kind: "Node", name: nodeName, uid: nodeUid ?? nodeName },
    type: event.type,
    reason: event.reason,
    message: event.message,
    source: { component: "liqo-virtual-kubelet", host: nodeName },
    firstTimestamp: at,
    lastTimestamp: at,
    count: 1,
  });
}
