// The authentication service between two rig clusters: rome (consumer) asks milan (provider) for
// an identity with milan's auth token, and the kubeconfig it gets back works against milan's API
// server for exactly what peering and offloading need, and for nothing else.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ForeignClusterResource,
  installCrds,
  ResourceOfferResource,
  ResourceRequestResource,
  REMOTE_CLUSTER_ID_LABEL,
  REMOTE_NAMESPACE_MANAGED_BY_ANNOTATION,
} from "../../core/apis/index.ts";
import { sampleResourceOffer, sampleResourceRequest } from "../../core/apis/samples.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources } from "../../core/kube/resources.ts";
import { CLUSTER_ID_CONFIGMAP, ensureClusterIdentity, type LocalClusterIdentity } from "../../core/peering/identity.ts";
import {
  AUTH_TOKEN_SECRET,
  createAuthServer,
  ensureAuthToken,
  generateAuthToken,
  remoteServiceAccountName,
  revokeIdentity,
  type AuthServer,
  type IdentityResponse,
} from "../../core/peering/auth/index.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { fuzzHttp, slowClients } from "../chaos/http-fuzz.ts";
import { rssMiB } from "../bench/stats.ts";
import { seeded } from "../chaos/random.ts";
import { statusOf } from "../support/status.ts";
import { createCa, sign } from "../rig/pki.ts";

let rig: TestRig;
let milan: KubeClient;
let rome: KubeClient;
let milanId: LocalClusterIdentity;
let romeId: LocalClusterIdentity;
let token: string;
let server: AuthServer;
let serverCa: string;
const dir = mkdtempSync(join(tmpdir(), "auth-e2e-"));

function startServer(extra: Partial<Parameters<typeof createAuthServer>[0]> = {}) {
  return createAuthServer({
    client: milan,
    clusterIdentity: milanId,
    apiServerUrl: rig.clusters[1]!.server,
    apiServerCa: readFileSync(rig.clusters[1]!.pki.ca.cert, "utf8"),
    tls: { cert: join(dir, "tls.crt"), key: join(dir, "tls.key") },
    port: 0,
    ...extra,
  });
}

/** What rome sends and gets: HTTPS verified against the throwaway CA that signed the serving cert. */
async function call(path: string, init: { method?: string; body?: unknown; raw?: string } = {}, url = server.url) {
  const res = await fetch(url + path, {
    method: init.method ?? (init.body !== undefined || init.raw !== undefined ? "POST" : "GET"),
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
    headers: { "content-type": "application/json" },
    tls: { ca: serverCa },
  } as RequestInit);
  // biome-ignore lint/suspicious/noExplicitAny: the auth service's JSON answers, asserted on a few fields
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

const exchange = (
  t = token,
  cluster: { clusterID: string; clusterName: string } = {
    clusterID: romeId.clusterId,
    clusterName: romeId.clusterName,
  },
  url?: string,
) => call("/identity", { body: { cluster, token: t } }, url);

function peerClient(kubeconfig: string, name: string): KubeClient {
  const file = join(dir, `${name}.kubeconfig`);
  writeFileSync(file, kubeconfig);
  return createKubeClient({ kubeconfig: file });
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  rome = rig.client("rome");
  milan = rig.client("milan");
  await installCrds(milan);
  milanId = await ensureClusterIdentity(milan, {
    clusterName: "milan",
    clusterLabels: { "topology.liqo.io/region": "north" },
  });
  romeId = await ensureClusterIdentity(rome, { clusterName: "rome" });
  token = await ensureAuthToken(milan);
  const ca = createCa(dir, "ca", "/CN=auth-ca");
  sign(dir, ca, "tls", "/CN=liqo-auth", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  serverCa = readFileSync(join(dir, "ca.crt"), "utf8");
  server = await startServer();
}, 600_000);

afterAll(async () => {
  await server?.stop();
  await rig?.down();
  rmSync(dir, { recursive: true, force: true });
});

describe("cluster identity", () => {
  test("is the kube-system UID and the install-time name, in Liqo's ConfigMap", async () => {
    const kubeSystem = await milan.get(Resources.namespaces, "kube-system");
    expect(milanId.clusterId).toBe(kubeSystem.metadata.uid!);
    expect(milanId).toEqual({
      clusterId: kubeSystem.metadata.uid!,
      clusterName: "milan",
      clusterLabels: { "topology.liqo.io/region": "north" },
    });
    const cm = await milan.get(Resources.configMaps, CLUSTER_ID_CONFIGMAP, "liqo");
    expect(cm.data).toMatchObject({ CLUSTER_ID: milanId.clusterId, CLUSTER_NAME: "milan" });
    expect(cm.metadata.labels).toMatchObject({ "app.kubernetes.io/name": "clusterid-configmap" });
  });

  test("survives a second install with other flags: the ConfigMap is never rewritten", async () => {
    const before = await milan.get(Resources.configMaps, CLUSTER_ID_CONFIGMAP, "liqo");
    const again = await ensureClusterIdentity(milan, { clusterName: "renamed", clusterLabels: { other: "x" } });
    expect(again).toEqual(milanId);
    const after = await milan.get(Resources.configMaps, CLUSTER_ID_CONFIGMAP, "liqo");
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion!);
  });

  test("without a name, one is generated and kept", async () => {
    await milan.create(Resources.namespaces, { metadata: { name: "liqo-unnamed" } });
    const first = await ensureClusterIdentity(milan, { liqoNamespace: "liqo-unnamed" });
    expect(first.clusterName).toMatch(/^[a-z]+-[a-z]+$/);
    expect(await ensureClusterIdentity(milan, { liqoNamespace: "liqo-unnamed" })).toEqual(first);
  });

  test("a bad name is refused with the flag to fix", async () => {
    await expect(
      ensureClusterIdentity(milan, { liqoNamespace: "liqo-bad", clusterName: "Not_A_Name" }),
    ).rejects.toThrow("--cluster-name");
  });
});

describe("GET /ids", () => {
  test("returns milan's identity in Liqo's shape", async () => {
    const res = await call("/ids");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ clusterId: milanId.clusterId, clusterName: "milan" });
  });
  test("other methods and paths get a JSON error", async () => {
    expect((await call("/ids", { method: "DELETE" })).status).toBe(405);
    const nf = await call("/nothing");
    expect(nf.status).toBe(404);
    expect(nf.body.message).toContain("/identity");
  });
});

describe("POST /identity", () => {
  let issued: IdentityResponse;
  let peer: KubeClient;

  beforeAll(async () => {
    const res = await exchange();
    expect(res.status).toBe(202);
    issued = res.body;
    peer = peerClient(issued.kubeconfig, "rome-at-milan");
  });

  test("creates the tenant namespace with Liqo's name and labels", async () => {
    expect(issued.namespace).toMatch(/^liqo-tenant-rome-[0-9a-f]{6}$/);
    const ns = await milan.get(Resources.namespaces, issued.namespace);
    expect(ns.metadata.labels).toMatchObject({
      "discovery.liqo.io/cluster-id": romeId.clusterId,
      "discovery.liqo.io/tenant-namespace": "true",
    });
    expect(issued.apiServerUrl).toBe(rig.clusters[1]!.server);
    expect(Buffer.from(issued.apiServerCA!, "base64").toString()).toBe(
      readFileSync(rig.clusters[1]!.pki.ca.cert, "utf8"),
    );
  });

  test("the kubeconfig works in the tenant namespace: ResourceRequest yes, ResourceOffer read-only", async () => {
    const rr = { ...sampleResourceRequest(), metadata: { name: romeId.clusterId, namespace: issued.namespace } };
    const created = await peer.create(ResourceRequestResource, rr);
    expect(created.metadata.namespace).toBe(issued.namespace);
    // Right after CRDs are installed the API server may answer 429 while its watch cache warms up.
    await waitFor(
      "rome may list ResourceOffers in its tenant namespace",
      async () => (await statusOf(peer.list(ResourceOfferResource, { namespace: issued.namespace }))) === 200,
    );
    const offer = { ...sampleResourceOffer(), metadata: { name: "forged", namespace: issued.namespace } };
    expect(await statusOf(peer.create(ResourceOfferResource, offer))).toBe(403);
  });

  test("everything outside what is granted is Forbidden", async () => {
    expect(await statusOf(peer.list(Resources.secrets, { namespace: "kube-system" }))).toBe(403);
    expect(await statusOf(peer.list(Resources.secrets, { namespace: issued.namespace }))).toBe(403);
    expect(await statusOf(peer.list(Resources.namespaces))).toBe(403);
    expect(await statusOf(peer.list(Resources.pods))).toBe(403);
    const rr = { ...sampleResourceRequest(), metadata: { name: "elsewhere", namespace: "default" } };
    expect(await statusOf(peer.create(ResourceRequestResource, rr))).toBe(403);
    expect(await statusOf(peer.create(Resources.configMaps, { metadata: { name: "x", namespace: "default" } }))).toBe(
      403,
    );
  });

  test("twin namespaces: only its own, and then it may work in them", async () => {
    const twin = (name: string, id: string) => ({
      metadata: {
        name,
        labels: { [REMOTE_CLUSTER_ID_LABEL]: id },
        annotations: { [REMOTE_NAMESPACE_MANAGED_BY_ANNOTATION]: "rome/nm" },
      },
    });
    // RBAC allows creating namespaces; the admission policy is what refuses this one, and says why.
    const refused = await peer
      .create(Resources.namespaces, { metadata: { name: "unlabelled" } })
      .catch((e) => e as KubeApiError);
    expect(refused).toBeInstanceOf(KubeApiError);
    expect((refused as KubeApiError).message).toContain(
      `may only create or delete namespaces labelled ${REMOTE_CLUSTER_ID_LABEL}=${romeId.clusterId}`,
    );
    expect(await statusOf(peer.create(Resources.namespaces, twin("someone-elses", "another-cluster")))).toBe(403);
    await milan.create(Resources.namespaces, { metadata: { name: "precious" } });
    expect(await statusOf(peer.delete(Resources.namespaces, "precious"))).toBe(403);

    await peer.create(Resources.namespaces, twin("demo-rome", romeId.clusterId));
    // The binder grants liqo-virtual-kubelet-remote there shortly after.
    await waitFor(
      "rome may create a ConfigMap in its twin namespace",
      () => peer.create(Resources.configMaps, { metadata: { name: "cfg", namespace: "demo-rome" } }).then(() => true),
      { timeoutMs: 60_000 },
    );
    expect(await statusOf(peer.list(Resources.pods, { namespace: "demo-rome" }))).toBe(200);
    expect(
      await statusOf(
        peer.create(Resources.pods, {
          metadata: { name: "p", namespace: "demo-rome" },
          spec: { containers: [{ name: "c", image: "x" }] },
        }),
      ),
    ).toBe(403);
    // Deleting its offloaded pods (with the user's grace period) is allowed there, and only there.
    await milan.create(Resources.pods, {
      metadata: { name: "offloaded", namespace: "demo-rome" },
      spec: { containers: [{ name: "c", image: "x" }] },
    });
    expect(await peer.delete(Resources.pods, "offloaded", "demo-rome")).toBe(true);
    await milan.create(Resources.pods, {
      metadata: { name: "bystander", namespace: "precious" },
      spec: { containers: [{ name: "c", image: "x" }] },
    });
    expect(await statusOf(peer.delete(Resources.pods, "bystander", "precious"))).toBe(403);
    expect(
      await statusOf(peer.create(Resources.configMaps, { metadata: { name: "cfg", namespace: "precious" } })),
    ).toBe(403);
    expect(await peer.delete(Resources.namespaces, "demo-rome")).toBe(true);
  });

  test("a repeated exchange is idempotent: same namespace, same token, one ServiceAccount", async () => {
    const again = await exchange();
    expect(again.status).toBe(202);
    expect(again.body.namespace).toBe(issued.namespace);
    expect(again.body.token).toBe(issued.token);
    const sas = await milan.list(Resources.serviceAccounts, {
      namespace: issued.namespace,
      labelSelector: `discovery.liqo.io/cluster-id=${romeId.clusterId}`,
    });
    expect(sas.items.length).toBe(1);
  });

  test("a wrong token gets 401 with a clear message", async () => {
    const res = await exchange("not-the-token");
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({
      error: "Unauthorized",
      message: expect.stringContaining("wrong or has been revoked"),
    });
    expect(JSON.stringify(res.body)).not.toContain("at ");
  });

  test("malformed requests get 400 naming the field", async () => {
    const notJson = await call("/identity", { raw: "{not json" });
    expect(notJson.status).toBe(400);
    expect(notJson.body).toMatchObject({ field: "body", message: expect.stringContaining("not JSON") });
    const noId = await call("/identity", { body: { cluster: { clusterName: "rome" }, token } });
    expect(noId.status).toBe(400);
    expect(noId.body).toMatchObject({ field: "cluster.clusterID", message: "cluster.clusterID is required" });
    const noToken = await call("/identity", {
      body: { cluster: { clusterID: romeId.clusterId, clusterName: "rome" } },
    });
    expect(noToken.body.field).toBe("token");
    expect((await call("/identity")).status).toBe(405);
  });

  test("peering with itself, or a second cluster claiming rome's ID, is refused", async () => {
    const self = await exchange(token, { clusterID: milanId.clusterId, clusterName: "milan" });
    expect(self.status).toBe(400);
    expect(self.body.message).toContain("cannot peer with itself");
    const dup = await exchange(token, { clusterID: romeId.clusterId, clusterName: "impostor" });
    expect(dup.status).toBe(409);
    expect(dup.body.message).toContain("issued to cluster rome");
  });

  test("revocation: the old kubeconfig stops working and the tenant namespace goes", async () => {
    const deleted = await revokeIdentity(milan, romeId.clusterId);
    expect(deleted).toContain(`namespace/${issued.namespace}`);
    const fresh = peerClient(issued.kubeconfig, "rome-after-revoke");
    await waitFor("the revoked token to be refused", async () => {
      const s = await statusOf(fresh.list(ResourceRequestResource, { namespace: issued.namespace }));
      return s === 401 || s === 403;
    });
    await waitFor(
      "the tenant namespace to be gone",
      async () => !(await milan.find(Resources.namespaces, issued.namespace)),
      { timeoutMs: 120_000 },
    );
    expect(await revokeIdentity(milan, romeId.clusterId)).toEqual([]);
  });

  test("a rotated auth token revokes the old one; the new one works (re-peering)", async () => {
    const rotated = generateAuthToken();
    await milan.mergePatch(Resources.secrets, AUTH_TOKEN_SECRET, "liqo", {
      data: { token: Buffer.from(rotated).toString("base64") },
    });
    const old = await exchange(token);
    expect(old.status).toBe(401);
    const res = await exchange(rotated);
    expect(res.status).toBe(202);
    const again = peerClient(res.body.kubeconfig, "rome-repeered");
    expect(await statusOf(again.list(ResourceRequestResource, { namespace: res.body.namespace }))).toBe(200);
    token = rotated;
  });

  test("two-way peering: revoking rome's identity keeps the tenant namespace milan's own outgoing peering uses", async () => {
    const res = await exchange(token);
    expect(res.status).toBe(202);
    const ns = res.body.namespace as string;
    await milan.create(ForeignClusterResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ForeignCluster",
      metadata: { name: "rome" },
      spec: {
        clusterIdentity: { clusterID: romeId.clusterId, clusterName: "rome" },
        foreignAuthUrl: "https://127.0.0.1:1",
        outgoingPeeringEnabled: "Yes",
        incomingPeeringEnabled: "Auto",
        networkingEnabled: "No",
      },
    });
    const deleted = await revokeIdentity(milan, romeId.clusterId);
    expect(deleted).not.toContain(`namespace/${ns}`);
    expect(deleted).toContain(`serviceaccount/${ns}/${remoteServiceAccountName(romeId.clusterId)}`);
    const revoked = peerClient(res.body.kubeconfig, "rome-revoked-two-way");
    await waitFor("the revoked token to be refused", async () => {
      const s = await statusOf(revoked.list(ResourceRequestResource, { namespace: ns }));
      return s === 401 || s === 403;
    });
    expect((await milan.find(Resources.namespaces, ns))?.metadata.deletionTimestamp).toBeUndefined();
    // Once milan stops peering towards rome, the namespace goes with the last direction.
    await milan.delete(ForeignClusterResource, "rome");
    expect(await revokeIdentity(milan, romeId.clusterId)).toContain(`namespace/${ns}`);
    await waitFor("the tenant namespace to be gone", async () => !(await milan.find(Resources.namespaces, ns)), {
      timeoutMs: 120_000,
    });
  });
});

describe("rate limiting and restarts", () => {
  test("failed attempts are limited per client: 429 after N, with Retry-After", async () => {
    const limited = await startServer({ rateLimit: { maxFailures: 3, windowMs: 600_000 }, twinBinder: false });
    try {
      for (let i = 0; i < 3; i++) expect((await exchange("wrong", undefined, limited.url)).status).toBe(401);
      const blocked = await exchange("wrong", undefined, limited.url);
      expect(blocked.status).toBe(429);
      expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
      // Even the right token waits: a guesser cannot tell when it hit.
      expect((await exchange(token, undefined, limited.url)).status).toBe(429);
    } finally {
      await limited.stop();
    }
  });

  test("the identity is the same after the auth service restarts", async () => {
    await server.stop();
    milanId = await ensureClusterIdentity(milan, { clusterName: "milan" });
    server = await startServer();
    expect((await call("/ids")).body.clusterId).toBe(
      (await milan.get(Resources.namespaces, "kube-system")).metadata.uid!,
    );
  });
});

describe("liqo auth (the role)", () => {
  test("bad flags are refused before anything starts", async () => {
    const p = Bun.spawn(
      [
        "./node_modules/.bin/bun",
        "cli/liqo.ts",
        "auth",
        "--tls-cert-file",
        join(dir, "tls.crt"),
        "--tls-key-file",
        join(dir, "tls.key"),
        "--cluster-labels",
        "region",
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const err = await new Response(p.stderr).text();
    expect(err).toContain("--cluster-labels");
    expect(await p.exited).toBe(2);
  });

  /** `liqo auth` as a process; its auth and admin URLs once it printed them. */
  async function startAuthRole() {
    const p = Bun.spawn(
      [
        "./node_modules/.bin/bun",
        "cli/liqo.ts",
        "auth",
        "--kubeconfig",
        rig.clusters[1]!.kubeconfig,
        "--tls-cert-file",
        join(dir, "tls.crt"),
        "--tls-key-file",
        join(dir, "tls.key"),
        "--address",
        "127.0.0.1:0",
        "--admin-address",
        "127.0.0.1:0",
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const reader = p.stdout.getReader();
    let out = "";
    const line = await waitFor(
      "the role to print its addresses",
      async () => {
        const { value, done } = await reader.read();
        if (done) throw new Error("liqo auth exited: " + (await new Response(p.stderr).text()));
        out += new TextDecoder().decode(value);
        return out.includes("admin API on") ? out : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const auth = line.match(/auth service on (https:\/\/\S+)/)![1]!;
    const admin = line.match(/admin API on (http\S+)/)![1]!;
    return { p, auth, admin };
  }

  test("serves /ids and the admin API", async () => {
    const { p, auth, admin } = await startAuthRole();
    try {
      expect((await call("/ids", {}, auth)).body).toEqual({ clusterId: milanId.clusterId, clusterName: "milan" });
      expect((await fetch(`${admin}/healthz`)).status).toBe(200);
      await waitFor("readyz", async () => (await fetch(`${admin}/readyz`)).status === 200);
      expect(await (await fetch(`${admin}/metrics`)).text()).toContain("process_");
    } finally {
      p.kill("SIGTERM");
      await p.exited;
    }
  });

  test("hostile HTTP (random methods, paths, headers and bodies; 100 slow clients; 400 connections at once): every request answered below 500 or closed, well-formed ones still served, no token in any answer, memory bounded", async () => {
    const { p, auth, admin } = await startAuthRole();
    try {
      for (let i = 0; i < 20; i++) await call("/ids", {}, auth);
      const before = rssMiB(p.pid);
      const seed = Number(process.env.LIQO_FUZZ_SEED ?? Date.now() % 1_000_000);
      const rand = seeded(seed);
      const answers = [
        ...(await fuzzHttp(auth, rand, 300, 8, { ca: serverCa })),
        ...(await fuzzHttp(admin, rand, 200, 8)),
      ];
      const slow = [slowClients(auth, 100), slowClients(admin, 100)];
      // Meanwhile the well-formed requests are served, and 400 at once all get an answer.
      expect((await call("/ids", {}, auth)).status).toBe(200);
      expect((await fetch(`${admin}/healthz`)).status).toBe(200);
      const many = await Promise.all(
        Array.from({ length: 400 }, () =>
          call("/ids", {}, auth).then(
            (r) => r.status,
            () => 0,
          ),
        ),
      );
      const closedEarly = slow.map((close) => close());
      const tally: Record<string, number> = {};
      for (const a of answers) tally[String(a.status)] = (tally[String(a.status)] ?? 0) + 1;
      const after = rssMiB(p.pid);
      console.log(
        `hostile HTTP (seed ${seed}, LIQO_FUZZ_SEED replays it): answers ${JSON.stringify(tally)}; 400 at once: ${many.filter((s) => s === 200).length} answered 200; slow clients closed by the server before the end: ${closedEarly.join(" and ")} of 100; RSS ${before.toFixed(0)} → ${after.toFixed(0)} MiB`,
      );
      expect(
        answers.filter((a) => a.status !== "no answer" && a.status >= 500).map((a) => `${a.request}: ${a.status}`),
      ).toEqual([]);
      // No answer may carry the auth token, a ServiceAccount token (JWT) or a private key.
      const secrets = [token, "eyJhbGci", "PRIVATE KEY"];
      expect(answers.filter((a) => secrets.some((x) => a.body.includes(x))).map((a) => a.request)).toEqual([]);
      expect(many.filter((s) => s !== 200).length).toBe(0);
      expect(p.exitCode).toBeNull();
      expect((await call("/ids", {}, auth)).body.clusterName).toBe("milan");
      // Bounded: 300 bodies of up to 1 MB went through; keeping them would cost hundreds of MiB.
      expect(after - before).toBeLessThan(150);
    } finally {
      p.kill("SIGTERM");
      await p.exited;
    }
  }, 300_000);
});
