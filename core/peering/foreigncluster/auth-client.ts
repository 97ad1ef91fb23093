// The consumer's side of the authentication service (core/peering/auth/server.ts): who the remote
// cluster says it is (GET /ids) and the identity it issues for the pre-shared token (POST /identity).
// Every outcome is a value, never a throw, so the controller maps each one to a condition.
import type { IdentityResponse } from "../auth/server.ts";

export type AuthAnswer<T> =
  | { ok: true; value: T }
  /** HTTP status 0: no answer (refused, DNS, TLS, timeout). */
  | { ok: false; status: number; message: string; retryAfterSeconds?: number; reason?: string };

export interface AuthCallOptions {
  insecureSkipTLSVerify?: boolean;
  timeoutMs?: number;
}

async function call<T>(url: string, init: RequestInit, o: AuthCallOptions): Promise<AuthAnswer<T>> {
  let res: Response;
  try {
    res = await fetch(url, {
      ...init,
      signal: AbortSignal.timeout(o.timeoutMs ?? 10_000),
      // Liqo's default: the auth service's certificate is often self-signed (insecureSkipTLSVerify defaults to true).
      tls: { rejectUnauthorized: !o.insecureSkipTLSVerify },
    } as RequestInit);
  } catch (err) {
    const e = err as Error & { code?: string };
    return { ok: false, status: 0, message: `cannot reach ${url}: ${e.code ? `${e.code} ` : ""}${e.message}` };
  }
  const text = await res.text().catch(() => "");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const message = (body as { message?: string } | undefined)?.message ?? (text.slice(0, 300) || res.statusText);
    const retry = Number(res.headers.get("retry-after"));
    const reason = (body as { error?: unknown } | undefined)?.error;
    return {
      ok: false,
      status: res.status,
      message,
      ...(retry > 0 ? { retryAfterSeconds: retry } : {}),
      ...(typeof reason === "string" ? { reason } : {}),
    };
  }
  if (body === undefined)
    return {
      ok: false,
      status: res.status,
      message: `${url} answered HTTP ${res.status} with a body that is not JSON`,
    };
  return { ok: true, value: body as T };
}

const join = (base: string, path: string) => `${base.replace(/\/+$/, "")}${path}`;

export interface RemoteIds {
  clusterId: string;
  clusterName: string;
}

export async function fetchRemoteIds(authUrl: string, o: AuthCallOptions = {}): Promise<AuthAnswer<RemoteIds>> {
  const answer = await call<Partial<RemoteIds>>(join(authUrl, "/ids"), { method: "GET" }, o);
  if (!answer.ok) return answer;
  const { clusterId, clusterName } = answer.value;
  if (typeof clusterId !== "string" || !clusterId || typeof clusterName !== "string") {
    return {
      ok: false,
      status: 200,
      message: `${authUrl}/ids did not answer {clusterId, clusterName}; is ${authUrl} a liqo authentication service?`,
    };
  }
  return { ok: true, value: { clusterId, clusterName } };
}

export async function requestIdentity(
  authUrl: string,
  local: { clusterID: string; clusterName: string },
  token: string,
  o: AuthCallOptions & { peerToken?: string } = {},
): Promise<AuthAnswer<IdentityResponse>> {
  const answer = await call<IdentityResponse>(
    join(authUrl, "/identity"),
    {
      method: "POST",
      headers: { "content-type": "application/json" },
      // peerToken: our own auth token, so that the provider may peer back (core/peering/auth/request.ts).
      body: JSON.stringify({ cluster: local, token, ...(o.peerToken ? { peerToken: o.peerToken } : {}) }),
    },
    o,
  );
  if (!answer.ok) return answer;
  if (typeof answer.value.kubeconfig !== "string" || typeof answer.value.namespace !== "string") {
    return { ok: false, status: 200, message: `${authUrl}/identity answered without a kubeconfig and namespace` };
  }
  return answer;
}
