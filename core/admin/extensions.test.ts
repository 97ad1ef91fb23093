import { afterEach, describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { createRegistry } from "../metrics/index.ts";
import { bucketQuantile, summarizeHistogram, sumCounter, byLabel } from "./metric-summary.ts";
import {
  createAdminApp,
  mergeExtensions,
  readBodyLimited,
  startAdminServer,
  type AdminEnv,
  type AdminServer,
} from "./index.ts";

const servers: AdminServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

describe("extensions", () => {
  test("views and routes from several components are merged; a duplicate is an error naming it", () => {
    const a = { views: { pairs: () => [] }, routes: { "/api/a": new Hono<AdminEnv>() } };
    const b = { views: { peerings: () => [] }, maxRequestBodyBytes: 10 };
    const merged = mergeExtensions([a, b]);
    expect(Object.keys(merged.views).sort()).toEqual(["pairs", "peerings"]);
    expect(merged.maxRequestBodyBytes).toBe(10);
    expect(() => mergeExtensions([a, { views: { pairs: () => 1 } }])).toThrow('admin view "pairs" is offered twice');
    expect(() => mergeExtensions([a, { routes: { "/api/a": new Hono<AdminEnv>() } }])).toThrow("mounted twice");
    expect(() => mergeExtensions([{ routes: { api: new Hono<AdminEnv>() } }])).toThrow("must look like /api/things");
    expect(() => createAdminApp({ views: { pairs: () => 1 }, extensions: [a] })).toThrow("offered twice");
  });

  test("an extension's routes are mounted behind the app's auth", async () => {
    const api = new Hono<AdminEnv>();
    api.post("/", (c) => c.json({ by: c.get("principal")?.name }));
    const app = createAdminApp({
      auth: { tokens: [{ token: "write-0123456789abcdef", role: "write", name: "op" }] },
      extensions: [{ routes: { "/api/things": api } }],
    });
    expect((await app.request("/api/things", { method: "POST" })).status).toBe(401);
    const res = await app.request("/api/things", {
      method: "POST",
      headers: { authorization: "Bearer write-0123456789abcdef" },
    });
    expect(await res.json()).toEqual({ by: "op" });
  });

  test("the server raises its body limit to what the routes declared, so the route answers oversize itself", async () => {
    const api = new Hono<AdminEnv>();
    api.put("/", async (c) => c.json({ bytes: (await readBodyLimited(c.req.raw, 2 << 20, "upload")).length }));
    const app = createAdminApp({ extensions: [{ routes: { "/api/up": api }, maxRequestBodyBytes: 2 << 20 }] });
    const server = await startAdminServer({ app, port: 0 });
    servers.push(server);
    const ok = await fetch(`${server.url}/api/up`, { method: "PUT", body: new Uint8Array(1_500_000) });
    expect(await ok.json()).toEqual({ bytes: 1_500_000 });
    const big = await fetch(`${server.url}/api/up`, { method: "PUT", body: new Uint8Array((2 << 20) + 1) });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ reason: "TooLarge", limitBytes: 2 << 20 });
  });
});

describe("metric summaries", () => {
  test("quantiles interpolate inside buckets like histogram_quantile", () => {
    const buckets: Array<[number, number]> = [
      [0.1, 50],
      [0.2, 100],
      [Infinity, 100],
    ];
    expect(bucketQuantile(0.5, buckets)).toBeCloseTo(0.1);
    expect(bucketQuantile(0.75, buckets)).toBeCloseTo(0.15);
    expect(
      bucketQuantile(0.99, [
        [1, 0],
        [Infinity, 10],
      ]),
    ).toBe(1);
    expect(
      bucketQuantile(0.5, [
        [1, 0],
        [Infinity, 0],
      ]),
    ).toBeUndefined();
  });

  test("histograms and counters are merged per group from a registry scrape", async () => {
    const registry = createRegistry();
    const h = registry.histogram({ name: "x_seconds", help: "x", labelNames: ["reflector"], buckets: [0.01, 0.1, 1] });
    for (let i = 0; i < 99; i++) h.observe({ reflector: "pods/Pod" }, 0.005);
    h.observe({ reflector: "pods/Secret" }, 0.5);
    const c = registry.counter({ name: "y_total", help: "y", labelNames: ["reflector"] });
    c.inc({ reflector: "pods/Pod" }, 2);
    c.inc({ reflector: "pods/Secret" }, 3);
    const families = await registry.collect();
    const plugin = (l: Record<string, string>) => l.reflector?.split("/")[0];
    const merged = summarizeHistogram(families, "x_seconds", plugin).get("pods")!;
    expect(merged.count).toBe(100);
    expect(merged.meanSeconds).toBeCloseTo((99 * 0.005 + 0.5) / 100);
    expect(merged.p50Seconds!).toBeLessThanOrEqual(0.01);
    expect(merged.p99Seconds!).toBeLessThanOrEqual(0.01);
    expect(
      summarizeHistogram(families, "x_seconds", byLabel("reflector")).get("pods/Secret")!.p99Seconds,
    ).toBeGreaterThan(0.1);
    expect(sumCounter(families, "y_total", plugin).get("pods")).toBe(5);
  });
});
