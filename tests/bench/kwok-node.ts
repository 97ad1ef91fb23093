// A kwok node with room for any bench's pods (cpu 2000, 8 TiB, 20,000 pods), so capacity never
// decides a timing: kwok marks pods bound to it Running without containers.
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { KWOK_NODE_INFO } from "../rig/cluster.ts";

/** A kwok node big enough for the largest run, so capacity never decides the timings. */
export async function bigNode(client: KubeClient, name: string) {
  await client.create(Resources.nodes, {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      annotations: { "kwok.x-k8s.io/node": "fake" },
      labels: { "kubernetes.io/hostname": name, type: "kwok", bench: "big" },
    },
    spec: {},
    status: {
      capacity: { cpu: "2000", memory: "8Ti", pods: "20000" },
      allocatable: { cpu: "2000", memory: "8Ti", pods: "20000" },
      nodeInfo: KWOK_NODE_INFO,
    },
  } as KubeObject);
}
