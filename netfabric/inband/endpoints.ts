// Where a cluster's in-band endpoints live, and the address a peer reaches them at through the
// tunnel. Like Liqo's liqo-proxy, a cluster taking part in in-band peering runs a proxy inside its
// pod network: the Service liqo-proxy (namespace liqo) whose endpoint is that pod, with two ports:
// "auth" (TCP to the authentication service) and "http" (an HTTP CONNECT proxy to the API server).
// The peer reaches the pod at its remapped address (the pod CIDR as the peer sees it), which the
// gateways route and translate: nothing of the cluster but the gateway is exposed.
import { NetworkConfigResource, type NetworkConfig } from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { networkConfigRole } from "../manager/forge.ts";
import { translateWith, type TranslationSources } from "../manager/translation-watch.ts";

export const PROXY_SERVICE = "liqo-proxy";
export const AUTH_PORT_NAME = "auth";
export const HTTP_PORT_NAME = "http";

export class InBandError extends Error {
  override name = "InBandError";
}

export interface InBandEndpoints {
  /** The proxy pod's IP in its own cluster. */
  ip: string;
  authPort: number;
  proxyPort: number;
}

type Slice = KubeObject & {
  endpoints?: { addresses?: string[]; conditions?: { ready?: boolean } }[];
  ports?: { name?: string; port?: number }[];
};

/** The proxy's endpoint in `client`'s cluster, or an InBandError saying what to deploy. */
export async function readInBandEndpoints(
  client: KubeClient,
  namespace: string,
  cluster: string,
): Promise<InBandEndpoints> {
  const where = `Service ${namespace}/${PROXY_SERVICE} in cluster ${cluster}`;
  if (!(await client.find(Resources.services, PROXY_SERVICE, namespace))) {
    throw new InBandError(
      `${where} does not exist: in-band peering needs liqo's proxy (ports "${AUTH_PORT_NAME}" and "${HTTP_PORT_NAME}") running in that cluster`,
    );
  }
  const slices = (
    await client.list<Slice>(Resources.endpointSlices, {
      namespace,
      labelSelector: `kubernetes.io/service-name=${PROXY_SERVICE}`,
    })
  ).items;
  for (const s of slices) {
    const ip = s.endpoints?.find((e) => e.conditions?.ready !== false && e.addresses?.length)?.addresses?.[0];
    const port = (name: string) => s.ports?.find((p) => p.name === name)?.port;
    const authPort = port(AUTH_PORT_NAME);
    const proxyPort = port(HTTP_PORT_NAME);
    if (ip && authPort && proxyPort) return { ip, authPort, proxyPort };
  }
  throw new InBandError(
    `${where} has no ready endpoint with ports "${AUTH_PORT_NAME}" and "${HTTP_PORT_NAME}": is the proxy pod running?`,
  );
}

/** The translation sources `client`'s cluster holds for its peering with `remoteClusterId`. */
export async function translationSources(
  client: KubeClient,
  tenant: string,
  remoteClusterId: string,
): Promise<TranslationSources> {
  const s: TranslationSources = { remoteClusterId };
  for (const c of (await client.list<NetworkConfig>(NetworkConfigResource, { namespace: tenant })).items) {
    const role = networkConfigRole(c.metadata.labels);
    if (role?.clusterId !== remoteClusterId) continue;
    if (role.local) s.local = c;
    else s.remote = c;
  }
  return s;
}

/** The remote proxy as the local cluster reaches it: its pod IP in the remote pod CIDR as remapped here. */
export function addressSeenLocally(sources: TranslationSources, remote: InBandEndpoints): string {
  return translateWith(sources, remote.ip, "backward");
}
