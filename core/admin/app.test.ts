import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { createLogger } from "../log.ts";
import { createRegistry, parsePrometheusText } from "../metrics/index.ts";
import { createAdminApp, createReadiness, ProblemError } from "./index.ts";

async function problem(res: Response) {
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  return (await res.json()) as Record<string, unknown>;
}

describe("health endpoints", () => {
  test("/healthz answers ok", async () => {
    const res = await createAdminApp().request("/healthz");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  test("/readyz is 200 when every check passes, verbose lists them", async () => {
    const readiness = createReadiness();
    readiness.add("caches-synced", () => true);
    const app = createAdminApp({ readiness });
    const res = await app.request("/readyz");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ready" });
    const verbose = (await (await app.request("/readyz?verbose")).json()) as {
      checks: { name: string; ok: boolean }[];
    };
    expect(verbose.checks.map((c) => [c.name, c.ok])).toEqual([["caches-synced", true]]);
  });

  test("/readyz is a 503 problem naming each failing check and its reason", async () => {
    const readiness = createReadiness();
    readiness.add("caches-synced", () => true);
    readiness.add("leader", () => ({ ok: false, reason: "lease held by pod-b" }));
    readiness.add("hung", () => new Promise<void>(() => {}), { timeoutMs: 20 });
    const app = createAdminApp({ readiness });
    const res = await app.request("/readyz");
    expect(res.status).toBe(503);
    const body = await problem(res);
    expect(body).toMatchObject({
      type: "urn:liqo:problem:not-ready",
      title: "Not ready",
      status: 503,
      reason: "NotReady",
      detail: "2 readiness checks failed: leader (lease held by pod-b), hung (timed out after 20ms)",
    });
    expect((body.checks as { name: string }[]).map((c) => c.name)).toEqual(["leader", "hung"]);

    const verbose = await problem(await app.request("/readyz?verbose=true"));
    expect((verbose.checks as { name: string }[]).map((c) => c.name)).toEqual(["caches-synced", "leader", "hung"]);
    expect((await app.request("/readyz?exclude=leader&exclude=hung")).status).toBe(200);
  });

  test("/readyz/<check> runs one check; unknown checks and bad queries are problems", async () => {
    const readiness = createReadiness();
    readiness.add("leader", () => false);
    readiness.add("caches-synced", () => {});
    const app = createAdminApp({ readiness });
    expect((await app.request("/readyz/caches-synced")).status).toBe(200);
    expect((await app.request("/readyz/leader")).status).toBe(503);
    expect(await problem(await app.request("/readyz/nope"))).toMatchObject({ status: 404, reason: "NotFound" });
    const bad = await problem(await app.request("/readyz?colour=red"));
    expect(bad).toMatchObject({
      status: 400,
      reason: "Invalid",
      detail: "invalid readyz query: colour: unknown query parameter",
    });
    expect(await problem(await app.request("/readyz?verbose=maybe"))).toMatchObject({ status: 400, reason: "Invalid" });
  });
});

describe("/metrics", () => {
  test("serves the registry as parseable text 0.0.4 with process metrics", async () => {
    const registry = createRegistry();
    registry.counter({ name: "liqo_peerings_established_total", help: "Peerings established." }).inc(3);
    const res = await createAdminApp({ registry }).request("/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const families = parsePrometheusText(await res.text());
    expect(families.find((f) => f.name === "liqo_peerings_established_total")?.samples[0]?.value).toBe(3);
    expect(families.map((f) => f.name)).toContain("process_resident_memory_bytes");
  });

  test("processMetrics: false leaves them out", async () => {
    const text = await (await createAdminApp({ processMetrics: false }).request("/metrics")).text();
    expect(text).toBe("");
  });
});

describe("views and mounted routes", () => {
  const lines: string[] = [];
  const app = createAdminApp({
    logger: createLogger({}, { write: (l) => lines.push(l) }),
    views: {
      peerings: ({ query }) => ({ peerings: [{ clusterId: "c1", filter: query.state ?? null }] }),
      broken: () => {
        throw new Error("cache not started");
      },
      gone: () => {
        throw new ProblemError({ status: 409, reason: "Conflict", detail: "peering is being torn down" });
      },
    },
  });
  const api = new Hono();
  api.post("/peerings/:id/refresh", (c) => c.json({ refreshed: c.req.param("id") }));
  api.get("/explode", () => {
    throw new Error("secret detail");
  });
  app.route("/api", api);

  test("lists views and serves one as JSON with its query", async () => {
    expect(await (await app.request("/views")).json()).toEqual({ views: ["broken", "gone", "peerings"] });
    const res = await app.request("/views/peerings?state=established");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ peerings: [{ clusterId: "c1", filter: "established" }] });
  });

  test("a failing view is a problem with its reason", async () => {
    expect(await problem(await app.request("/views/broken"))).toMatchObject({
      status: 500,
      reason: "ViewFailed",
      detail: "view broken failed: cache not started",
    });
    expect(await problem(await app.request("/views/gone"))).toMatchObject({
      status: 409,
      reason: "Conflict",
      title: "Conflict",
    });
    expect(await problem(await app.request("/views/none"))).toMatchObject({ status: 404, reason: "NotFound" });
  });

  test("a role's mounted routes work and their errors are problems that do not leak", async () => {
    const ok = await app.request("/api/peerings/c1/refresh", { method: "POST" });
    expect(await ok.json()).toEqual({ refreshed: "c1" });
    const body = await problem(await app.request("/api/explode"));
    expect(body).toMatchObject({ status: 500, reason: "InternalError" });
    expect(JSON.stringify(body)).not.toContain("secret detail");
    expect(lines.some((l) => l.includes("secret detail"))).toBe(true);
  });

  test("unknown routes are 404 problems", async () => {
    expect(await problem(await app.request("/nowhere", { method: "DELETE" }))).toMatchObject({
      type: "urn:liqo:problem:not-found",
      status: 404,
      detail: "no route for DELETE /nowhere",
    });
  });

  test("bad view names are rejected at construction", () => {
    expect(() => createAdminApp({ views: { "Bad Name": () => 1 } })).toThrow(/view name "Bad Name"/);
  });
});
