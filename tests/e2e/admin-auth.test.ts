// Admin API authentication as every role configures it (core/roles/shared.ts): the shared flags,
// tokens from files (write and read-only), HTTPS, and client certificates signed by the admin
// client CA; refusals of an exposed address without TLS and a credential, by serveAdmin and by
// a real `liqo` role process. Real TLS handshakes on loopback; certificates made by openssl.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CliError } from "../../cli/errors.ts";
import { silentLogger } from "../../core/log.ts";
import { createKubeClient } from "../../core/kube/client.ts";
import { createRegistry } from "../../core/metrics/index.ts";
import { adminSecurity, serveAdmin, type AdminFlags } from "../../core/roles/shared.ts";
import { createCa, sign } from "../rig/pki.ts";

const dir = mkdtempSync(join(tmpdir(), "admin-auth-"));
const path = (name: string) => join(dir, name);
const WRITE = "write-token-0123456789abcdef";
const READ = "read-token-0123456789abcdef";
const pem = (name: string) => Bun.file(path(name)).text();
const stops: (() => Promise<void>)[] = [];

beforeAll(() => {
  const adminCa = createCa(dir, "admin-ca", "/CN=admin-ca");
  const foreignCa = createCa(dir, "foreign-ca", "/CN=foreign-ca");
  sign(dir, adminCa, "server", "/CN=liqo-admin", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  sign(dir, adminCa, "operator", "/O=liqo-admin:write/CN=operator", "extendedKeyUsage=clientAuth\n");
  sign(dir, adminCa, "viewer", "/CN=viewer", "extendedKeyUsage=clientAuth\n");
  sign(dir, foreignCa, "intruder", "/O=liqo-admin:write/CN=intruder", "extendedKeyUsage=clientAuth\n");
  writeFileSync(path("write.token"), `${WRITE}\n`);
  writeFileSync(path("read.token"), READ);
  writeFileSync(path("short.token"), "tooshort");
});

afterAll(async () => {
  for (const stop of stops) await stop();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(flags: Partial<AdminFlags>) {
  const registry = createRegistry();
  const server = await serveAdmin({
    args: { "admin-address": "127.0.0.1:0", ...flags },
    registry,
    logger: silentLogger,
    views: { things: () => [{ name: "a" }] },
    checks: { "caches-synced": () => true },
  });
  stops.push(() => server.stop());
  // A mutating route, so write access can be told from read access.
  return server;
}

type Client = { token?: string; cert?: string };
async function call(url: string, method: string, route: string, who: Client = {}) {
  const headers: Record<string, string> = who.token ? { authorization: `Bearer ${who.token}` } : {};
  const tls = url.startsWith("https")
    ? {
        ca: await pem("admin-ca.crt"),
        ...(who.cert ? { cert: await pem(`${who.cert}.crt`), key: await pem(`${who.cert}.key`) } : {}),
      }
    : undefined;
  const res = await fetch(`${url}${route}`, { method, headers, tls });
  return { status: res.status, body: await res.text() };
}

describe("tokens from files", () => {
  test("no token, wrong token, read-only and write tokens over plain loopback HTTP", async () => {
    const server = await serve({
      "admin-token-file": path("write.token"),
      "admin-read-token-file": path("read.token"),
    });
    expect((await call(server.url, "GET", "/healthz")).status).toBe(200);
    expect((await call(server.url, "GET", "/readyz")).status).toBe(200);
    const none = await call(server.url, "GET", "/views/things");
    expect(none.status).toBe(401);
    expect(none.body).toContain("bearer token is required");
    const wrong = await call(server.url, "GET", "/views/things", { token: "not-the-token-0123456789" });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toContain("not valid");
    expect((await call(server.url, "GET", "/views/things", { token: READ })).status).toBe(200);
    expect((await call(server.url, "GET", "/metrics", { token: WRITE })).status).toBe(200);
    // Read-only stops at mutating methods (403 before routing); a write token gets through to routing (404: no such route).
    const denied = await call(server.url, "POST", "/views/things", { token: READ });
    expect(denied.status).toBe(403);
    expect(JSON.parse(denied.body).detail).toBe('token "admin-read-token-file" is read-only; POST needs a write token');
    expect((await call(server.url, "POST", "/views/things", { token: WRITE })).status).toBe(404);
  });

  test("unusable token files are refused naming the flag", () => {
    const at = (flags: Partial<AdminFlags>) => () => adminSecurity({ "admin-address": "127.0.0.1:0", ...flags });
    expect(at({ "admin-token-file": path("short.token") })).toThrow("--admin-token-file");
    expect(at({ "admin-token-file": path("short.token") })).toThrow("openssl rand -hex 32");
    expect(at({ "admin-read-token-file": path("missing.token") })).toThrow(
      `--admin-read-token-file ${path("missing.token")} does not exist`,
    );
    expect(at({ "admin-token-file": path("write.token"), "admin-read-token-file": path("write.token") })).toThrow(
      "the same token",
    );
    expect(at({ "admin-tls-cert-file": path("server.crt") })).toThrow(
      "--admin-tls-cert-file and --admin-tls-key-file go together",
    );
    expect(at({ "admin-client-ca-file": path("admin-ca.crt") })).toThrow("--admin-client-ca-file needs HTTPS");
    expect(at({ "admin-address": "localhost" })).toThrow("--admin-address must be host:port");
  });
});

describe("exposure beyond loopback", () => {
  const exposed = (flags: Partial<AdminFlags>) => () => adminSecurity({ "admin-address": "0.0.0.0:0", ...flags });
  test("refused without TLS, without a credential, or both, each naming the missing flags", () => {
    expect(exposed({})).toThrow(CliError);
    expect(exposed({})).toThrow(
      /without TLS \(--admin-tls-cert-file and --admin-tls-key-file\) and without a credential \(--admin-token-file, --admin-read-token-file or --admin-client-ca-file\)/,
    );
    expect(exposed({ "admin-token-file": path("write.token") })).toThrow(
      /without TLS \(--admin-tls-cert-file and --admin-tls-key-file\); give them/,
    );
    expect(exposed({ "admin-tls-cert-file": path("server.crt"), "admin-tls-key-file": path("server.key") })).toThrow(
      /^refusing .* without a credential \(--admin-token-file/,
    );
  });

  test("accepted with TLS and a token, or TLS and a client CA", () => {
    const tls = { "admin-tls-cert-file": path("server.crt"), "admin-tls-key-file": path("server.key") };
    expect(exposed({ ...tls, "admin-read-token-file": path("read.token") })().auth?.tokens).toHaveLength(1);
    const withCa = exposed({ ...tls, "admin-client-ca-file": path("admin-ca.crt") })();
    expect(withCa.auth).toEqual({ tokens: [], clientCertificates: true });
    expect(withCa.tls?.clientCa).toContain("BEGIN CERTIFICATE");
  });

  test("a real role process exits with the refusal and a usage exit code", async () => {
    const root = join(import.meta.dir, "../..");
    const proc = Bun.spawn(
      [
        join(root, "node_modules/.bin/bun"),
        join(root, "cli/liqo.ts"),
        "webhook",
        "--kubeconfig",
        path("missing.kubeconfig"),
        "--tls-cert-file",
        path("server.crt"),
        "--tls-key-file",
        path("server.key"),
        "--admin-address",
        "0.0.0.0:0",
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    expect(err).toContain("refusing to serve the admin API on 0.0.0.0:0 beyond loopback");
    expect(err).toContain("--admin-tls-cert-file");
    expect(code).toBe(2);
  });
});

describe("client certificates", () => {
  test("signed by the client CA: accepted, O=liqo-admin:write may write, others read; foreign or absent ones are refused", async () => {
    const server = await serve({
      "admin-tls-cert-file": path("server.crt"),
      "admin-tls-key-file": path("server.key"),
      "admin-client-ca-file": path("admin-ca.crt"),
      "admin-read-token-file": path("read.token"),
    });
    expect(server.url).toStartWith("https://127.0.0.1:");
    expect((await call(server.url, "GET", "/healthz")).status).toBe(200);
    const none = await call(server.url, "GET", "/views/things");
    expect(none.status).toBe(401);
    expect(none.body).toContain("or a client certificate signed by the admin client CA");

    const viewer = await call(server.url, "GET", "/views/things", { cert: "viewer" });
    expect(viewer.status).toBe(200);
    expect(JSON.parse(viewer.body)).toEqual([{ name: "a" }]);
    const viewerWrite = await call(server.url, "DELETE", "/views/things", { cert: "viewer" });
    expect(viewerWrite.status).toBe(403);
    expect(JSON.parse(viewerWrite.body).detail).toContain(
      "client certificate viewer is read-only; DELETE needs the organization liqo-admin:write",
    );
    expect((await call(server.url, "DELETE", "/views/things", { cert: "operator" })).status).toBe(404);

    const intruder = await call(server.url, "GET", "/views/things", { cert: "intruder" });
    expect(intruder.status).toBe(401);
    expect(intruder.body).toContain("client certificate was refused");

    // A token still works beside certificates, and wins over a certificate.
    expect((await call(server.url, "GET", "/metrics", { token: READ })).status).toBe(200);
    expect((await call(server.url, "POST", "/views/things", { token: READ, cert: "operator" })).status).toBe(403);
  });

  test("queries and HEAD pass through the certificate path unchanged", async () => {
    const server = await serve({
      "admin-tls-cert-file": path("server.crt"),
      "admin-tls-key-file": path("server.key"),
      "admin-client-ca-file": path("admin-ca.crt"),
    });
    const res = await fetch(`${server.url}/readyz?bogus=1`, { tls: { ca: await pem("admin-ca.crt") } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { reason: string }).reason).toBe("Invalid");
    const head = await fetch(`${server.url}/healthz`, { method: "HEAD", tls: { ca: await pem("admin-ca.crt") } });
    expect(head.status).toBe(200);
  });
});

describe("the probe and metrics listeners (--health-address, --metrics-address)", () => {
  test("the probe port serves /healthz and /readyz without credentials, with the admin API's answers, and nothing else", async () => {
    let synced = true;
    const server = await serveAdmin({
      args: {
        "admin-address": "127.0.0.1:0",
        "admin-token-file": path("write.token"),
        "health-address": "127.0.0.1:0",
      },
      registry: createRegistry(),
      logger: silentLogger,
      views: { things: () => [{ name: "a" }] },
      checks: { "caches-synced": () => synced || { ok: false, reason: "informers still listing" } },
    });
    stops.push(() => server.stop());
    const health = server.health!;
    expect(health.url).toStartWith("http://127.0.0.1:");
    expect(health.port).not.toBe(server.port);
    expect((await call(health.url, "GET", "/healthz")).status).toBe(200);
    expect((await call(health.url, "GET", "/readyz")).status).toBe(200);
    synced = false;
    const failing = await call(health.url, "GET", "/readyz");
    expect(failing.status).toBe(503);
    expect(JSON.parse(failing.body).detail).toContain("caches-synced (informers still listing)");
    // The same check excluded, as the gateway's standby replicas are probed (?exclude=leader).
    expect((await call(health.url, "GET", "/readyz?exclude=caches-synced")).status).toBe(200);
    // What the admin API guards with its token is not on the probe port at all.
    for (const route of ["/metrics", "/views/things", "/status", "/"])
      expect({ route, status: (await call(health.url, "GET", route)).status }).toEqual({ route, status: 404 });
    // ...and still guarded on the admin port.
    expect((await call(server.url, "GET", "/views/things")).status).toBe(401);
  });

  test("--metrics-address without its certificate, or a certificate without the address, is refused naming the flags", async () => {
    const attempt = (flags: Partial<AdminFlags>) =>
      serveAdmin({
        args: { "admin-address": "127.0.0.1:0", ...flags },
        registry: createRegistry(),
        logger: silentLogger,
      });
    await expect(attempt({ "metrics-address": "127.0.0.1:0" })).rejects.toThrow(
      "--metrics-address 127.0.0.1:0 serves HTTPS only (tokens travel in it): give --metrics-tls-cert-file and --metrics-tls-key-file",
    );
    await expect(attempt({ "metrics-tls-cert-file": path("server.crt") })).rejects.toThrow(
      "--metrics-tls-cert-file and --metrics-tls-key-file need --metrics-address",
    );
    await expect(
      attempt({
        "metrics-address": "127.0.0.1",
        "metrics-tls-cert-file": path("server.crt"),
        "metrics-tls-key-file": path("server.key"),
      }),
    ).rejects.toThrow("--metrics-address must be host:port");
  });

  test("the metrics port answers HTTPS /metrics only: no token is 401 at once; the API server's verdict is the chart's e2e's", async () => {
    const server = await serveAdmin({
      args: {
        "admin-address": "127.0.0.1:0",
        "metrics-address": "127.0.0.1:0",
        "metrics-tls-cert-file": path("server.crt"),
        "metrics-tls-key-file": path("server.key"),
      },
      registry: createRegistry(),
      logger: silentLogger,
      // An API server nobody answers for: a token is then neither accepted nor refused (503).
      client: createKubeClient({ kubeconfig: unreachableKubeconfig() }),
    });
    stops.push(() => server.stop());
    const metrics = server.metrics!;
    expect(metrics.url).toStartWith("https://127.0.0.1:");
    const none = await call(metrics.url, "GET", "/metrics");
    expect(none.status).toBe(401);
    const unknown = await call(metrics.url, "GET", "/metrics", { token: READ });
    expect(unknown.status).toBe(503);
    expect((await call(metrics.url, "GET", "/healthz")).status).toBe(404);
  });
});

/** A kubeconfig whose API server is a closed loopback port. */
function unreachableKubeconfig(): string {
  const file = path("unreachable.kubeconfig");
  writeFileSync(
    file,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters: [{ name: c, cluster: { server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true } }]",
      "users: [{ name: u, user: { token: not-a-real-token } }]",
      "contexts: [{ name: x, context: { cluster: c, user: u } }]",
      "current-context: x",
    ].join("\n"),
  );
  return file;
}
