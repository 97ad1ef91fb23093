// The identity request, in Liqo's shape (pkg/auth ServiceAccountIdentityRequest):
// {"cluster": {"clusterID": "...", "clusterName": "..."}, "token": "..."}. Errors name the field.
// Not in Liqo's request: an optional `peerToken`, the caller's own auth token, which it sends when
// it lets this cluster peer back (its ForeignCluster for us does not say incomingPeeringEnabled: No),
// so that `liqoctl peer <caller>` here needs no token of its own (the reverse shortcut).
import { clusterIdProblem, clusterNameProblem } from "../identity.ts";

export interface IdentityRequest {
  cluster: { clusterID: string; clusterName: string };
  token: string;
  peerToken?: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

const PEER_TOKEN = /^[A-Za-z0-9._~+/=-]{1,1024}$/;
const EXAMPLE = `{"cluster": {"clusterID": "<uuid>", "clusterName": "<name>"}, "token": "<auth token>"}`;

export function parseIdentityRequest(text: string): Parsed<IdentityRequest> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, field: "body", message: `the body is not JSON; expected ${EXAMPLE}` };
  }
  if (!body || typeof body !== "object" || Array.isArray(body))
    return { ok: false, field: "body", message: `the body must be a JSON object: ${EXAMPLE}` };
  const b = body as Record<string, unknown>;
  const cluster = b.cluster;
  if (cluster === undefined || cluster === null)
    return { ok: false, field: "cluster", message: `cluster is required: ${EXAMPLE}` };
  if (typeof cluster !== "object" || Array.isArray(cluster))
    return { ok: false, field: "cluster", message: "cluster must be an object with clusterID and clusterName" };
  const c = cluster as Record<string, unknown>;
  for (const field of ["clusterID", "clusterName"] as const) {
    if (c[field] === undefined || c[field] === "")
      return { ok: false, field: `cluster.${field}`, message: `cluster.${field} is required` };
    if (typeof c[field] !== "string")
      return { ok: false, field: `cluster.${field}`, message: `cluster.${field} must be a string` };
  }
  const idProblem = clusterIdProblem(c.clusterID as string);
  if (idProblem) return { ok: false, field: "cluster.clusterID", message: `cluster.clusterID: ${idProblem}` };
  const nameProblem = clusterNameProblem(c.clusterName as string);
  if (nameProblem) return { ok: false, field: "cluster.clusterName", message: `cluster.clusterName: ${nameProblem}` };
  if (b.token === undefined || b.token === "")
    return {
      ok: false,
      field: "token",
      message: "token is required: the provider's auth token (liqoctl generate peer-command prints it)",
    };
  if (typeof b.token !== "string") return { ok: false, field: "token", message: "token must be a string" };
  if (b.token.length > 1024) return { ok: false, field: "token", message: "token is too long to be an auth token" };
  const peerToken = b.peerToken;
  if (peerToken !== undefined && peerToken !== null && peerToken !== "") {
    if (typeof peerToken !== "string")
      return { ok: false, field: "peerToken", message: "peerToken must be a string: the caller's own auth token" };
    if (!PEER_TOKEN.test(peerToken))
      return {
        ok: false,
        field: "peerToken",
        message: "peerToken must be an auth token: 1 to 1024 letters, digits or -._~+/= (no spaces)",
      };
  }
  return {
    ok: true,
    value: {
      cluster: { clusterID: c.clusterID as string, clusterName: c.clusterName as string },
      token: b.token,
      ...(peerToken ? { peerToken } : {}),
    },
  };
}
