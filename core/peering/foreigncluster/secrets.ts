// The two Secrets a consumer keeps per peer: the pre-shared token `liqoctl peer out-of-band` writes
// in the liqo namespace (Liqo's remote-token-<clusterID>), and the identity the provider issued for
// it (a kubeconfig) in the local tenant namespace; plus the client built from that identity.
import { KubeConfig } from "../../kube/kubeconfig.ts";
import { AUTH_TOKEN_LABEL, DISCOVERY_CLUSTER_ID_LABEL } from "../../apis/index.ts";
import { createKubeClient, type KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { Resources, type KubeObject } from "../../kube/resources.ts";

export const remoteTokenSecretName = (clusterId: string) => `remote-token-${clusterId}`;
export const remoteIdentitySecretName = (clusterId: string) => `remote-identity-${clusterId}`;
export const IDENTITY_KUBECONFIG_KEY = "kubeconfig";
export const IDENTITY_NAMESPACE_KEY = "namespace";
const b64 = (s: string) => Buffer.from(s).toString("base64");
const unb64 = (s: string | undefined) => (s ? Buffer.from(s, "base64").toString("utf8") : undefined);

/** The Secret `liqoctl peer out-of-band --auth-token` writes (and this function, for tests and liqoctl). */
export function remoteTokenSecret(liqoNamespace: string, clusterId: string, token: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: "Opaque",
    metadata: {
      name: remoteTokenSecretName(clusterId),
      namespace: liqoNamespace,
      labels: { [AUTH_TOKEN_LABEL]: "", [DISCOVERY_CLUSTER_ID_LABEL]: clusterId },
    },
    data: { token: b64(token) },
  };
}

export async function readRemoteToken(
  client: KubeClient,
  liqoNamespace: string,
  clusterId: string,
): Promise<string | undefined> {
  const secret = await client.find(Resources.secrets, remoteTokenSecretName(clusterId), liqoNamespace);
  return unb64((secret?.data as Record<string, string> | undefined)?.token)?.trim() || undefined;
}

export interface StoredIdentity {
  kubeconfig: string;
  remoteNamespace: string;
}

export async function readIdentity(
  client: KubeClient,
  tenantNamespace: string,
  clusterId: string,
): Promise<StoredIdentity | undefined> {
  const secret = await client.find(Resources.secrets, remoteIdentitySecretName(clusterId), tenantNamespace);
  const data = (secret?.data ?? {}) as Record<string, string>;
  const kubeconfig = unb64(data[IDENTITY_KUBECONFIG_KEY]);
  const remoteNamespace = unb64(data[IDENTITY_NAMESPACE_KEY]);
  return kubeconfig && remoteNamespace ? { kubeconfig, remoteNamespace } : undefined;
}

export async function storeIdentity(
  client: KubeClient,
  tenantNamespace: string,
  clusterId: string,
  identity: StoredIdentity,
): Promise<void> {
  const secret: KubeObject = {
    apiVersion: "v1",
    kind: "Secret",
    type: "Opaque",
    metadata: {
      name: remoteIdentitySecretName(clusterId),
      namespace: tenantNamespace,
      labels: { [DISCOVERY_CLUSTER_ID_LABEL]: clusterId, "liqo.io/identity": "remote" },
    },
    data: {
      [IDENTITY_KUBECONFIG_KEY]: b64(identity.kubeconfig),
      [IDENTITY_NAMESPACE_KEY]: b64(identity.remoteNamespace),
    },
  };
  try {
    await client.create(Resources.secrets, secret);
  } catch (err) {
    if (!(err instanceof KubeApiError && err.conflict)) throw err;
    await client.replace(Resources.secrets, secret);
  }
}

/** A client of the remote cluster acting as the identity it issued to us. */
/** `proxyUrl`: the ForeignCluster's foreignProxyUrl (in-band peering: the peer's API server is reached through its proxy in the tunnel). */
export function peerClient(kubeconfig: string, proxyUrl?: string): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  return createKubeClient(kc, {
    userAgent: "liqo-foreigncluster",
    timeoutMs: 15_000,
    ...(proxyUrl ? { proxy: proxyUrl } : {}),
  });
}
