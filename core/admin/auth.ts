// Bearer-token auth for an admin API reachable beyond loopback. Health endpoints stay open so
// kubelet probes need no secret; everything else needs a token, and mutating methods need a
// "write" token. Tokens are compared as SHA-256 digests in constant time, against every
// configured token, so neither the length nor the position of a match leaks through timing.
import { timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import * as v from "valibot";
import { problemResponse } from "./problem.ts";

export type TokenRole = "read-only" | "write";

export interface AdminToken {
  token: string;
  role: TokenRole;
  /** Shown in logs and errors instead of the token itself. */
  name?: string;
}

export interface AdminAuthOptions {
  /** May be empty when client certificates are accepted. */
  tokens: AdminToken[];
  /** Paths served without a token (and their sub-paths). */
  openPaths?: string[];
  /**
   * Accept a TLS client certificate verified against the server's client CA (startAdminServer's
   * `clientCa`) instead of a token. Its role comes from the subject's organizations:
   * `liqo-admin:write` grants write, anything else read-only. A bearer token, when sent, wins.
   */
  clientCertificates?: boolean;
}

/** What the server learnt of a request's TLS client certificate. */
export type ClientCertificate = { verified: true; name: string; groups: string[] } | { verified: false; error: string };

export const CLIENT_CERT_WRITE_GROUP = "liqo-admin:write";

// The TLS layer sees the certificate, the app sees the Request: this map joins them without a
// header a client could forge.
const clientCertificates = new WeakMap<Request, ClientCertificate>();

/** Called by the server for each request that arrived with a client certificate. */
export function attachClientCertificate(request: Request, cert: ClientCertificate): void {
  clientCertificates.set(request, cert);
}

export interface Principal {
  name: string;
  role: TokenRole;
}

export type AdminEnv = { Variables: { principal?: Principal } };

export const DEFAULT_OPEN_PATHS = ["/healthz", "/readyz", "/livez"];
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
const REALM = 'Bearer realm="liqo-admin"';

const TokenSchema = v.object({
  // 16 characters is a floor against guessable tokens, not a recommendation; use 32+ random bytes.
  token: v.pipe(
    v.string(),
    v.minLength(16, "token must be at least 16 characters"),
    v.regex(/^[\x21-\x7e]+$/, "token must be printable ASCII without spaces"),
  ),
  role: v.picklist(["read-only", "write"], 'role must be "read-only" or "write"'),
  name: v.optional(v.pipe(v.string(), v.minLength(1))),
});

export const AdminAuthSchema = v.pipe(
  v.object({
    tokens: v.array(TokenSchema),
    openPaths: v.optional(v.array(v.pipe(v.string(), v.startsWith("/", "open paths start with /")))),
    clientCertificates: v.optional(v.boolean()),
  }),
  v.check(
    (o) => o.tokens.length > 0 || o.clientCertificates === true,
    "at least one token is required, or clientCertificates",
  ),
);

/** Thrown at startup for an unusable admin configuration. */
export class AdminConfigError extends Error {
  override name = "AdminConfigError";
}

export function checkAuthOptions(options: unknown): AdminAuthOptions {
  const result = v.safeParse(AdminAuthSchema, options);
  if (!result.success) {
    const issues = result.issues.map((i) => `${v.getDotPath(i) ?? "auth"}: ${i.message}`);
    throw new AdminConfigError(`invalid admin auth options: ${issues.join("; ")}`);
  }
  return result.output;
}

function digest(text: string): Buffer {
  return Buffer.from(new Bun.CryptoHasher("sha256").update(text).digest());
}

function isOpen(path: string, openPaths: readonly string[]): boolean {
  return openPaths.some((p) => path === p || path.startsWith(p + "/"));
}

function unauthorized(detail: string, error?: string): Response {
  return problemResponse({
    status: 401,
    reason: "Unauthorized",
    detail,
    headers: { "www-authenticate": error ? `${REALM}, error="${error}"` : REALM },
  });
}

export function createAuthMiddleware(options: AdminAuthOptions): MiddlewareHandler<AdminEnv> {
  const config = checkAuthOptions(options);
  const known = config.tokens.map((t, i) => ({
    digest: digest(t.token),
    principal: { name: t.name ?? `token-${i}`, role: t.role },
  }));
  const openPaths = config.openPaths ?? DEFAULT_OPEN_PATHS;

  const identify = (presented: string): Principal | undefined => {
    const candidate = digest(presented);
    let match: Principal | undefined;
    // No early exit: every configured token is compared on every request.
    for (const entry of known) {
      if (timingSafeEqual(candidate, entry.digest) && !match) match = entry.principal;
    }
    return match;
  };

  return async (c, next) => {
    if (isOpen(c.req.path, openPaths)) return next();
    const header = c.req.header("authorization");
    let principal: Principal | undefined;
    if (header) {
      const parsed = /^Bearer +(\S+) *$/i.exec(header);
      if (!parsed) return unauthorized("the Authorization header must use the Bearer scheme", "invalid_request");
      principal = identify(parsed[1]!);
      if (!principal) return unauthorized("the bearer token is not valid", "invalid_token");
    } else {
      const cert = config.clientCertificates ? clientCertificates.get(c.req.raw) : undefined;
      if (cert && !cert.verified)
        return unauthorized(`the client certificate was refused: ${cert.error}`, "invalid_token");
      if (!cert) {
        return unauthorized(
          config.clientCertificates
            ? "a bearer token (Authorization: Bearer <token>) or a client certificate signed by the admin client CA is required"
            : "a bearer token is required (Authorization: Bearer <token>)",
        );
      }
      principal = {
        name: `cert:${cert.name}`,
        role: cert.groups.includes(CLIENT_CERT_WRITE_GROUP) ? "write" : "read-only",
      };
    }
    if (!SAFE_METHODS.has(c.req.method) && principal.role !== "write") {
      return problemResponse({
        status: 403,
        reason: "Forbidden",
        detail: principal.name.startsWith("cert:")
          ? `client certificate ${principal.name.slice(5)} is read-only; ${c.req.method} needs the organization ${CLIENT_CERT_WRITE_GROUP} in its subject, or a write token`
          : `token "${principal.name}" is read-only; ${c.req.method} needs a write token`,
        headers: { "www-authenticate": `${REALM}, error="insufficient_scope"` },
      });
    }
    c.set("principal", principal);
    return next();
  };
}
