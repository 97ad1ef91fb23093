// The client's Retry-After handling, against a tiny HTTP server that answers like an API server
// whose watch cache is (re)initializing. The real API server case is in tests/e2e (CRDs listed
// right after they are established).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { KubeConfig } from "./kubeconfig.ts";
import { createKubeClient } from "./client.ts";
import { KubeApiError } from "./errors.ts";
import { Resources } from "./resources.ts";

let server: ReturnType<typeof Bun.serve>;
const answers: Array<{ status: number; retryAfter?: string }> = [];
let calls = 0;

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch() {
      calls++;
      const next = answers.shift() ?? { status: 200 };
      if (next.status === 200)
        return Response.json({ kind: "ConfigMapList", apiVersion: "v1", metadata: {}, items: [] });
      const headers: Record<string, string> = next.retryAfter === undefined ? {} : { "retry-after": next.retryAfter };
      return Response.json(
        { kind: "Status", status: "Failure", reason: "TooManyRequests", message: "storage is (re)initializing" },
        { status: next.status, headers },
      );
    },
  });
});
afterAll(() => server.stop(true));

function client() {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${server.port}`, skipTLSVerify: true }],
    users: [{ name: "u" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return createKubeClient(kc);
}

test("a 429 with Retry-After is retried until the server answers", async () => {
  answers.push({ status: 429, retryAfter: "0" }, { status: 429, retryAfter: "0" });
  calls = 0;
  const list = await client().list(Resources.configMaps, { namespace: "default" });
  expect(list.items).toEqual([]);
  expect(calls).toBe(3);
});

test("a 503 with Retry-After is retried too", async () => {
  answers.push({ status: 503, retryAfter: "0" });
  calls = 0;
  await client().list(Resources.configMaps, { namespace: "default" });
  expect(calls).toBe(2);
});

test("a 429 without Retry-After is the caller's to handle", async () => {
  answers.push({ status: 429 });
  calls = 0;
  const err = await client()
    .list(Resources.configMaps, { namespace: "default" })
    .catch((e) => e);
  expect(err).toBeInstanceOf(KubeApiError);
  expect((err as KubeApiError).status).toBe(429);
  expect(calls).toBe(1);
});

test("retries are bounded: a server that always asks to wait ends in its error", async () => {
  for (let i = 0; i < 20; i++) answers.push({ status: 429, retryAfter: "0" });
  calls = 0;
  const err = await client()
    .list(Resources.configMaps, { namespace: "default" })
    .catch((e) => e);
  expect((err as KubeApiError).status).toBe(429);
  expect(calls).toBe(11);
  answers.length = 0;
});

test("a 5xx is retried only for reads: a DELETE it may have processed is not repeated", async () => {
  answers.push({ status: 503, retryAfter: "0" });
  calls = 0;
  const err = await client()
    .delete(Resources.configMaps, "x", "default")
    .catch((e) => e);
  expect((err as KubeApiError).status).toBe(503);
  expect(calls).toBe(1);
  answers.length = 0;
});
