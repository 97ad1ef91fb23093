// Does this cluster hand out load balancer addresses? A LoadBalancer Service never gets one where
// no controller runs (bare clusters, the test rig), and `helm install --wait` then waits for it
// until the timeout and rolls the release back. So before installing the auth and gateway Services
// as LoadBalancer, liqoctl asks: a throwaway LoadBalancer Service without selector, watched for an
// ingress address for a few seconds, then deleted. No address: NodePort (a LoadBalancer Service
// allocates a node port as well, so peers reach the same ports either way).
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { Service } from "../../core/kube/types.ts";

export interface LoadBalancerProbe {
  available: boolean;
  /** The address the probe got, or why there is none (for the install notes). */
  note: string;
}

export async function probeLoadBalancer(
  client: KubeClient,
  o: { namespace?: string; timeoutMs?: number; intervalMs?: number } = {},
): Promise<LoadBalancerProbe> {
  const namespace = o.namespace ?? "default";
  const timeoutMs = o.timeoutMs ?? 20_000;
  let created: Service;
  try {
    created = await client.create<Service>(Resources.services, {
      apiVersion: "v1",
      kind: "Service",
      metadata: { generateName: "liqoctl-lb-probe-", namespace, labels: { "app.kubernetes.io/managed-by": "liqoctl" } },
      spec: { type: "LoadBalancer", ports: [{ name: "probe", port: 443, protocol: "TCP" }] },
    } as KubeObject);
  } catch (err) {
    return {
      available: false,
      note: `could not create a LoadBalancer Service in namespace ${namespace} to check for a load balancer (${(err as Error).message}): using NodePort`,
    };
  }
  const name = created.metadata.name!;
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const svc = await client.find<Service>(Resources.services, name, namespace);
      const first = svc?.status?.loadBalancer?.ingress?.[0];
      if (first?.ip || first?.hostname)
        return {
          available: true,
          note: `a load balancer is available (a probe Service got ${first.ip ?? first.hostname}): auth and gateway Services are LoadBalancer`,
        };
      await Bun.sleep(o.intervalMs ?? 500);
    }
    return {
      available: false,
      note: `no load balancer address within ${Math.round(timeoutMs / 1000)}s (no load balancer controller?): auth and gateway Services fall back to NodePort; force it with --set auth.service.type=LoadBalancer`,
    };
  } finally {
    await client.delete(Resources.services, name, namespace).catch(() => false);
  }
}
