// Every error the admin API returns is an RFC 9457 problem document, with a machine-readable
// `reason` (Kubernetes StatusReason style) so scripts can branch without parsing prose.
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import * as v from "valibot";
import type { Logger } from "../log.ts";

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

const statusTitles: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  500: "Internal Server Error",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

export interface ProblemInit {
  status: number;
  /** CamelCase cause, e.g. "NotReady"; also names the problem type URI. */
  reason: string;
  detail: string;
  /** Defaults to the HTTP status phrase. */
  title?: string;
  /** Extension members (RFC 9457 §3.2), e.g. the failing checks. */
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** The problem type URI for a reason: stable, documented in docs/admin-api.md, never dereferenced. */
export function problemType(reason: string): string {
  return `urn:liqo:problem:${reason.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase()}`;
}

export function problemBody(init: ProblemInit): Record<string, unknown> {
  return {
    type: problemType(init.reason),
    title: init.title ?? statusTitles[init.status] ?? "Error",
    status: init.status,
    detail: init.detail,
    reason: init.reason,
    ...init.extra,
  };
}

export function problemResponse(init: ProblemInit): Response {
  return new Response(JSON.stringify(problemBody(init)), {
    status: init.status,
    headers: { "content-type": PROBLEM_CONTENT_TYPE, "cache-control": "no-store", ...init.headers },
  });
}

/** Throw from any admin handler (or a role's mounted routes) to answer with a problem document. */
export class ProblemError extends Error {
  override name = "ProblemError";
  readonly init: ProblemInit;
  constructor(init: ProblemInit, options?: { cause?: unknown }) {
    super(`${init.reason}: ${init.detail}`, options);
    this.init = init;
  }
  toResponse(): Response {
    return problemResponse(this.init);
  }
}

const reasonByStatus: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
};

/** The app's onError: known errors keep their status; anything else is a 500 whose details stay in the log. */
export function createErrorHandler(logger: Logger) {
  return (err: Error, c: Context): Response => {
    if (err instanceof ProblemError) return err.toResponse();
    if (err instanceof HTTPException) {
      return problemResponse({
        status: err.status,
        reason: reasonByStatus[err.status] ?? "HTTPError",
        detail: err.message || "request failed",
      });
    }
    logger.error("admin request failed", { method: c.req.method, path: c.req.path, err });
    return problemResponse({
      status: 500,
      reason: "InternalError",
      detail: "unexpected error while serving the request; see the role's log",
    });
  };
}

export function notFound(c: Context): Response {
  return problemResponse({ status: 404, reason: "NotFound", detail: `no route for ${c.req.method} ${c.req.path}` });
}

/** Validates request input with valibot; failures become a 400 problem listing each issue. */
export function parseInput<S extends v.GenericSchema>(schema: S, input: unknown, what: string): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  const issues = result.issues.map((issue) => ({
    path: v.getDotPath(issue) ?? "",
    message: issue.message,
  }));
  throw new ProblemError({
    status: 400,
    reason: "Invalid",
    detail: `invalid ${what}: ${issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ")}`,
    extra: { issues },
  });
}
