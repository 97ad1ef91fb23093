import { describe, expect, test } from "bun:test";
import type { KubeClient } from "../../kube/client.ts";
import { issueToken, issueTokens, TOKEN_EXPIRATION_SECONDS } from "./tokens.ts";

const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "operator", namespace: "liqo-demo", uid: "u-1" } };
const now = Date.parse("2026-11-25T12:00:00Z");

/** Answers the TokenRequest and the kube-root-ca.crt read as an API server would; records the requests. */
function fakeClient(expirationTimestamp: string | undefined) {
  // biome-ignore lint/suspicious/noExplicitAny: request bodies as the fake API server received them
  const requests: { method: string; path: string; body: any }[] = [];
  const client = {
    request: async (method: string, path: string, o: { body?: unknown }) => {
      requests.push({ method, path, body: o.body });
      return { status: { token: "tok", expirationTimestamp } };
    },
    get: async () => ({ metadata: { name: "kube-root-ca.crt" }, data: { "ca.crt": "PEM" } }),
  } as unknown as KubeClient;
  return { client, requests };
}

describe("issueToken", async () => {
  const { client, requests } = fakeClient("2026-11-25T13:00:00Z");
  const t = await issueToken(client, pod, "reader", now);
  test("POSTs the ServiceAccount's token subresource", () =>
    expect([requests[0]!.method, requests[0]!.path]).toEqual([
      "POST",
      "/api/v1/namespaces/liqo-demo/serviceaccounts/reader/token",
    ]));
  test("bound to the local pod", () =>
    expect(requests[0]!.body.spec.boundObjectRef).toEqual({
      apiVersion: "v1",
      kind: "Pod",
      name: "operator",
      uid: "u-1",
    }));
  test("for an hour", () => expect(requests[0]!.body.spec.expirationSeconds).toBe(TOKEN_EXPIRATION_SECONDS));
  test("the token", () => expect(t.token).toBe("tok"));
  test("the origin CA", () => expect(t.ca).toBe("PEM"));
  test("renewed at 80% of its life", () => expect(t.refreshAt).toBe(now + 48 * 60_000));
  test("without an expiry in the answer, 80% of the hour asked for", async () =>
    expect((await issueToken(fakeClient(undefined).client, pod, "reader", now)).refreshAt).toBe(now + 48 * 60_000));
});

describe("issueTokens: the API token and a projected one with its audience", async () => {
  const { client, requests } = fakeClient("2026-11-25T12:15:00Z");
  const t = await issueTokens(
    client,
    pod,
    "reader",
    [
      { key: "token", expirationSeconds: 3600 },
      { key: "vault.1.token", audience: "vault", expirationSeconds: 900 },
    ],
    now,
  );
  test("one TokenRequest each, bound to the pod; the audience only where asked", () => {
    expect(requests.map((r) => r.body.spec.audiences)).toEqual([undefined, ["vault"]]);
    expect(requests.map((r) => r.body.spec.expirationSeconds)).toEqual([3600, 900]);
    expect(requests.every((r) => r.body.spec.boundObjectRef.uid === "u-1")).toBe(true);
  });
  test("the API token as token, the other by its key", () =>
    expect([t.token, t.projected]).toEqual(["tok", { "vault.1.token": "tok" }]));
  test("renewed when the first is due", () => expect(t.refreshAt).toBe(now + 12 * 60_000));
});
