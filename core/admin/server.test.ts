import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRegistry, parsePrometheusText } from "../metrics/index.ts";
import { AdminConfigError, createAdminApp, isLoopbackHost, startAdminServer, type AdminServer } from "./index.ts";

const TOKEN = "server-test-token-0123456789";
const running: AdminServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
});

async function start(options: Parameters<typeof startAdminServer>[0]) {
  const server = await startAdminServer(options);
  running.push(server);
  return server;
}

describe("startAdminServer", () => {
  test("serves /metrics over HTTP on a free loopback port", async () => {
    const registry = createRegistry();
    registry
      .gauge({ name: "liqo_virtual_nodes", help: "Virtual nodes.", labelNames: ["cluster"] })
      .set({ cluster: "east" }, 2);
    const server = await start({ app: createAdminApp({ registry }), port: 0 });
    expect(server.host).toBe("127.0.0.1");
    expect(server.port).toBeGreaterThan(0);
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);

    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    const families = parsePrometheusText(await res.text());
    expect(families.find((f) => f.name === "liqo_virtual_nodes")?.samples).toEqual([
      { name: "liqo_virtual_nodes", labels: { cluster: "east" }, value: 2 },
    ]);
    expect(families.find((f) => f.name === "process_cpu_seconds_total")?.type).toBe("counter");
  });

  test("stop() closes the listener", async () => {
    const server = await startAdminServer({ app: createAdminApp(), port: 0 });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    await server.stop();
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  test("server-level auth protects an app built without it", async () => {
    const server = await start({
      app: createAdminApp(),
      port: 0,
      auth: { tokens: [{ token: TOKEN, role: "read-only" }] },
    });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });

  test("refuses unsafe or invalid configurations", async () => {
    const app = createAdminApp();
    await expect(startAdminServer({ app, host: "0.0.0.0", port: 0 })).rejects.toThrow(
      /without auth; configure tokens or set allowAnonymous/,
    );
    await expect(startAdminServer({ app, port: 70000 })).rejects.toThrow(AdminConfigError);
    await expect(startAdminServer({ app, port: 1.5 })).rejects.toThrow("port: port must be an integer");
    const secured = createAdminApp({ auth: { tokens: [{ token: TOKEN, role: "write" }] } });
    await expect(
      startAdminServer({ app: secured, port: 0, auth: { tokens: [{ token: TOKEN, role: "write" }] } }),
    ).rejects.toThrow(/configured on both/);
  });

  test("a taken port is a clear error", async () => {
    const first = await start({ app: createAdminApp(), port: 0 });
    await expect(startAdminServer({ app: createAdminApp(), port: first.port })).rejects.toThrow(
      `cannot listen on 127.0.0.1:${first.port}`,
    );
  });

  test("loopback detection", () => {
    expect(["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost"].every(isLoopbackHost)).toBe(true);
    expect(["0.0.0.0", "::", "10.0.0.1", "example.com"].some(isLoopbackHost)).toBe(false);
  });

  // openssl is a declared setup dependency (scripts/debian-packages.txt): its absence is a failure.
  const openssl = Bun.which("openssl");
  test("serves HTTPS with the given certificate", async () => {
    const dir = mkdtempSync(join(tmpdir(), "admin-tls-"));
    try {
      const gen = Bun.spawnSync(
        [
          openssl!,
          "req",
          "-x509",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:prime256v1",
          "-nodes",
          "-days",
          "1",
          "-subj",
          "/CN=liqo-admin",
          "-addext",
          "subjectAltName=IP:127.0.0.1",
          "-keyout",
          join(dir, "key.pem"),
          "-out",
          join(dir, "cert.pem"),
        ],
        { stderr: "pipe" },
      );
      expect(gen.stderr.toString()).not.toContain("error");
      expect(gen.exitCode).toBe(0);
      const cert = readFileSync(join(dir, "cert.pem"), "utf8");
      const server = await start({
        app: createAdminApp(),
        port: 0,
        tls: { cert, key: Bun.file(join(dir, "key.pem")) },
      });
      expect(server.url).toStartWith("https://127.0.0.1:");
      // Without our CA the certificate must not verify: proves TLS is really in play.
      await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
      const res = await fetch(`${server.url}/healthz`, { tls: { ca: cert } });
      expect(await res.json()).toEqual({ status: "ok" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
