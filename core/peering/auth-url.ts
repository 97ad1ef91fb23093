// Where peers reach this cluster's authentication service. `liqo auth` records the URL it
// advertises in the ConfigMap liqo-auth-url of the liqo namespace, so `liqoctl generate
// peer-command` can print it; in a real install the liqo-auth Service's external address wins.
import type { KubeClient } from "../kube/client.ts";
import { Resources } from "../kube/resources.ts";
import type { Node, Service } from "../kube/types.ts";
import { ensureNamespace } from "./identity.ts";

export const AUTH_URL_CONFIGMAP = "liqo-auth-url";
export const AUTH_SERVICE = "liqo-auth";

export async function recordAuthUrl(client: KubeClient, liqoNamespace: string, url: string): Promise<void> {
  await ensureNamespace(client, liqoNamespace);
  await client.apply(
    Resources.configMaps,
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: AUTH_URL_CONFIGMAP, namespace: liqoNamespace, labels: { "app.kubernetes.io/name": "auth" } },
      data: { url },
    },
    { fieldManager: "liqo-auth", force: true },
  );
}

/**
 * The advertised URL: the liqo-auth Service's load balancer address, else what liqo auth recorded
 * (its --advertise-url), else, for a NodePort Service, the node port on the InternalIP of a Ready
 * physical node (as Liqo does where there is no load balancer).
 */
export async function readAuthUrl(client: KubeClient, liqoNamespace: string): Promise<string | undefined> {
  const svc = await client.find<Service>(Resources.services, AUTH_SERVICE, liqoNamespace);
  const ingress = svc?.status?.loadBalancer?.ingress?.[0];
  const port = svc?.spec?.ports?.[0];
  if (ingress && port) return `https://${ingress.hostname ?? ingress.ip}:${port.port}`;
  const cm = await client.find(Resources.configMaps, AUTH_URL_CONFIGMAP, liqoNamespace);
  const recorded = (cm?.data as Record<string, string> | undefined)?.url;
  if (recorded) return recorded;
  if (!port?.nodePort || (svc?.spec?.type !== "NodePort" && svc?.spec?.type !== "LoadBalancer")) return undefined;
  const nodes = (await client.list<Node>(Resources.nodes, { labelSelector: "liqo.io/type!=virtual-node" })).items
    .filter((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"))
    .sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!));
  const ip = nodes.map((n) => n.status?.addresses?.find((a) => a.type === "InternalIP")?.address).find(Boolean);
  return ip ? `https://${ip}:${port.nodePort}` : undefined;
}

/**
 * spec.foreignAuthUrl is required, but an in-band peer's auth service has no address until the
 * tunnel is up (`liqoctl peer in-band`, netfabric/inband). Until then the ForeignCluster carries
 * this placeholder (the .invalid TLD never resolves, RFC 2606), which is never contacted.
 */
export const IN_BAND_PENDING_AUTH_URL = "https://liqo-auth.in-band.invalid";
export const WAITING_FOR_TUNNEL = "WaitingForInBandTunnel";
