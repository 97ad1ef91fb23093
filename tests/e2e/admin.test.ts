// The admin API of a real `liqo reflection` process on a two-cluster rig: a drop-in plugin is
// uploaded over HTTP, reflects a NetworkPolicy, is replaced and removed; the status page is
// rendered by headless Chromium (screenshot kept in tests/artifacts/); /metrics parses and
// carries the families operators alert on.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { parsePrometheusText, type MetricFamily } from "../../core/metrics/index.ts";
import { validatePlugin } from "../../core/reflection/validate.ts";
import { ensureBuilt, wasmPath } from "../../reflectors/build.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { namespace } from "../support/namespace.ts";

const root = join(import.meta.dir, "../..");
const artifacts = join(root, "tests/artifacts");
const work = mkdtempSync(join(tmpdir(), "admin-e2e-"));
const pluginDir = join(work, "plugins");
let rig: TestRig;
let local: KubeClient;
let remote: KubeClient;
let proc: ReturnType<typeof Bun.spawn>;
let url: string;
let output = "";
let wasm: Uint8Array;
let pluginName: string;

/** Collects a stream into `output` as it arrives, so the pipe never fills and failures can show it. */
async function drain(stream: ReadableStream<Uint8Array>) {
  const decoder = new TextDecoder();
  for await (const chunk of stream) output += decoder.decode(chunk, { stream: true });
}

const api = (path: string, init?: RequestInit) => fetch(`${url}${path}`, init);
// biome-ignore lint/suspicious/noExplicitAny: the admin API's JSON answers, asserted on a few fields
const json = async <T = any>(path: string): Promise<T> => (await api(path)).json() as Promise<T>;
const put = (body: Uint8Array, name = pluginName) =>
  api(`/api/plugins/${name}`, { method: "PUT", body, headers: { "content-type": "application/wasm" } });

beforeAll(async () => {
  await ensureBuilt(["networkpolicy"]);
  wasm = await Bun.file(wasmPath("networkpolicy")).bytes();
  const verdict = await validatePlugin(wasm);
  if (!verdict.ok) throw new Error(`example plugin invalid: ${verdict.problems.join("; ")}`);
  pluginName = verdict.manifest.name;

  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  local = rig.client("rome");
  remote = rig.client("milan");
  await namespace(local, "web");
  await namespace(remote, "web-rome");
  mkdirSync(pluginDir);
  const pairs = join(work, "pairs.yaml");
  writeFileSync(pairs, "pairs:\n  - localNamespace: web\n    remoteNamespace: web-rome\n");

  proc = Bun.spawn(
    [
      join(root, "node_modules/.bin/bun"),
      "cli/liqo.ts",
      "reflection",
      "--kubeconfig",
      rig.clusters[0]!.kubeconfig,
      "--remote-kubeconfig",
      rig.clusters[1]!.kubeconfig,
      "--local-cluster-id",
      "rome-admin-id",
      "--remote-cluster-id",
      "milan-admin-id",
      "--pairs-file",
      pairs,
      "--plugin-dir",
      pluginDir,
      "--admin-address",
      "127.0.0.1:0",
    ],
    { cwd: root, stdout: "pipe", stderr: "pipe" },
  );
  void drain(proc.stdout as ReadableStream<Uint8Array>);
  void drain(proc.stderr as ReadableStream<Uint8Array>);
  url = await waitFor(
    "the process to print its admin URL",
    () => {
      if (proc.exitCode !== null)
        throw new Error(`liqo reflection exited with ${proc.exitCode}: ${output.slice(-2000)}`);
      return /admin API on (http:\/\/\S+)/.exec(output)?.[1];
    },
    { timeoutMs: 120_000 },
  );
  await waitFor("the reflection process to be ready", async () => (await api("/readyz")).status === 200, {
    timeoutMs: 120_000,
    describe: async () => (await api("/readyz?verbose")).json(),
  });
}, 600_000);

afterAll(async () => {
  if (proc && proc.exitCode === null) {
    proc.kill("SIGTERM");
    await proc.exited;
  }
  await rig?.down();
  rmSync(work, { recursive: true, force: true });
});

describe("views of a running reflection process", () => {
  test("plugins, reflectors and pairs show the built-ins and the pair from the file", async () => {
    const plugins = await json<{ name: string; trust: string; state: string }[]>("/views/plugins");
    expect(
      plugins
        .filter((p) => p.trust === "builtin")
        .map((p) => p.name)
        .sort(),
    ).toEqual(["configmaps", "endpointslices", "ingresses", "secrets", "services"]);
    expect(plugins.every((p) => p.state === "ready")).toBe(true);
    expect(await json("/views/pairs")).toEqual([{ localNamespace: "web", remoteNamespace: "web-rome" }]);

    await local.create(Resources.configMaps, { metadata: { name: "counted", namespace: "web" }, data: { a: "1" } });
    await waitFor("the ConfigMap to be reflected", () => remote.find(Resources.configMaps, "counted", "web-rome"));
    const row = await waitFor("the reflectors view to count it", async () => {
      // biome-ignore lint/suspicious/noExplicitAny: the admin API's JSON answers, asserted on a few fields
      const r = (await json<any[]>("/views/reflectors")).find((x) => x.name === "configmaps/ConfigMap");
      return r?.handled > 0 && r.reconcileLatency?.count > 0 ? r : undefined;
    });
    expect(row).toMatchObject({ plugin: "configmaps", kind: "ConfigMap", pairs: 1 });
    expect(row.reconcileLatency.p99Seconds).toBeGreaterThan(0);
    expect((await json<unknown[]>("/views/kube-clients")).length).toBe(2);
  });
});

describe("plugin management over HTTP", () => {
  test("refusals through the real server are problems naming the reason", async () => {
    const builtin = await put(wasm, "configmaps");
    expect(builtin.status).toBe(409);
    expect(await builtin.json()).toMatchObject({ reason: "BuiltinPlugin" });
    const big = await put(new Uint8Array(9 << 20));
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ reason: "TooLarge", limitBytes: 8 << 20 });
    const junk = await put(new TextEncoder().encode("\0asm not really"));
    expect(junk.status).toBe(422);
    expect(await junk.json()).toMatchObject({ reason: "InvalidPlugin" });
    expect(readdirSync(pluginDir)).toEqual([]);
  });

  test("an uploaded drop-in reflects NetworkPolicies, can be replaced, and stops when removed", async () => {
    const created = await put(wasm);
    // biome-ignore lint/suspicious/noExplicitAny: the admin API's JSON answers, asserted on a few fields
    const body = (await created.json()) as any;
    expect({ status: created.status, body }).toMatchObject({
      status: 201,
      body: {
        file: `${pluginName}.wasm`,
        replaced: false,
        plugin: { name: pluginName, trust: "dropin", state: "ready" },
      },
    });
    expect(created.headers.get("location")).toBe(`/api/plugins/${pluginName}`);
    // Written atomically: only the final file, no temporary left behind.
    expect(readdirSync(pluginDir)).toEqual([`${pluginName}.wasm`]);

    await local.create(Resources.networkPolicies, {
      metadata: { name: "allow-web", namespace: "web" },
      spec: { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] },
    } as KubeObject);
    const copy = await waitFor("the remote NetworkPolicy", () =>
      remote.find(Resources.networkPolicies, "allow-web", "web-rome"),
    );
    expect(copy.metadata.labels?.["liqo.io/origin-cluster-id"]).toBe("rome-admin-id");

    const replaced = await put(wasm);
    expect(replaced.status).toBe(200);
    expect(await replaced.json()).toMatchObject({ replaced: true, plugin: { name: pluginName, state: "ready" } });
    const listed = await json<{ plugins: { name: string; file?: string }[] }>("/api/plugins");
    expect(listed.plugins.find((p) => p.name === pluginName)?.file).toBe(`${pluginName}.wasm`);

    const removed = await api(`/api/plugins/${pluginName}`, { method: "DELETE" });
    expect(await removed.json()).toEqual({ removed: pluginName, file: `${pluginName}.wasm` });
    expect(readdirSync(pluginDir)).toEqual([]);
    expect((await json<{ name: string }[]>("/views/plugins")).some((p) => p.name === pluginName)).toBe(false);
    expect((await api(`/api/plugins/${pluginName}`)).status).toBe(404);

    // Nothing reflects NetworkPolicies now: a later one stays home while a later ConfigMap travels.
    await local.create(Resources.networkPolicies, {
      metadata: { name: "later", namespace: "web" },
      spec: { podSelector: {} },
    } as KubeObject);
    await local.create(Resources.configMaps, { metadata: { name: "marker", namespace: "web" } });
    await waitFor("a later ConfigMap to be reflected", () => remote.find(Resources.configMaps, "marker", "web-rome"));
    expect(await remote.find(Resources.networkPolicies, "later", "web-rome")).toBeUndefined();
  });
});

describe("status page and metrics", () => {
  async function chromium(args: string[]): Promise<string> {
    const profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
    const browser = Bun.spawn(
      [
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        `--user-data-dir=${profile}`,
        "--window-size=1280,900",
        ...args,
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const [out, err, code] = await Promise.all([
      new Response(browser.stdout).text(),
      new Response(browser.stderr).text(),
      browser.exited,
    ]);
    rmSync(profile, { recursive: true, force: true });
    if (code !== 0) throw new Error(`chromium exited with ${code}: ${err.slice(-2000)}`);
    return out;
  }

  test("headless Chromium renders the status page with the reflectors and a screenshot is kept", async () => {
    const dom = await chromium(["--dump-dom", `${url}/`]);
    expect(dom).toContain("liqo reflection: rome-admin-id → milan-admin-id");
    for (const text of ["Reflectors", "configmaps/ConfigMap", "Namespace pairs", "web-rome", "Health", "caches-synced"])
      expect(dom).toContain(text);
    mkdirSync(artifacts, { recursive: true });
    const shot = join(artifacts, "admin-status.png");
    rmSync(shot, { force: true });
    await chromium([`--screenshot=${shot}`, `${url}/`]);
    expect(existsSync(shot)).toBe(true);
    const png = await Bun.file(shot).bytes();
    expect([...png.slice(1, 4)].map((b) => String.fromCharCode(b)).join("")).toBe("PNG");
    expect(statSync(shot).size).toBeGreaterThan(10_000);
  }, 180_000);

  test("/metrics parses and has queue depths, latencies, per-plugin counts, API requests and process figures", async () => {
    const res = await api("/metrics");
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const families = parsePrometheusText(await res.text());
    const family = (name: string): MetricFamily => {
      const f = families.find((x) => x.name === name);
      if (!f) throw new Error(`metric family ${name} is missing; have ${families.map((x) => x.name).join(", ")}`);
      return f;
    };
    const value = (name: string, labels: Record<string, string>, sample = name) =>
      family(name).samples.find((s) => s.name === sample && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        ?.value;

    expect(family("liqo_reflection_queue_depth").type).toBe("gauge");
    expect(value("liqo_reflection_queue_depth", { reflector: "configmaps/ConfigMap" })).toBeGreaterThanOrEqual(0);
    expect(family("liqo_reflection_reconcile_seconds").type).toBe("histogram");
    expect(
      value(
        "liqo_reflection_reconcile_seconds",
        { reflector: "configmaps/ConfigMap" },
        "liqo_reflection_reconcile_seconds_count",
      ),
    ).toBeGreaterThanOrEqual(2);
    expect(
      value("liqo_reflection_reconciles_total", { reflector: "configmaps/ConfigMap", outcome: "apply" }),
    ).toBeGreaterThanOrEqual(2);
    expect(value("liqo_reflection_plugin_calls_total", { plugin: "configmaps" })).toBeGreaterThanOrEqual(2);
    expect(value("liqo_reflection_plugin_uploads_total", { outcome: "created" })).toBe(1);
    expect(value("liqo_reflection_plugin_uploads_total", { outcome: "replaced" })).toBe(1);
    expect(value("liqo_reflection_plugin_uploads_total", { outcome: "removed" })).toBe(1);
    expect(value("liqo_reflection_plugin_uploads_total", { outcome: "rejected" })).toBeGreaterThanOrEqual(2);
    for (const cluster of ["local", "remote"]) {
      expect(value("liqo_kube_client_requests_total", { cluster })).toBeGreaterThan(0);
      expect(value("liqo_kube_client_errors_total", { cluster })).toBeGreaterThanOrEqual(0);
    }
    const rss = value("process_resident_memory_bytes", {})!;
    expect(rss).toBeGreaterThan(16 << 20);
    expect(rss).toBeLessThan(8 * 2 ** 30);
    expect(value("process_cpu_seconds_total", {})).toBeGreaterThan(0);
    const started = value("process_start_time_seconds", {})!;
    expect(started).toBeLessThanOrEqual(Date.now() / 1000);
    expect(started).toBeGreaterThan(Date.now() / 1000 - 3600);
  });
});
