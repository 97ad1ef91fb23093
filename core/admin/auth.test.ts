import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { AdminConfigError, createAdminApp, type AdminEnv } from "./index.ts";

const READ = "read-token-0123456789abcdef";
const WRITE = "write-token-0123456789abcdef";

function securedApp() {
  const app = createAdminApp({
    auth: {
      tokens: [
        { token: READ, role: "read-only", name: "prometheus" },
        { token: WRITE, role: "write", name: "operator" },
      ],
    },
    views: { state: () => ({ ok: true }) },
  });
  const api = new Hono<AdminEnv>();
  api.post("/reconcile", (c) => c.json({ by: c.get("principal")?.name }));
  app.route("/api", api);
  return app;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe("admin auth", () => {
  const app = securedApp();

  test("health endpoints stay open", async () => {
    expect((await app.request("/healthz")).status).toBe(200);
    expect((await app.request("/readyz")).status).toBe(200);
    expect((await app.request("/readyz?verbose")).status).toBe(200);
  });

  test("no token: 401 problem with a Bearer challenge", async () => {
    for (const path of ["/metrics", "/views", "/views/state", "/api/reconcile", "/unknown"]) {
      const res = await app.request(path);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="liqo-admin"');
      expect(await res.json()).toMatchObject({
        type: "urn:liqo:problem:unauthorized",
        status: 401,
        reason: "Unauthorized",
      });
    }
  });

  test("wrong token or wrong scheme: 401", async () => {
    const wrong = await app.request("/metrics", { headers: bearer(READ + "x") });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect(await wrong.json()).toMatchObject({ detail: "the bearer token is not valid" });
    const basic = await app.request("/metrics", { headers: { authorization: `Basic ${btoa("a:b")}` } });
    expect(basic.status).toBe(401);
    expect(basic.headers.get("www-authenticate")).toContain('error="invalid_request"');
  });

  test("read-only token reads metrics and views", async () => {
    expect((await app.request("/metrics", { headers: bearer(READ) })).status).toBe(200);
    expect(await (await app.request("/views/state", { headers: bearer(READ) })).json()).toEqual({ ok: true });
    expect((await app.request("/metrics", { method: "HEAD", headers: bearer(READ) })).status).toBe(200);
  });

  test("read-only token on a POST: 403 insufficient scope", async () => {
    const res = await app.request("/api/reconcile", { method: "POST", headers: bearer(READ) });
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
    expect(await res.json()).toMatchObject({
      reason: "Forbidden",
      detail: 'token "prometheus" is read-only; POST needs a write token',
    });
  });

  test("write token may POST, and the handler sees who called", async () => {
    const res = await app.request("/api/reconcile", { method: "POST", headers: { authorization: `bearer  ${WRITE}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ by: "operator" });
  });

  test("unusable auth configuration fails at construction", () => {
    expect(() => createAdminApp({ auth: { tokens: [] } })).toThrow(AdminConfigError);
    expect(() => createAdminApp({ auth: { tokens: [{ token: "short", role: "write" }] } })).toThrow(
      "invalid admin auth options: tokens.0.token: token must be at least 16 characters",
    );
    expect(() => createAdminApp({ auth: { tokens: [{ token: WRITE, role: "admin" as never }] } })).toThrow(
      /role must be/,
    );
  });
});
