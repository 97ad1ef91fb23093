// How peers reach the gateway: a Service of type LoadBalancer for the WireGuard port (created when
// missing; the chart's, LoadBalancer or NodePort, is used as it is); when no ingress address
// appears within a timeout (no cloud load balancer, as on bare metal and here), the Service's
// NodePort on a node address is used instead, as Liqo's gateway does.
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { keyOf, Resources } from "../../core/kube/resources.ts";
import type { Node, Service } from "../../core/kube/types.ts";
import { GATEWAY_SERVICE_NAME } from "../shared/labels.ts";

export const GATEWAY_COMPONENT_LABEL = { key: "net.liqo.io/gateway", value: "true" } as const;
/** On the active replica's pod (Liqo selects the leader the same way). */
export const GATEWAY_ROLE_LABEL = "net.liqo.io/gateway-role";
/** On the gateway Service: the WireGuard implementation (kernel, userspace) of the active replica's
 * device, written once it is open; liqoctl status shows it. */
export const WIREGUARD_IMPLEMENTATION_ANNOTATION = "net.liqo.io/wireguard-implementation";

export interface ExposureOptions {
  client: KubeClient;
  namespace: string;
  name?: string;
  port: number;
  /** How long to wait for a load balancer address before falling back to NodePort. */
  loadBalancerTimeoutMs?: number;
  /** The node whose address is announced with the NodePort (default: the first node with an InternalIP). */
  nodeName?: string;
  pollMs?: number;
  /** Announce this ip:port instead (a NAT or a load balancer the cluster does not know about);
   * the Service is still kept, for the standby and for people. */
  endpointOverride?: string;
}

export interface Exposure {
  endpoint: string;
  via: "LoadBalancer" | "NodePort" | "Flag";
  service: string;
}

async function ensureService(o: ExposureOptions, name: string): Promise<Service> {
  const want = {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name,
      namespace: o.namespace,
      labels: { [GATEWAY_COMPONENT_LABEL.key]: GATEWAY_COMPONENT_LABEL.value },
    },
    spec: {
      type: "LoadBalancer",
      // The active replica carries this label (Liqo selects the leader the same way).
      selector: { [GATEWAY_COMPONENT_LABEL.key]: GATEWAY_COMPONENT_LABEL.value, [GATEWAY_ROLE_LABEL]: "active" },
      ports: [{ name: "wireguard", protocol: "UDP", port: o.port, targetPort: o.port }],
    },
  };
  try {
    // A Service that exists belongs to whoever made it (the chart's, typed and selected by its
    // values, or a previous run's): used as it is. Rewriting it would fight Helm.
    return await o.client.get<Service>(Resources.services, name, o.namespace);
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 404)) throw err;
    try {
      return await o.client.create<Service>(Resources.services, want);
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 409)
        return o.client.get<Service>(Resources.services, name, o.namespace);
      throw e;
    }
  }
}

async function nodeAddress(o: ExposureOptions): Promise<string> {
  const nodes = o.nodeName
    ? [await o.client.get<Node>(Resources.nodes, o.nodeName)]
    : (await o.client.list<Node>(Resources.nodes)).items;
  for (const type of ["ExternalIP", "InternalIP"]) {
    for (const n of nodes) {
      const a = n.status?.addresses?.find((x) => x.type === type)?.address;
      if (a) return a;
    }
  }
  throw new Error(
    `no node${o.nodeName ? ` ${o.nodeName}` : ""} has an ExternalIP or InternalIP address to announce with the NodePort; pass --endpoint`,
  );
}

/** Creates or fixes the Service and returns the address peers must use. */
export async function exposeGateway(o: ExposureOptions): Promise<Exposure> {
  const name = o.name ?? GATEWAY_SERVICE_NAME;
  let svc = await ensureService(o, name);
  if (o.endpointOverride) return { endpoint: o.endpointOverride, via: "Flag", service: keyOf(o.namespace, name) };
  // A NodePort Service (the chart's where the cluster has no load balancer) has no address to wait for.
  const deadline = svc.spec?.type === "LoadBalancer" ? Date.now() + (o.loadBalancerTimeoutMs ?? 30_000) : 0;
  for (;;) {
    const ingress = svc.status?.loadBalancer?.ingress?.[0];
    const address = ingress?.ip ?? ingress?.hostname;
    if (address) return { endpoint: `${address}:${o.port}`, via: "LoadBalancer", service: keyOf(o.namespace, name) };
    if (Date.now() >= deadline) break;
    await Bun.sleep(o.pollMs ?? 500); // polling the Service status for a load balancer address, bounded by the deadline
    svc = await o.client.get<Service>(Resources.services, name, o.namespace);
  }
  const nodePort = svc.spec?.ports?.[0]?.nodePort;
  if (!nodePort)
    throw new Error(
      `Service ${o.namespace}/${name} has no load balancer address and no nodePort; check the service controller or pass --endpoint`,
    );
  return { endpoint: `${await nodeAddress(o)}:${nodePort}`, via: "NodePort", service: keyOf(o.namespace, name) };
}
