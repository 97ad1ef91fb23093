// A Deployment whose pods carry app=<name>, for tests and benches that need one: `podSpec` is the
// whole pod spec (containers included), as each caller wants its own image and placement.
import type { KubeObject } from "../../core/kube/resources.ts";

export function appDeployment(o: {
  name: string;
  namespace: string;
  replicas: number;
  podSpec: Record<string, unknown>;
}): KubeObject {
  const labels = { app: o.name };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: o.name, namespace: o.namespace },
    spec: {
      replicas: o.replicas,
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: o.podSpec },
    },
  } as KubeObject;
}
