import { describe, expect, test } from "bun:test";
import { createFailureLimiter } from "./rate-limit.ts";
import { parseIdentityRequest } from "./request.ts";
import { generateAuthToken, tokensEqual } from "./token.ts";
import { peerKubeconfig } from "./kubeconfig.ts";
import { twinNamespacesPolicy, twinNamespaceRules, peeringRules, twinNamespacesRules } from "./rbac.ts";

const ID = "4858caa2-7848-4aab-a6b4-6984389bac56";

describe("createFailureLimiter", () => {
  test("blocks after maxFailures in the window, and says for how long", () => {
    let now = 1_000;
    const l = createFailureLimiter({ maxFailures: 3, windowMs: 10_000, now: () => now });
    for (let i = 0; i < 3; i++) {
      expect(l.blockedFor("1.2.3.4")).toBe(0);
      l.fail("1.2.3.4");
      now += 100;
    }
    expect(l.blockedFor("1.2.3.4")).toBe(1_000 + 10_000 - now);
  });
  test("other clients are not affected", () => {
    const l = createFailureLimiter({ maxFailures: 1 });
    l.fail("a");
    expect(l.blockedFor("a")).toBeGreaterThan(0);
    expect(l.blockedFor("b")).toBe(0);
  });
  test("failures expire with the window", () => {
    let now = 0;
    const l = createFailureLimiter({ maxFailures: 2, windowMs: 1_000, now: () => now });
    l.fail("a");
    l.fail("a");
    expect(l.blockedFor("a")).toBeGreaterThan(0);
    now = 1_001;
    expect(l.blockedFor("a")).toBe(0);
    expect(l.size).toBe(0);
  });
  test("a success clears the record", () => {
    const l = createFailureLimiter({ maxFailures: 2 });
    l.fail("a");
    l.succeed("a");
    l.fail("a");
    expect(l.blockedFor("a")).toBe(0);
  });
  test("memory is bounded under a spray of addresses", () => {
    const l = createFailureLimiter({ maxClients: 100 });
    for (let i = 0; i < 1000; i++) l.fail(`10.0.${i >> 8}.${i & 255}`);
    expect(l.size).toBe(100);
  });
});

describe("parseIdentityRequest", () => {
  const good = { cluster: { clusterID: ID, clusterName: "rome" }, token: "t".repeat(128) };
  const parse = (body: unknown) => parseIdentityRequest(typeof body === "string" ? body : JSON.stringify(body));
  test("accepts Liqo's shape", () => expect(parse(good)).toEqual({ ok: true, value: good }));
  test("not JSON", () =>
    expect(parse("{nope")).toMatchObject({ ok: false, field: "body", message: expect.stringContaining("not JSON") }));
  test("an array", () => expect(parse([])).toMatchObject({ ok: false, field: "body" }));
  test("missing cluster", () => expect(parse({ token: "x" })).toMatchObject({ ok: false, field: "cluster" }));
  test("missing clusterID", () =>
    expect(parse({ ...good, cluster: { clusterName: "rome" } })).toMatchObject({
      ok: false,
      field: "cluster.clusterID",
      message: "cluster.clusterID is required",
    }));
  test("missing clusterName", () =>
    expect(parse({ ...good, cluster: { clusterID: ID } })).toMatchObject({ ok: false, field: "cluster.clusterName" }));
  test("clusterID not a string", () =>
    expect(parse({ ...good, cluster: { clusterID: 7, clusterName: "rome" } })).toMatchObject({
      ok: false,
      field: "cluster.clusterID",
      message: "cluster.clusterID must be a string",
    }));
  test("clusterID that cannot name objects", () =>
    expect(parse({ ...good, cluster: { clusterID: "../etc", clusterName: "rome" } })).toMatchObject({
      ok: false,
      field: "cluster.clusterID",
    }));
  test("bad clusterName", () =>
    expect(parse({ ...good, cluster: { clusterID: ID, clusterName: "Rome!" } })).toMatchObject({
      ok: false,
      field: "cluster.clusterName",
    }));
  test("missing token", () => expect(parse({ cluster: good.cluster })).toMatchObject({ ok: false, field: "token" }));
  test("token too long", () =>
    expect(parse({ ...good, token: "x".repeat(2000) })).toMatchObject({ ok: false, field: "token" }));
  test("keeps the caller's own token for the reverse direction", () =>
    expect(parse({ ...good, peerToken: "ab".repeat(64) })).toEqual({
      ok: true,
      value: { ...good, peerToken: "ab".repeat(64) },
    }));
  test("an empty or null peerToken is no peerToken", () => {
    expect(parse({ ...good, peerToken: "" })).toEqual({ ok: true, value: good });
    expect(parse({ ...good, peerToken: null })).toEqual({ ok: true, value: good });
  });
  test("a peerToken that is not a token is refused, naming the field", () => {
    for (const bad of [42, { a: 1 }, "has space", "x".repeat(1025), "line\nbreak", 'quote"s']) {
      expect(parse({ ...good, peerToken: bad })).toMatchObject({ ok: false, field: "peerToken" });
    }
  });
});

describe("tokens", () => {
  test("generated tokens are 128 hex chars, like Liqo's", () => expect(generateAuthToken()).toMatch(/^[0-9a-f]{128}$/));
  test("equal tokens compare equal", () => {
    const t = generateAuthToken();
    expect(tokensEqual(t, `${t}`)).toBe(true);
  });
  test("different tokens of any length compare unequal without throwing", () => {
    expect(tokensEqual("short", generateAuthToken())).toBe(false);
    expect(tokensEqual("", "x")).toBe(false);
  });
});

describe("peerKubeconfig", () => {
  test("carries the server, the CA and the token", () => {
    const kc = Bun.YAML.parse(
      peerKubeconfig({
        clusterName: "milan",
        apiServerUrl: "https://1.2.3.4:6443",
        apiServerCa: "PEM",
        token: "tok",
        namespace: "ns",
        userName: "liqo-rome",
      }),
      // biome-ignore lint/suspicious/noExplicitAny: RBAC and policy objects the assertions walk by path
    ) as any;
    expect(kc["current-context"]).toBe("milan");
    expect(kc.clusters[0].cluster.server).toBe("https://1.2.3.4:6443");
    expect(Buffer.from(kc.clusters[0].cluster["certificate-authority-data"], "base64").toString()).toBe("PEM");
    expect(kc.users[0].user.token).toBe("tok");
    expect(kc.contexts[0].context.namespace).toBe("ns");
  });
});

describe("RBAC", () => {
  const verbs = (rules: { resources: string[]; verbs: string[] }[], resource: string) =>
    rules.filter((r) => r.resources.includes(resource)).flatMap((r) => r.verbs);
  test("resource offers are read-only for the peer", () =>
    expect(verbs(peeringRules, "resourceoffers")).toEqual(["get", "list", "watch"]));
  test("pods in twin namespaces: read and delete (grace periods), never create or update (ShadowPods create them)", () =>
    expect(verbs(twinNamespaceRules, "pods")).toEqual(["get", "list", "watch", "delete"]));
  test("cluster-wide: namespaces only, never list or update", () => {
    expect(twinNamespacesRules.flatMap((r) => r.resources)).toEqual(["namespaces"]);
    expect(verbs(twinNamespacesRules, "namespaces").sort()).toEqual(["create", "delete", "get"]);
  });
  test("the policy checks the ID in the label against the ServiceAccount", () => {
    // biome-ignore lint/suspicious/noExplicitAny: RBAC and policy objects the assertions walk by path
    const [policy] = twinNamespacesPolicy() as any[];
    expect(policy.spec.validations[0].expression).toContain("liqo.io/remote-cluster-id");
    expect(policy.spec.variables[0].expression).toContain("substring(12)");
  });
});
