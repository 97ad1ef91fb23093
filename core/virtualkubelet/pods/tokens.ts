// The origin side of API server support (forge.ts): a token of the local pod's ServiceAccount from
// the TokenRequest API, bound to the local pod (it dies with it, as a kubelet-projected token does),
// and the CA the remote pod verifies the origin API server with. Since Kubernetes 1.24
// ServiceAccounts have no token Secret to copy, which is what Liqo v0.5 used.
import type { KubeClient } from "../../kube/client.ts";
import { Resources, resourcePath, type KubeObject } from "../../kube/resources.ts";
import type { OriginToken, Pod } from "./forge.ts";

/** An hour, as the kubelet's projected tokens; refreshed at REFRESH_AT of its life. */
export const TOKEN_EXPIRATION_SECONDS = 3600;
export const REFRESH_AT = 0.8;

export interface IssuedToken extends OriginToken {
  /** When to ask for the next one (ms since the epoch). */
  refreshAt: number;
}

interface TokenRequest {
  status?: { token?: string; expirationTimestamp?: string };
}

/** One token to ask for: its key in the token Secret, its audience (default: the API server's), its lifetime. */
export interface TokenWanted {
  key: string;
  audience?: string;
  expirationSeconds: number;
}

async function requestToken(
  client: KubeClient,
  local: Pod,
  serviceAccount: string,
  want: TokenWanted,
  now: number,
): Promise<{ token: string; refreshAt: number }> {
  const ns = local.metadata.namespace!;
  const answer = await client.request<TokenRequest>(
    "POST",
    resourcePath(Resources.serviceAccounts, ns, serviceAccount, "token"),
    {
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: {
          ...(want.audience ? { audiences: [want.audience] } : {}),
          expirationSeconds: want.expirationSeconds,
          boundObjectRef: { apiVersion: "v1", kind: "Pod", name: local.metadata.name, uid: local.metadata.uid },
        },
      },
    },
  );
  const token = answer.status?.token;
  if (!token)
    throw new Error(
      `the TokenRequest for service account ${ns}/${serviceAccount}${want.audience ? ` (audience ${want.audience})` : ""} returned no token`,
    );
  const expires = Date.parse(answer.status?.expirationTimestamp ?? "") || now + want.expirationSeconds * 1000;
  return { token, refreshAt: now + Math.max(0, expires - now) * REFRESH_AT };
}

/**
 * Asks the origin API server for every token the remote pod mounts (each bound to the local pod,
 * with its audience and lifetime), with the cluster CA; renewed when the first one is due.
 */
export async function issueTokens(
  client: KubeClient,
  local: Pod,
  serviceAccount: string,
  wanted: TokenWanted[],
  now = Date.now(),
): Promise<IssuedToken> {
  const ns = local.metadata.namespace!;
  const issued = await Promise.all(wanted.map((w) => requestToken(client, local, serviceAccount, w, now)));
  // kube-root-ca.crt is in every namespace: the CA that signs the API server's serving certificate.
  const root = await client.get<KubeObject & { data?: Record<string, string> }>(
    Resources.configMaps,
    "kube-root-ca.crt",
    ns,
  );
  const ca = root.data?.["ca.crt"];
  if (!ca) throw new Error(`ConfigMap ${ns}/kube-root-ca.crt has no ca.crt`);
  const byKey = new Map(wanted.map((w, i) => [w.key, issued[i]!.token]));
  const projected = Object.fromEntries([...byKey].filter(([k]) => k !== "token"));
  return {
    token: byKey.get("token"),
    ca,
    ...(Object.keys(projected).length ? { projected } : {}),
    refreshAt: Math.min(...issued.map((t) => t.refreshAt)),
  };
}

/** Asks the origin API server for a token of the pod's ServiceAccount bound to the pod, with the cluster CA. */
export async function issueToken(
  client: KubeClient,
  local: Pod,
  serviceAccount: string,
  now = Date.now(),
): Promise<IssuedToken> {
  return issueTokens(
    client,
    local,
    serviceAccount,
    [{ key: "token", expirationSeconds: TOKEN_EXPIRATION_SECONDS }],
    now,
  );
}
