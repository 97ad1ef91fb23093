// Does this cluster hand out load balancer addresses? A LoadBalancer Service never gets one where
// no controller runs (bare clusters, the test rig), and `helm install --wait` then waits for it
// until the timeout and rolls the release back. So before installing the auth and gateway Services
// as LoadBalancer, liqoctl asks: a throwaway LoadBalancer Service without selector, then deleted.
//
// A load balancer controller that exists touches such a Service within a second or two, before it
// has an address: the cloud providers' service controller and the AWS controller add a finalizer,
// MetalLB and Cilium write its status, and most record an event on it. So the probe waits a short
// quiet period for any sign of a controller; with none, there is no controller and it says so at
// once. With one, it waits for the address up to the (longer) timeout, for clouds that take a while.
// No address: NodePort (a LoadBalancer Service allocates a node port as well, so peers reach the
// same ports either way).
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { Event, Service } from "../../core/kube/types.ts";

export interface LoadBalancerProbe {
  available: boolean;
  /** The address the probe got, or why there is none (for the install notes). */
  note: string;
}

export interface ProbeOptions {
  namespace?: string;
  /** How long to wait for any sign of a load balancer controller (default 5 s). */
  quietMs?: number;
  /** How long to wait for an address once a controller has shown itself (default 60 s). */
  timeoutMs?: number;
  intervalMs?: number;
}

const FALLBACK = "auth and gateway Services fall back to NodePort; force it with --set auth.service.type=LoadBalancer";

/** What shows a controller at work on the probe Service, or undefined while nothing has touched it. */
async function controllerSign(client: KubeClient, svc: Service, createdVersion: string): Promise<string | undefined> {
  const finalizer = svc.metadata.finalizers?.[0];
  if (finalizer) return `finalizer ${finalizer}`;
  const condition = (svc.status as { conditions?: { type?: string }[] } | undefined)?.conditions?.[0]?.type;
  if (condition) return `condition ${condition}`;
  if (svc.metadata.resourceVersion !== createdVersion) return "the Service was updated";
  const events = await client
    .list<Event>(Resources.events, {
      namespace: svc.metadata.namespace,
      fieldSelector: `involvedObject.kind=Service,involvedObject.name=${svc.metadata.name}`,
    })
    .catch(() => undefined);
  const reason = events?.items[0]?.reason;
  return reason ? `event ${reason}` : undefined;
}

export async function probeLoadBalancer(client: KubeClient, o: ProbeOptions = {}): Promise<LoadBalancerProbe> {
  const namespace = o.namespace ?? "default";
  const quietMs = o.quietMs ?? 5_000;
  const timeoutMs = o.timeoutMs ?? 60_000;
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
  const started = Date.now();
  let sign: string | undefined;
  try {
    for (;;) {
      const svc = await client.find<Service>(Resources.services, name, namespace);
      if (!svc) return { available: false, note: `the probe Service ${namespace}/${name} was deleted: using NodePort` };
      const first = svc.status?.loadBalancer?.ingress?.[0];
      if (first?.ip || first?.hostname)
        return {
          available: true,
          note: `a load balancer is available (a probe Service got ${first.ip ?? first.hostname}): auth and gateway Services are LoadBalancer`,
        };
      sign ??= await controllerSign(client, svc, created.metadata.resourceVersion!);
      const waited = Date.now() - started;
      if (!sign && waited >= quietMs)
        return {
          available: false,
          note: `no load balancer controller touched a probe LoadBalancer Service within ${Math.round(quietMs / 1000)}s: ${FALLBACK}`,
        };
      if (sign && waited >= timeoutMs)
        return {
          available: false,
          note: `a load balancer controller answered the probe Service (${sign}) but gave no address within ${Math.round(timeoutMs / 1000)}s: ${FALLBACK}`,
        };
      await Bun.sleep(o.intervalMs ?? 500);
    }
  } finally {
    await client.delete(Resources.services, name, namespace).catch(() => false);
  }
}
