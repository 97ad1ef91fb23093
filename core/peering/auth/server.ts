// The authentication service (Liqo's liqo-auth): over HTTPS, `GET /ids` tells who this cluster is,
// and `POST /identity` trades the pre-shared token for an identity of the caller here (tenant
// namespace, ServiceAccount token, RBAC) plus a kubeconfig to use it. Errors are JSON
// {error, message[, field]} with a 4xx status the caller can act on; nothing leaks a stack.
import type { KubeClient } from "../../kube/client.ts";
import type { Registry } from "../../metrics/index.ts";
import { silentLogger, type Logger } from "../../log.ts";
import type { LocalClusterIdentity } from "../identity.ts";
import { peerKubeconfig } from "./kubeconfig.ts";
import { createFailureLimiter, type FailureLimiterOptions } from "./rate-limit.ts";
import { parseIdentityRequest } from "./request.ts";
import { ensurePeeringRbac } from "./rbac.ts";
import { IdentityConflictError, issueIdentity } from "./tenant.ts";
import { readAuthToken, tokensEqual } from "./token.ts";
import { foreignClusterOf, incomingAllowed, incomingDisabledMessage } from "../incoming.ts";
import { remoteTokenSecret } from "../foreigncluster/secrets.ts";
import { Resources } from "../../kube/resources.ts";
import { createTwinBinder, type TwinBinder } from "./twin-binder.ts";

/** Liqo's paths (pkg/auth/const.go). */
export const IDS_PATH = "/ids";
export const IDENTITY_PATH = "/identity";
export const CERT_IDENTITY_PATH = "/identity/certificate";
const MAX_BODY = 64 * 1024;

export interface AuthServerOptions {
  client: KubeClient;
  liqoNamespace?: string;
  clusterIdentity: LocalClusterIdentity;
  /** The API server URL peers use, and the PEM of the CA that signs it (omit for a public CA). */
  apiServerUrl: string;
  apiServerCa?: string;
  /** Paths of the serving certificate and key (PEM). */
  tls: { cert: string; key: string };
  host?: string;
  port?: number;
  logger?: Logger;
  registry?: Registry;
  rateLimit?: FailureLimiterOptions;
  /** Run the twin-namespace binder in this process (default true). */
  twinBinder?: boolean;
  tokenTimeoutMs?: number;
}

/** Liqo's response fields (CertificateIdentityResponse) with a token instead of a certificate, plus a ready kubeconfig. */
export interface IdentityResponse {
  namespace: string;
  apiServerUrl: string;
  apiServerCA?: string;
  token: string;
  kubeconfig: string;
}

export interface AuthServer {
  readonly url: string;
  readonly port: number;
  /** True once the twin binder's caches are synced (or it is off). */
  readonly ready: boolean;
  stop(): Promise<void>;
}

const problem = (
  status: number,
  error: string,
  message: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) => Response.json({ error, message, ...extra }, { status, headers });

export async function createAuthServer(o: AuthServerOptions): Promise<AuthServer> {
  const liqoNamespace = o.liqoNamespace ?? "liqo";
  const log = (o.logger ?? silentLogger).child({ component: "auth" });
  const limiter = createFailureLimiter(o.rateLimit);
  const requests = o.registry?.counter({
    name: "liqo_auth_identity_requests_total",
    help: "Identity requests by outcome.",
    labelNames: ["outcome"],
  });
  const count = (outcome: string) => requests?.inc({ outcome });
  const local = o.clusterIdentity;

  await ensurePeeringRbac(o.client);
  let binder: TwinBinder | undefined;
  if (o.twinBinder !== false) {
    binder = createTwinBinder({ client: o.client, logger: log });
    await binder.start();
  }

  async function identity(req: Request, ip: string): Promise<Response> {
    const wait = limiter.blockedFor(ip);
    if (wait > 0) {
      count("throttled");
      const seconds = Math.ceil(wait / 1000);
      return problem(
        429,
        "TooManyRequests",
        `too many failed attempts from ${ip}; retry in ${seconds}s`,
        {},
        { "retry-after": String(seconds) },
      );
    }
    const length = Number(req.headers.get("content-length") ?? 0);
    if (length > MAX_BODY)
      return problem(413, "PayloadTooLarge", `the body has ${length} bytes; an identity request is a few hundred`);
    const text = await req.text();
    if (text.length > MAX_BODY) return problem(413, "PayloadTooLarge", "the body is too large for an identity request");
    const parsed = parseIdentityRequest(text);
    if (!parsed.ok) {
      count("invalid");
      return problem(400, "BadRequest", parsed.message, { field: parsed.field });
    }
    const { cluster, token, peerToken } = parsed.value;

    const expected = await readAuthToken(o.client, liqoNamespace);
    if (!expected) {
      log.error(
        `no auth token: the Secret ${liqoNamespace}/auth-token is missing or empty; restart liqo auth to create one`,
      );
      count("unconfigured");
      return problem(503, "ServiceUnavailable", "this cluster has no auth token configured yet; retry later");
    }
    if (!tokensEqual(token, expected)) {
      limiter.fail(ip);
      count("unauthorized");
      log.warn("identity request with a wrong token", {
        client: ip,
        remoteClusterId: cluster.clusterID,
        remoteClusterName: cluster.clusterName,
      });
      return problem(
        401,
        "Unauthorized",
        `the auth token is wrong or has been revoked; ask the administrator of ${local.clusterName} for the current one (liqoctl generate peer-command)`,
      );
    }
    limiter.succeed(ip);
    if (cluster.clusterID === local.clusterId) {
      count("self");
      return problem(
        400,
        "BadRequest",
        `cluster.clusterID ${cluster.clusterID} is this cluster's own ID: a cluster cannot peer with itself`,
        { field: "cluster.clusterID" },
      );
    }

    // Checked after the token, so that a caller without it learns nothing about our ForeignClusters.
    const known = await foreignClusterOf(o.client, cluster.clusterID);
    if (!incomingAllowed(known)) {
      count("incoming-disabled");
      log.warn("identity request refused: incoming peering disabled", {
        remoteClusterId: cluster.clusterID,
        foreignCluster: known?.metadata.name,
      });
      return problem(
        403,
        "IncomingPeeringDisabled",
        incomingDisabledMessage(known!.metadata.name!, cluster.clusterName, local.clusterName),
      );
    }

    try {
      const issued = await issueIdentity(o.client, cluster, { tokenTimeoutMs: o.tokenTimeoutMs });
      count("issued");
      // The caller's own token, kept where liqoctl peer out-of-band would put it: liqoctl peer
      // <caller> here then peers back with it. A caller may only ever set its own cluster's token.
      if (peerToken) {
        await o.client.apply(Resources.secrets, remoteTokenSecret(liqoNamespace, cluster.clusterID, peerToken), {
          fieldManager: "liqo-auth",
          force: true,
        });
      }
      log.info("identity issued", {
        remoteClusterId: cluster.clusterID,
        remoteClusterName: cluster.clusterName,
        namespace: issued.namespace,
        client: ip,
      });
      const body: IdentityResponse = {
        namespace: issued.namespace,
        apiServerUrl: o.apiServerUrl,
        ...(o.apiServerCa ? { apiServerCA: Buffer.from(o.apiServerCa).toString("base64") } : {}),
        token: issued.token,
        kubeconfig: peerKubeconfig({
          clusterName: local.clusterName,
          apiServerUrl: o.apiServerUrl,
          apiServerCa: o.apiServerCa,
          token: issued.token,
          namespace: issued.namespace,
          userName: `liqo-${cluster.clusterName}`,
        }),
      };
      // Liqo answers 202 Accepted to an identity request.
      return Response.json(body, { status: 202 });
    } catch (err) {
      if (err instanceof IdentityConflictError) {
        count("conflict");
        log.warn("identity request refused", { remoteClusterId: cluster.clusterID, reason: err.message });
        return problem(409, "Conflict", err.message);
      }
      count("error");
      log.error("issuing an identity failed", { remoteClusterId: cluster.clusterID, err });
      return problem(
        500,
        "InternalError",
        `could not issue the identity of cluster ${cluster.clusterID}: ${(err as Error).message}`,
      );
    }
  }

  const server = Bun.serve({
    hostname: o.host ?? "127.0.0.1",
    port: o.port ?? 0,
    tls: { cert: Bun.file(o.tls.cert), key: Bun.file(o.tls.key) },
    async fetch(req, srv) {
      const path = new URL(req.url).pathname;
      const ip = srv.requestIP(req)?.address ?? "unknown";
      try {
        if (path === IDS_PATH) {
          if (req.method !== "GET") return problem(405, "MethodNotAllowed", `${IDS_PATH} answers GET`);
          return Response.json({ clusterId: local.clusterId, clusterName: local.clusterName });
        }
        if (path === IDENTITY_PATH) {
          if (req.method !== "POST")
            return problem(
              405,
              "MethodNotAllowed",
              `${IDENTITY_PATH} answers POST with {cluster: {clusterID, clusterName}, token}`,
            );
          return await identity(req, ip);
        }
        if (path === CERT_IDENTITY_PATH) {
          return problem(
            501,
            "NotImplemented",
            `certificate identities are not issued here; POST ${IDENTITY_PATH} with {cluster: {clusterID, clusterName}, token} for a ServiceAccount identity`,
          );
        }
        if (path === "/healthz") return new Response("ok");
        return problem(
          404,
          "NotFound",
          `nothing at ${path}; the auth service serves GET ${IDS_PATH} and POST ${IDENTITY_PATH}`,
        );
      } catch (err) {
        log.error("request failed", { path, err });
        return problem(500, "InternalError", "the request failed; see the auth service's log");
      }
    },
  });
  log.info("auth service listening", {
    url: `https://${server.hostname}:${server.port}`,
    clusterId: local.clusterId,
    clusterName: local.clusterName,
  });

  return {
    url: `https://${server.hostname}:${server.port}`,
    port: server.port!,
    get ready() {
      return !binder || binder.synced;
    },
    async stop() {
      server.stop(true);
      await binder?.stop();
    },
  };
}
