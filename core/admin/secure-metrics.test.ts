// The secure metrics listener against a real API server: a Prometheus ServiceAccount's token is
// reviewed (TokenReview), then authorized for get on /metrics (SubjectAccessReview); decisions are
// cached per token so a scrape costs no API request within the TTL; an API server that cannot
// answer gives 503, never metrics.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { KubeConfig } from "../kube/kubeconfig.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestRig, type TestRig } from "../../tests/rig/testing.ts";
import { waitFor } from "../../tests/support/wait.ts";
import { createKubeClient, type KubeClient } from "../kube/client.ts";
import { Resources, type KubeObject } from "../kube/resources.ts";
import { createRegistry, PROMETHEUS_CONTENT_TYPE, type Registry } from "../metrics/index.ts";
import { startAdminServer } from "./server.ts";
import { createMetricsApp, kubeMetricsAuthorizer, METRICS_READER_CLUSTERROLE } from "./secure-metrics.ts";

const NS = "monitoring";
const SA = "prometheus";
const USER = `system:serviceaccount:${NS}:${SA}`;

let rig: TestRig;
let admin: KubeClient;
let token: string;
let registry: Registry;

async function serviceAccountToken(namespace: string, name: string): Promise<string> {
  const answer = await admin.request<{ status: { token: string } }>(
    "POST",
    `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
    { body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } } },
  );
  return answer.status.token;
}

/** A client of the rig's API server that acts as the given bearer token. */
function clientWithToken(bearer: string): KubeClient {
  const cluster = admin.kc.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: "rig" }],
    users: [{ name: "sa", token: bearer }],
    contexts: [{ name: "sa", cluster: "rig", user: "sa" }],
    currentContext: "sa",
  });
  return createKubeClient(kc);
}

function nowhere(): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "nowhere", server: "https://127.0.0.1:1", skipTLSVerify: true }],
    users: [{ name: "nobody", token: "x" }],
    contexts: [{ name: "nowhere", cluster: "nowhere", user: "nobody" }],
    currentContext: "nowhere",
  });
  return createKubeClient(kc, { timeoutMs: 2000 });
}

function scrape(app: { fetch(req: Request): Response | Promise<Response> }, bearer?: string, init: RequestInit = {}) {
  const headers: Record<string, string> = bearer === undefined ? {} : { authorization: `Bearer ${bearer}` };
  return app.fetch(new Request("http://pod/metrics", { headers, ...init }));
}

async function problem(res: Response): Promise<{ detail: string; reason: string }> {
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  return (await res.json()) as { detail: string; reason: string };
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["oslo"], nodes: 1 });
  admin = rig.client("oslo");
  await admin.create(Resources.namespaces, { metadata: { name: NS } });
  await admin.create(Resources.serviceAccounts, { metadata: { name: SA, namespace: NS } });
  token = await serviceAccountToken(NS, SA);
  registry = createRegistry();
  registry.counter({ name: "liqo_secure_metrics_test_total", help: "A counter the scrape must show." }).inc(3);
}, 600_000);

afterAll(async () => {
  await rig?.down();
});

describe("secure metrics", () => {
  test("no token: 401 with a Bearer challenge, and no API request", async () => {
    const authorizer = kubeMetricsAuthorizer(admin);
    const res = await scrape(createMetricsApp({ registry, authorizer }));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
    expect((await problem(res)).detail).toContain("no bearer token");
    expect(authorizer.reviews()).toBe(0);
  });

  test("a header that is not Bearer: 401 invalid_request, and no API request", async () => {
    const authorizer = kubeMetricsAuthorizer(admin);
    const app = createMetricsApp({ registry, authorizer });
    const res = await app.fetch(new Request("http://pod/metrics", { headers: { authorization: "Basic YTpi" } }));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_request"');
    expect(authorizer.reviews()).toBe(0);
  });

  test("a token the API server does not know: 401 after one TokenReview", async () => {
    const authorizer = kubeMetricsAuthorizer(admin);
    const res = await scrape(createMetricsApp({ registry, authorizer }), "not-a-real-token");
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
    expect((await problem(res)).detail).toContain("not authenticated");
    expect(authorizer.reviews()).toBe(1);
  });

  test("a valid ServiceAccount token without RBAC: 403 naming the user and the ClusterRole to bind", async () => {
    const authorizer = kubeMetricsAuthorizer(admin);
    const res = await scrape(createMetricsApp({ registry, authorizer }), token);
    expect(res.status).toBe(403);
    const body = await problem(res);
    expect(body.reason).toBe("Forbidden");
    expect(body.detail).toContain(USER);
    expect(body.detail).toContain(METRICS_READER_CLUSTERROLE);
    expect(await authorizer.authorize(token)).toMatchObject({ allowed: false, status: 403 });
    expect(authorizer.reviews()).toBe(2);
  });

  test("with get on the non-resource URL /metrics bound: 200 and the registry's text", async () => {
    await admin.create(Resources.clusterRoles, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: METRICS_READER_CLUSTERROLE },
      rules: [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }],
    } as KubeObject);
    await admin.create(Resources.clusterRoleBindings, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: `${METRICS_READER_CLUSTERROLE}-${SA}` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: METRICS_READER_CLUSTERROLE },
      subjects: [{ kind: "ServiceAccount", name: SA, namespace: NS }],
    } as KubeObject);
    // RBAC reaches the authorizer shortly after the write; a short deny TTL lets the 403 expire.
    const app = createMetricsApp({ registry, authorizer: kubeMetricsAuthorizer(admin, { denyTtlMs: 100 }) });
    const res = await waitFor(
      "the binding to let the ServiceAccount scrape",
      async () => {
        const r = await scrape(app, token);
        return r.status === 200 ? r : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(res.headers.get("content-type")).toBe(PROMETHEUS_CONTENT_TYPE);
    expect(await res.text()).toContain("liqo_secure_metrics_test_total 3");
  });

  test("allowed decisions are cached per token: 2 reviews within the TTL, 2 more after it", async () => {
    let clock = 1_000_000;
    const authorizer = kubeMetricsAuthorizer(admin, { now: () => clock });
    const app = createMetricsApp({ registry, authorizer });
    expect((await scrape(app, token)).status).toBe(200);
    clock += 59_000;
    expect((await scrape(app, token)).status).toBe(200);
    expect(authorizer.reviews()).toBe(2);
    clock += 2000;
    expect((await scrape(app, token)).status).toBe(200);
    expect((await scrape(app, token)).status).toBe(200);
    expect(authorizer.reviews()).toBe(4);
  });

  test("concurrent scrapes with one token share one review", async () => {
    const authorizer = kubeMetricsAuthorizer(admin);
    const app = createMetricsApp({ registry, authorizer });
    const answers = await Promise.all([1, 2, 3].map(() => scrape(app, token)));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(authorizer.reviews()).toBe(2);
  });

  test("refusals are cached for the deny TTL only", async () => {
    let clock = 0;
    const authorizer = kubeMetricsAuthorizer(admin, { now: () => clock });
    expect(await authorizer.authorize("garbage")).toMatchObject({ allowed: false, status: 401 });
    clock += 9000;
    expect(await authorizer.authorize("garbage")).toMatchObject({ allowed: false, status: 401 });
    expect(authorizer.reviews()).toBe(1);
    clock += 2000;
    expect(await authorizer.authorize("garbage")).toMatchObject({ allowed: false, status: 401 });
    expect(authorizer.reviews()).toBe(2);
  });

  test("the cache is bounded: past maxEntries the oldest decision is forgotten", async () => {
    const authorizer = kubeMetricsAuthorizer(admin, { maxEntries: 2 });
    for (const t of ["first", "second", "third"]) await authorizer.authorize(t);
    expect(authorizer.reviews()).toBe(3);
    await authorizer.authorize("third");
    expect(authorizer.reviews()).toBe(3);
    await authorizer.authorize("first");
    expect(authorizer.reviews()).toBe(4);
  });

  test("an unreachable API server: 503 with the reason, not cached", async () => {
    const authorizer = kubeMetricsAuthorizer(nowhere());
    const app = createMetricsApp({ registry, authorizer });
    for (let i = 0; i < 2; i++) {
      const res = await scrape(app, token);
      expect(res.status).toBe(503);
      const body = await problem(res);
      expect(body.detail).toContain("cannot ask the API server");
      expect(body.detail).toContain("127.0.0.1:1");
    }
    expect(authorizer.reviews()).toBe(2);
  });

  test("a role that may not create TokenReviews: 503 naming system:auth-delegator", async () => {
    const authorizer = kubeMetricsAuthorizer(clientWithToken(token));
    const res = await scrape(createMetricsApp({ registry, authorizer }), token);
    expect(res.status).toBe(503);
    expect((await problem(res)).detail).toContain("system:auth-delegator");
  });

  test("other paths are 404 and other methods 405, without any review", async () => {
    const authorizer = kubeMetricsAuthorizer(admin);
    const app = createMetricsApp({ registry, authorizer });
    for (const path of ["/", "/healthz", "/views", "/metrics/extra"]) {
      const res = await app.fetch(new Request(`http://pod${path}`, { headers: { authorization: `Bearer ${token}` } }));
      expect(res.status).toBe(404);
      expect((await problem(res)).reason).toBe("NotFound");
    }
    const post = await scrape(app, token, { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET");
    expect(authorizer.reviews()).toBe(0);
  });

  test("served over HTTPS by startAdminServer, a scrape with the token gets the metrics", async () => {
    const dir = mkdtempSync(join(tmpdir(), "secure-metrics-"));
    try {
      const made = Bun.spawnSync(
        [
          "openssl",
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
          "/CN=liqo-metrics",
          "-addext",
          "subjectAltName=IP:127.0.0.1",
          "-keyout",
          "tls.key",
          "-out",
          "tls.crt",
        ],
        { cwd: dir, stderr: "pipe" },
      );
      if (made.exitCode !== 0) throw new Error(`openssl: ${made.stderr.toString()}`);
      const cert = await Bun.file(join(dir, "tls.crt")).text();
      const app = createMetricsApp({ registry, authorizer: kubeMetricsAuthorizer(admin) });
      const server = await startAdminServer({
        app,
        host: "127.0.0.1",
        port: 0,
        tls: { cert, key: Bun.file(join(dir, "tls.key")) },
      });
      try {
        const res = await fetch(`${server.url}/metrics`, {
          headers: { authorization: `Bearer ${token}` },
          tls: { ca: cert },
        } as RequestInit);
        expect(await res.text()).toContain("liqo_secure_metrics_test_total 3");
        expect(res.status).toBe(200);
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
