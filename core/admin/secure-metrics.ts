// /metrics for an in-cluster Prometheus, as controller-runtime's "secure metrics" serve it: a
// listener of its own (pod IP, HTTPS) that answers GET /metrics and nothing else, and lets the API
// server decide who may scrape. A bearer token goes through a TokenReview (who is it?) and a
// SubjectAccessReview (may it get the non-resource URL /metrics?), so access is granted with RBAC
// like any other, instead of with a token the chart would have to share.
import { Hono } from "hono";
import * as v from "valibot";
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError } from "../kube/errors.ts";
import { resourcePath, type ResourceRef } from "../kube/resources.ts";
import { silentLogger, type Logger } from "../log.ts";
import { PROMETHEUS_CONTENT_TYPE, type Registry } from "../metrics/index.ts";
import { AdminConfigError } from "./auth.ts";
import { createErrorHandler, notFound, problemResponse } from "./problem.ts";

export type MetricsDecision =
  | { allowed: true; user: string }
  | { allowed: false; status: 401 | 403 | 503; reason: string };

export interface MetricsAuthorizer {
  authorize(token: string | undefined): Promise<MetricsDecision>;
}

export interface KubeMetricsAuthorizerOptions {
  /** How long an allowed token is trusted without asking again (default 60 s). */
  allowTtlMs?: number;
  /** How long a refused token (401/403) is refused without asking again (default 10 s). */
  denyTtlMs?: number;
  /** Tokens remembered at most; the oldest decision goes first (default 1000). */
  maxEntries?: number;
  now?: () => number;
  /** Budget for both reviews of one scrape (default 5 s, below Prometheus' 10 s scrape timeout). */
  timeoutMs?: number;
  logger?: Logger;
}

/** The ClusterRole the chart binds to scrapers: get on the non-resource URL /metrics. */
export const METRICS_READER_CLUSTERROLE = "liqo-metrics-reader";
export const METRICS_PATH = "/metrics";

const TokenReviews: ResourceRef = {
  group: "authentication.k8s.io",
  version: "v1",
  kind: "TokenReview",
  plural: "tokenreviews",
  namespaced: false,
};
const SubjectAccessReviews: ResourceRef = {
  group: "authorization.k8s.io",
  version: "v1",
  kind: "SubjectAccessReview",
  plural: "subjectaccessreviews",
  namespaced: false,
};

interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}
interface TokenReviewAnswer {
  status?: { authenticated?: boolean; user?: UserInfo; error?: string };
}
interface AccessReviewAnswer {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

const OptionsSchema = v.object({
  allowTtlMs: v.pipe(v.number(), v.minValue(0, "allowTtlMs must not be negative")),
  denyTtlMs: v.pipe(v.number(), v.minValue(0, "denyTtlMs must not be negative")),
  maxEntries: v.pipe(
    v.number(),
    v.integer("maxEntries must be an integer"),
    v.minValue(1, "maxEntries must be 1 or more"),
  ),
  timeoutMs: v.pipe(v.number(), v.minValue(1, "timeoutMs must be positive")),
});

const NO_TOKEN: MetricsDecision = {
  allowed: false,
  status: 401,
  reason: "no bearer token: send Authorization: Bearer <ServiceAccount token>",
};

// Keyed by a digest: the cache outlives the request, and must not keep a scraper's token in memory.
function digest(token: string): string {
  return new Bun.CryptoHasher("sha256").update(token).digest("hex");
}

function unavailable(step: string, err: unknown): MetricsDecision {
  const message = err instanceof Error ? err.message : String(err);
  const hint =
    err instanceof KubeApiError && err.status === 403
      ? ` (the role's ServiceAccount needs create on ${step}; bind the ClusterRole system:auth-delegator)`
      : "";
  return { allowed: false, status: 503, reason: `cannot ask the API server (${step}): ${message}${hint}` };
}

export function kubeMetricsAuthorizer(
  client: KubeClient,
  o: KubeMetricsAuthorizerOptions = {},
): MetricsAuthorizer & { reviews(): number } {
  const checked = v.safeParse(OptionsSchema, {
    allowTtlMs: o.allowTtlMs ?? 60_000,
    denyTtlMs: o.denyTtlMs ?? 10_000,
    maxEntries: o.maxEntries ?? 1000,
    timeoutMs: o.timeoutMs ?? 5000,
  });
  if (!checked.success)
    throw new AdminConfigError(
      `invalid metrics authorizer options: ${checked.issues.map((i) => i.message).join("; ")}`,
    );
  const { allowTtlMs, denyTtlMs, maxEntries, timeoutMs } = checked.output;
  const now = o.now ?? Date.now;
  const logger = o.logger ?? silentLogger;
  // Map order is insertion order, so the first key is always the oldest decision.
  const cache = new Map<string, { decision: MetricsDecision; expires: number }>();
  // Scrapes that arrive while their token is being reviewed wait for that review, not a new one.
  const inflight = new Map<string, Promise<MetricsDecision>>();
  let reviews = 0;

  const post = async <T>(res: ResourceRef, spec: Record<string, unknown>, signal: AbortSignal): Promise<T> => {
    reviews++;
    return client.request<T>("POST", resourcePath(res), {
      body: { apiVersion: `${res.group}/${res.version}`, kind: res.kind, metadata: {}, spec },
      key: res.kind,
      signal,
    });
  };

  const remember = (key: string, decision: MetricsDecision) => {
    // API errors are not remembered: the next scrape should find a recovered API server at once.
    const ttl = decision.allowed ? allowTtlMs : decision.status === 503 ? 0 : denyTtlMs;
    if (ttl <= 0) return;
    cache.delete(key);
    cache.set(key, { decision, expires: now() + ttl });
    while (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
  };

  const review = async (token: string): Promise<MetricsDecision> => {
    const signal = AbortSignal.timeout(timeoutMs);
    let who: TokenReviewAnswer;
    try {
      who = await post<TokenReviewAnswer>(TokenReviews, { token }, signal);
    } catch (err) {
      logger.warn("metrics scrape: TokenReview failed", { err });
      return unavailable("tokenreviews.authentication.k8s.io", err);
    }
    const user = who.status?.user;
    if (!who.status?.authenticated || !user?.username) {
      const why = who.status?.error ? `: ${who.status.error}` : "";
      logger.debug("metrics scrape refused: token not authenticated", { error: who.status?.error });
      return { allowed: false, status: 401, reason: `the bearer token is not authenticated by the API server${why}` };
    }
    let may: AccessReviewAnswer;
    try {
      may = await post<AccessReviewAnswer>(
        SubjectAccessReviews,
        {
          user: user.username,
          uid: user.uid,
          groups: user.groups,
          extra: user.extra,
          nonResourceAttributes: { path: METRICS_PATH, verb: "get" },
        },
        signal,
      );
    } catch (err) {
      logger.warn("metrics scrape: SubjectAccessReview failed", { user: user.username, err });
      return unavailable("subjectaccessreviews.authorization.k8s.io", err);
    }
    if (may.status?.allowed) return { allowed: true, user: user.username };
    const why = may.status?.reason || may.status?.evaluationError;
    logger.debug("metrics scrape refused: not authorized", { user: user.username, reason: why });
    return {
      allowed: false,
      status: 403,
      reason:
        `user ${JSON.stringify(user.username)} may not get ${METRICS_PATH}${why ? ` (${why})` : ""}; ` +
        `bind the ClusterRole ${METRICS_READER_CLUSTERROLE} (get on the non-resource URL ${METRICS_PATH}) to it`,
    };
  };

  return {
    async authorize(token) {
      if (!token) return NO_TOKEN;
      const key = digest(token);
      const hit = cache.get(key);
      if (hit && hit.expires > now()) return hit.decision;
      if (hit) cache.delete(key);
      let pending = inflight.get(key);
      if (!pending) {
        pending = review(token)
          .then((decision) => {
            remember(key, decision);
            return decision;
          })
          .finally(() => inflight.delete(key));
        inflight.set(key, pending);
      }
      return pending;
    },
    reviews: () => reviews,
  };
}

const REALM = 'Bearer realm="liqo-metrics"';
const problemReasons = { 401: "Unauthorized", 403: "Forbidden", 503: "ServiceUnavailable" } as const;

function refused(decision: Extract<MetricsDecision, { allowed: false }>, hasToken: boolean): Response {
  const challenge =
    decision.status === 401
      ? REALM + (hasToken ? ', error="invalid_token"' : "")
      : decision.status === 403
        ? `${REALM}, error="insufficient_scope"`
        : undefined;
  return problemResponse({
    status: decision.status,
    reason: problemReasons[decision.status],
    detail: decision.reason,
    headers: challenge ? { "www-authenticate": challenge } : {},
  });
}

/** The app of the secure metrics listener: GET /metrics for whoever the authorizer lets in, nothing else. */
export function createMetricsApp(o: { registry: Registry; authorizer: MetricsAuthorizer; logger?: Logger }): {
  fetch(req: Request): Response | Promise<Response>;
} {
  const logger = o.logger ?? silentLogger;
  const app = new Hono();
  app.onError(createErrorHandler(logger));
  // Unknown paths answer before any review: a stranger probing URLs costs the API server nothing.
  app.notFound(notFound);

  app.get(METRICS_PATH, async (c) => {
    const header = c.req.header("authorization");
    let token: string | undefined;
    if (header !== undefined) {
      const parsed = /^Bearer +(\S+) *$/i.exec(header);
      if (!parsed)
        return problemResponse({
          status: 401,
          reason: "Unauthorized",
          detail: "the Authorization header must be Bearer <ServiceAccount token>",
          headers: { "www-authenticate": `${REALM}, error="invalid_request"` },
        });
      token = parsed[1];
    }
    const decision = await o.authorizer.authorize(token);
    if (!decision.allowed) return refused(decision, token !== undefined);
    return c.body(await o.registry.expose(), 200, {
      "content-type": PROMETHEUS_CONTENT_TYPE,
      "cache-control": "no-store",
    });
  });

  app.all(METRICS_PATH, (c) =>
    problemResponse({
      status: 405,
      reason: "MethodNotAllowed",
      detail: `${c.req.method} ${METRICS_PATH} is not served; scrape with GET`,
      headers: { allow: "GET" },
    }),
  );

  return { fetch: (req) => app.fetch(req) };
}
