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
  tokens: AdminToken[];
  /** Paths served without a token (and their sub-paths). */
  openPaths?: string[];
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
  token: v.pipe(v.string(), v.minLength(16, "token must be at least 16 characters"), v.regex(/^[\x21-\x7e]+$/, "token must be printable ASCII without spaces")),
  role: v.picklist(["read-only", "write"], 'role must be "read-only" or "write"'),
  name: v.optional(v.pipe(v.string(), v.minLength(1))),
});

export const AdminAuthSchema = v.object({
  tokens: v.pipe(v.array(TokenSchema), v.minLength(1, "at least one token is required")),
  openPaths: v.optional(v.array(v.pipe(v.string(), v.startsWith("/", "open paths start with /")))),
});

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
  const known = config.tokens.map((t, i) => ({ digest: digest(t.token), principal: { name: t.name ?? `token-${i}`, role: t.role } }));
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
    if (!header) return unauthorized("a bearer token is required (Authorization: Bearer <token>)");
    const parsed = /^Bearer +(\S+) *$/i.exec(header);
    if (!parsed) return unauthorized("the Authorization header must use the Bearer scheme", "invalid_request");
    const principal = identify(parsed[1]!);
    if (!principal) return unauthorized("the bearer token is not valid", "invalid_token");
    if (!SAFE_METHODS.has(c.req.method) && principal.role !== "write") {
      return problemResponse({
        status: 403,
        reason: "Forbidden",
        detail: `token "${principal.name}" is read-only; ${c.req.method} needs a write token`,
        headers: { "www-authenticate": `${REALM}, error="insufficient_scope"` },
      });
    }
    c.set("principal", principal);
    return next();
  };
}
