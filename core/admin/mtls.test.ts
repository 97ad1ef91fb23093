// The client-certificate path of startAdminServer (node:tls + node:http under Bun): the principal
// a route sees, request bodies passed through (plugin uploads), the body limit, and stop().
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hono } from "hono";
import { createCa, sign } from "../../tests/rig/pki.ts";
import { createAdminApp, startAdminServer, type AdminEnv, type AdminServer } from "./index.ts";

const dir = mkdtempSync(join(tmpdir(), "admin-mtls-"));
const file = (name: string) => Bun.file(join(dir, name)).text();
let server: AdminServer;

beforeAll(async () => {
  const ca = createCa(dir, "ca", "/CN=ca");
  sign(dir, ca, "server", "/CN=server", "subjectAltName=IP:127.0.0.1\n");
  sign(dir, ca, "operator", "/O=liqo-admin:write/CN=operator", "extendedKeyUsage=clientAuth\n");
  const api = new Hono<AdminEnv>();
  api.post("/echo", async (c) =>
    c.json({
      principal: c.get("principal"),
      bytes: (await c.req.arrayBuffer()).byteLength,
      type: c.req.header("content-type") ?? null,
    }),
  );
  api.get("/query", (c) => c.json(c.req.queries()));
  const app = createAdminApp({ auth: { tokens: [], clientCertificates: true } });
  app.route("/api", api);
  server = await startAdminServer({
    app,
    port: 0,
    maxRequestBodySize: 1 << 20,
    tls: { cert: await file("server.crt"), key: Bun.file(join(dir, "server.key")), clientCa: await file("ca.crt") },
  });
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const asOperator = async () => ({
  ca: await file("ca.crt"),
  cert: await file("operator.crt"),
  key: await file("operator.key"),
});

describe("client-certificate server", () => {
  test("a route sees the certificate's principal and the whole body", async () => {
    const body = new Uint8Array(300_000).fill(7);
    const res = await fetch(`${server.url}/api/echo`, {
      method: "POST",
      body,
      headers: { "content-type": "application/wasm" },
      tls: await asOperator(),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      principal: { name: "cert:operator", role: "write" },
      bytes: 300_000,
      type: "application/wasm",
    });
  });

  test("repeated query parameters and headers arrive unchanged", async () => {
    const res = await fetch(`${server.url}/api/query?x=1&x=2&y=%C3%A9`, { tls: await asOperator() });
    expect(await res.json()).toEqual({ x: ["1", "2"], y: ["é"] });
  });

  test("a body over the server's limit is refused with 413 before the app", async () => {
    const res = await fetch(`${server.url}/api/echo`, {
      method: "POST",
      body: new Uint8Array((1 << 20) + 1),
      tls: await asOperator(),
    });
    expect(res.status).toBe(413);
  });

  test("without a certificate or token: 401; stop() closes the listener", async () => {
    const res = await fetch(`${server.url}/api/query`, { tls: { ca: await file("ca.crt") } });
    expect(res.status).toBe(401);
    const other = await startAdminServer({
      app: createAdminApp(),
      port: 0,
      tls: { cert: await file("server.crt"), key: await file("server.key"), clientCa: await file("ca.crt") },
    });
    expect((await fetch(`${other.url}/healthz`, { tls: { ca: await file("ca.crt") } })).status).toBe(200);
    await other.stop();
    await expect(fetch(`${other.url}/healthz`, { tls: { ca: await file("ca.crt") } })).rejects.toThrow();
  });
});
