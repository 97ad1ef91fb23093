// The reflection role's admin API in memory (Hono's app.request): who may manage plugins, and
// every way an upload is refused before anything reaches the plugin directory. The engine is
// real; its clients point at an address where nothing listens, and none of these requests
// needs the API server (successful uploads run against a rig in tests/e2e/admin.test.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "../kube/kubeconfig.ts";
import { createAdminApp, type AdminApp } from "../admin/index.ts";
import { createKubeClient } from "../kube/client.ts";
import { createRegistry, parsePrometheusText } from "../metrics/index.ts";
import { watchPluginDir, type DropinWatcher } from "../reflection/engine/dropins.ts";
import { createReflectionEngine, type ReflectionEngine } from "../reflection/engine/engine.ts";
import { validatePlugin } from "../reflection/validate.ts";
import { ensureBuilt, wasmPath } from "../../reflectors/build.ts";
import { adminViews } from "./admin-views.ts";

const READ = "read-only-token-0123456789abcdef";
const WRITE = "write-token-0123456789abcdef0123";
const dir = mkdtempSync(join(tmpdir(), "admin-plugins-"));
let engine: ReflectionEngine;
let dropins: DropinWatcher;
let app: AdminApp;
let networkpolicy: Uint8Array;
let pluginName: string;

function nowhere() {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "nowhere", server: "https://127.0.0.1:1", skipTLSVerify: true }],
    users: [{ name: "nobody", token: "x" }],
    contexts: [{ name: "nowhere", cluster: "nowhere", user: "nobody" }],
    currentContext: "nowhere",
  });
  return createKubeClient(kc);
}

beforeAll(async () => {
  await ensureBuilt(["networkpolicy"]);
  networkpolicy = await Bun.file(wasmPath("networkpolicy")).bytes();
  const verdict = await validatePlugin(networkpolicy);
  if (!verdict.ok) throw new Error(`the example plugin does not validate: ${verdict.problems.join("; ")}`);
  pluginName = verdict.manifest.name;
  const local = nowhere();
  const remote = nowhere();
  const registry = createRegistry();
  engine = createReflectionEngine({ local, remote, registry, localClusterId: "rome", remoteClusterId: "milan" });
  dropins = watchPluginDir(engine, dir, { intervalMs: 60_000 });
  app = createAdminApp({
    registry,
    auth: {
      tokens: [
        { token: READ, role: "read-only", name: "viewer" },
        { token: WRITE, role: "write", name: "operator" },
      ],
    },
    extensions: [
      adminViews({
        registry,
        clients: { local, remote },
        reflection: { engine, dropins, pluginDir: dir, maxPluginBytes: 64 * 1024 },
      }),
    ],
  });
});

afterAll(async () => {
  dropins.stop();
  await engine.stop();
  rmSync(dir, { recursive: true, force: true });
});

const put = (name: string, body: RequestInit["body"], token?: string, headers: Record<string, string> = {}) =>
  app.request(`/api/plugins/${name}`, {
    method: "PUT",
    body,
    headers: { "content-type": "application/wasm", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
  });

async function problem(res: Response, status: number, reason: string) {
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  const body = (await res.json()) as Record<string, unknown>;
  expect({ status: res.status, reason: body.reason }).toEqual({ status, reason });
  return body;
}

const wasmFiles = () => readdirSync(dir);

describe("authentication and authorisation", () => {
  test("no token and a wrong token are 401 on views, metrics, the status page and plugin routes", async () => {
    for (const path of ["/views/plugins", "/metrics", "/", "/api/plugins"]) {
      await problem(await app.request(path), 401, "Unauthorized");
      await problem(
        await app.request(path, { headers: { authorization: "Bearer not-a-token-at-all-000" } }),
        401,
        "Unauthorized",
      );
    }
    await problem(await put("networkpolicy", networkpolicy), 401, "Unauthorized");
    await problem(await put("networkpolicy", networkpolicy, "wrong-token-0123456789abcdef"), 401, "Unauthorized");
    expect(wasmFiles()).toEqual([]);
  });

  test("a read-only token lists plugins but may not upload or remove one", async () => {
    const list = await app.request("/api/plugins", { headers: { authorization: `Bearer ${READ}` } });
    expect(list.status).toBe(200);
    expect(await list.json()).toMatchObject({ pluginDir: dir, maxPluginBytes: 64 * 1024, plugins: [], files: [] });
    const body = await problem(await put("networkpolicy", networkpolicy, READ), 403, "Forbidden");
    expect(body.detail).toBe('token "viewer" is read-only; PUT needs a write token');
    await problem(
      await app.request("/api/plugins/networkpolicy", {
        method: "DELETE",
        headers: { authorization: `Bearer ${READ}` },
      }),
      403,
      "Forbidden",
    );
    expect(wasmFiles()).toEqual([]);
  });

  test("a write token gets past auth to validation", async () => {
    const body = await problem(await put("networkpolicy", new Uint8Array([1, 2, 3, 4]), WRITE), 422, "InvalidPlugin");
    expect(body.detail).toContain("not a WebAssembly module");
  });
});

describe("uploads that are refused, with the reason", () => {
  test("built-in names are refused for upload and removal", async () => {
    const body = await problem(await put("configmaps", networkpolicy, WRITE), 409, "BuiltinPlugin");
    expect(body.detail).toContain("configmaps is a built-in reflector");
    await problem(
      await app.request("/api/plugins/pods", { method: "DELETE", headers: { authorization: `Bearer ${WRITE}` } }),
      409,
      "BuiltinPlugin",
    );
  });

  test("a body over the limit is 413 naming the limit, declared or streamed", async () => {
    const big = new Uint8Array(64 * 1024 + 1);
    const body = await problem(await put("big", big, WRITE, { "content-length": String(big.length) }), 413, "TooLarge");
    expect(body).toMatchObject({ limitBytes: 65536, detail: "plugin big is 65537 bytes; the limit is 65536 bytes" });
    // No Content-Length: counted while streaming.
    const stream = new ReadableStream({
      start(c) {
        for (let i = 0; i < 5; i++) c.enqueue(new Uint8Array(20_000));
        c.close();
      },
    });
    await problem(await put("big", stream, WRITE), 413, "TooLarge");
  });

  test("invalid wasm is 422 with the validator's problems; a truncated module names the failure", async () => {
    const body = await problem(await put("networkpolicy", networkpolicy.slice(0, 200), WRITE), 422, "InvalidPlugin");
    expect((body.problems as string[]).length).toBeGreaterThan(0);
    expect(wasmFiles()).toEqual([]);
  });

  test("a module whose manifest names another plugin is refused", async () => {
    const body = await problem(await put("netpol", networkpolicy, WRITE), 422, "NameMismatch");
    expect(body.detail).toBe(
      `the plugin's manifest names it ${pluginName}; upload it as PUT /api/plugins/${pluginName}`,
    );
    expect(wasmFiles()).toEqual([]);
  });

  test("bad names, query parameters, content types and empty bodies are 400 Invalid", async () => {
    const bad = await problem(await put("Not_A_Name", networkpolicy, WRITE), 400, "Invalid");
    expect(bad.detail).toContain("a plugin name is a DNS label");
    await problem(
      await app.request(`/api/plugins/networkpolicy?force=true`, {
        method: "PUT",
        body: networkpolicy,
        headers: { authorization: `Bearer ${WRITE}` },
      }),
      400,
      "Invalid",
    );
    const type = await problem(
      await put("networkpolicy", networkpolicy, WRITE, { "content-type": "text/plain" }),
      400,
      "Invalid",
    );
    expect(type.detail).toContain("application/wasm");
    await problem(await put("networkpolicy", new Uint8Array(0), WRITE), 400, "Invalid");
  });

  test("removing a plugin that is not there is 404", async () => {
    await problem(
      await app.request("/api/plugins/ghost", { method: "DELETE", headers: { authorization: `Bearer ${WRITE}` } }),
      404,
      "NotFound",
    );
    await problem(
      await app.request("/api/plugins/ghost", { headers: { authorization: `Bearer ${WRITE}` } }),
      404,
      "NotFound",
    );
  });

  test("a rejected file dropped by hand shows in the views and can be removed through the API", async () => {
    writeFileSync(join(dir, "junk.wasm"), "not wasm");
    await dropins.scan();
    const files = (await (
      await app.request("/views/dropins", { headers: { authorization: `Bearer ${READ}` } })
    ).json()) as { file: string; error?: string }[];
    expect(files.find((f) => f.file === "junk.wasm")?.error).toBeTruthy();
    const res = await app.request("/api/plugins/junk", {
      method: "DELETE",
      headers: { authorization: `Bearer ${WRITE}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ removed: "junk", file: "junk.wasm" });
    expect(existsSync(join(dir, "junk.wasm"))).toBe(false);
  });

  test("refusals are counted, and API client counters are exposed", async () => {
    const families = parsePrometheusText(
      await (await app.request("/metrics", { headers: { authorization: `Bearer ${READ}` } })).text(),
    );
    const uploads = families.find((f) => f.name === "liqo_reflection_plugin_uploads_total");
    expect(uploads?.samples.find((s) => s.labels.outcome === "rejected")?.value).toBeGreaterThanOrEqual(5);
    expect(uploads?.samples.find((s) => s.labels.outcome === "removed")?.value).toBe(1);
    const requests = families.find((f) => f.name === "liqo_kube_client_requests_total");
    expect(requests?.samples.map((s) => s.labels.cluster).sort()).toEqual(["local", "remote"]);
  });
});

test("without a plugin directory, plugins are listed but not managed", async () => {
  const registry = createRegistry();
  const bare = createAdminApp({ registry, extensions: [adminViews({ registry, reflection: { engine } })] });
  expect((await bare.request("/api/plugins")).status).toBe(200);
  const body = await problem(
    await bare.request("/api/plugins/networkpolicy", { method: "PUT", body: networkpolicy }),
    409,
    "NoPluginDirectory",
  );
  expect(body.detail).toContain("--plugin-dir");
});
