// The in-cluster configuration against a real API server: a ServiceAccount's token (TokenRequest
// API), its CA and namespace written where a pod would have them, and a client made with no
// kubeconfig at all. RBAC decides what it may do, so the test proves the token is the one used,
// and a second ServiceAccount's token swapped into the file proves rotation is followed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { loadKubeConfig } from "../../core/kube/config.ts";
import { KubeApiError, KubeConfigError } from "../../core/kube/errors.ts";
import { Resources } from "../../core/kube/resources.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { statusOf } from "../support/status.ts";

const ns = "incluster-test";
let rig: TestRig;
let admin: KubeClient;
let saDir: string;
let env: Record<string, string>;

async function tokenFor(sa: string): Promise<string> {
  const review = await admin.request<{ status: { token: string } }>(
    "POST",
    `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`,
    {
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
    },
  );
  return review.status.token;
}

/** Writes the token the way the kubelet does: a new file renamed over the old one. */
function writeToken(token: string) {
  writeFileSync(join(saDir, "token.new"), token);
  renameSync(join(saDir, "token.new"), join(saDir, "token"));
}

async function whoAmI(client: KubeClient): Promise<string> {
  const review = await client.request<{ status: { userInfo: { username: string } } }>(
    "POST",
    "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    {
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    },
  );
  return review.status.userInfo.username;
}

const forbidden = statusOf;

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["incluster"], nodes: 1 });
  admin = rig.client("incluster");
  await admin.create(Resources.namespaces, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  for (const name of ["reader", "cm-reader"]) {
    await admin.create(Resources.serviceAccounts, {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name, namespace: ns },
    });
  }
  const rbac = await admin.resourceFor("rbac.authorization.k8s.io/v1", "Role");
  const binding = await admin.resourceFor("rbac.authorization.k8s.io/v1", "RoleBinding");
  const grants: [string, string][] = [
    ["reader", "pods"],
    ["cm-reader", "configmaps"],
  ];
  for (const [sa, resource] of grants) {
    await admin.create(rbac, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: sa, namespace: ns },
      rules: [{ apiGroups: [""], resources: [resource], verbs: ["get", "list"] }],
    } as never);
    await admin.create(binding, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: sa, namespace: ns },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: sa },
      subjects: [{ kind: "ServiceAccount", name: sa, namespace: ns }],
    } as never);
  }
  saDir = mkdtempSync(join(tmpdir(), "liqo-sa-"));
  copyFileSync(rig.clusters[0]!.pki.ca.cert, join(saDir, "ca.crt"));
  writeFileSync(join(saDir, "namespace"), ns);
  writeToken(await tokenFor("reader"));
  const url = new URL(rig.clusters[0]!.server);
  // HOME without .kube/config and no KUBECONFIG: only the in-cluster configuration applies.
  env = {
    HOME: saDir,
    KUBERNETES_SERVICE_HOST: url.hostname,
    KUBERNETES_SERVICE_PORT: url.port,
    LIQO_SERVICEACCOUNT_DIR: saDir,
  };
}, 600_000);

afterAll(async () => {
  await rig?.down();
  if (saDir) rmSync(saDir, { recursive: true, force: true });
});

describe("in-cluster configuration", () => {
  test("a client with no kubeconfig uses the ServiceAccount: allowed where RBAC allows, Forbidden elsewhere", async () => {
    const loaded = loadKubeConfig({ env });
    expect(loaded.context).toBe("in-cluster");
    expect(loaded.files).toEqual([]);
    expect(loaded.inCluster?.namespace).toBe(ns);
    const client = createKubeClient(loaded);
    expect(await whoAmI(client)).toBe(`system:serviceaccount:${ns}:reader`);
    const pods = await client.list(Resources.pods, { namespace: ns });
    expect(pods.items).toEqual([]);
    expect(await forbidden(client.list(Resources.configMaps, { namespace: ns }))).toBe(403);
    expect(await forbidden(client.list(Resources.pods, { namespace: "default" }))).toBe(403);
    expect(await forbidden(client.list(Resources.nodes))).toBe(403);
  });

  test("a rotated token file is picked up by a running client", async () => {
    const client = createKubeClient({ env });
    expect(await whoAmI(client)).toBe(`system:serviceaccount:${ns}:reader`);
    writeToken(await tokenFor("cm-reader"));
    // The same client object (cached TLS connection settings) now speaks as the other account.
    const user = await waitFor(
      "the new token to be used",
      async () => {
        const name = await whoAmI(client);
        return name.endsWith(":cm-reader") && name;
      },
      { timeoutMs: 30_000 },
    );
    expect(user).toBe(`system:serviceaccount:${ns}:cm-reader`);
    // A ConfigMap of our own: kube-root-ca.crt is published asynchronously and may not exist yet under load.
    await admin.apply(
      Resources.configMaps,
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "rotation-probe", namespace: ns }, data: { a: "1" } },
      { fieldManager: "incluster-test", force: true },
    );
    expect((await client.list(Resources.configMaps, { namespace: ns })).items.map((c) => c.metadata.name)).toContain(
      "rotation-probe",
    );
    expect(await forbidden(client.list(Resources.pods, { namespace: ns }))).toBe(403);
    writeToken(await tokenFor("reader")); // back, for the other tests
    await waitFor("the first token again", async () => (await whoAmI(client)).endsWith(":reader"), {
      timeoutMs: 30_000,
    });
  });

  test("an invalid token is rejected by the API server as Unauthorized", async () => {
    const client = createKubeClient({ env });
    writeToken("not-a-token");
    try {
      expect(await forbidden(client.list(Resources.pods, { namespace: ns }))).toBe(401);
    } finally {
      writeToken(await tokenFor("reader"));
    }
  });

  test("wrong inputs fail with errors naming the fix", () => {
    const missing = { ...env, LIQO_SERVICEACCOUNT_DIR: join(saDir, "nowhere") };
    expect(() => loadKubeConfig({ env: missing })).toThrow(/ca\.crt does not exist.*LIQO_SERVICEACCOUNT_DIR/);
    expect(() => loadKubeConfig({ env: { ...env, KUBERNETES_SERVICE_PORT: "https" } })).toThrow(
      /KUBERNETES_SERVICE_PORT must be a port number/,
    );
    expect(() => loadKubeConfig({ env, context: "rome" })).toThrow(/--context rome needs a kubeconfig/);
    // Without the pod variables nothing applies, and the error still says to pass --kubeconfig.
    expect(() => loadKubeConfig({ env: { HOME: saDir } })).toThrow(KubeConfigError);
    expect(() => loadKubeConfig({ env: { HOME: saDir } })).toThrow(/pass --kubeconfig/);
    // An explicit kubeconfig wins over the pod's environment.
    expect(loadKubeConfig({ env: { ...env, KUBECONFIG: rig.clusters[0]!.kubeconfig } }).files).toEqual([
      rig.clusters[0]!.kubeconfig,
    ]);
  });

  test("an empty token file is an error at start-up", () => {
    const dir = mkdtempSync(join(tmpdir(), "liqo-sa-empty-"));
    try {
      copyFileSync(join(saDir, "ca.crt"), join(dir, "ca.crt"));
      writeFileSync(join(dir, "token"), "");
      expect(() => loadKubeConfig({ env: { ...env, LIQO_SERVICEACCOUNT_DIR: dir } })).toThrow(/token .* is empty/);
      rmSync(join(dir, "token"));
      expect(() => loadKubeConfig({ env: { ...env, LIQO_SERVICEACCOUNT_DIR: dir } })).toThrow(
        /cannot read the ServiceAccount token.*automountServiceAccountToken/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
