// Credentials that rotate, against a real API server: ServiceAccount tokens from the TokenRequest
// API, each bound to its own Secret so that deleting the Secret revokes the token at once (the API
// refuses expirations under 10 minutes, so revocation stands in for a short life). The client under
// test is never restarted: it must notice an exec plug-in's expirationTimestamp, a 401, and a
// token file rewritten under it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { createInformer } from "../../core/kube/informer.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { mintBoundToken } from "./credentials-plugin.ts";

const NS = "rotation";
const SA = "rotor";
let rig: TestRig;
let admin: KubeClient;
const scratch = mkdtempSync(join(tmpdir(), "credentials-e2e-"));

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["rome"], nodes: 1 });
  admin = rig.client("rome");
  await admin.create(Resources.namespaces, { metadata: { name: NS } });
  await admin.create(Resources.serviceAccounts, { metadata: { name: SA, namespace: NS } });
  const role = Resources.roles;
  const binding = Resources.roleBindings;
  await admin.create(role, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: SA, namespace: NS },
    rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch", "create"] }],
  } as KubeObject);
  await admin.create(binding, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: SA, namespace: NS },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: SA },
    subjects: [{ kind: "ServiceAccount", name: SA, namespace: NS }],
  } as KubeObject);
}, 600_000);

afterAll(async () => {
  await rig?.down();
  rmSync(scratch, { recursive: true, force: true });
});

const cluster = () => rig.clusters[0]!;

/** A kubeconfig for the ServiceAccount whose user is `user` (exec or tokenFile). */
function kubeconfigWith(name: string, user: Record<string, unknown>): string {
  const file = join(scratch, `${name}.kubeconfig`);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      "current-context": name,
      clusters: [{ name, cluster: { server: cluster().server, "certificate-authority": cluster().pki.ca.cert } }],
      users: [{ name, user }],
      contexts: [{ name, context: { cluster: name, user: name } }],
    }),
  );
  return file;
}

interface PluginState {
  runs: number;
  token: string;
  secret: string;
  expires?: string;
  execInfo: { spec?: { cluster?: { server?: string } } };
}

/** An exec plug-in: every run mints a new token bound to a new Secret; state in `dir`. */
function execUser(dir: string, expiresInSeconds?: number) {
  const env = [
    { name: "ADMIN_KUBECONFIG", value: cluster().kubeconfig },
    { name: "PLUGIN_STATE", value: join(dir, "state.json") },
    { name: "PLUGIN_NAMESPACE", value: NS },
    { name: "PLUGIN_SA", value: SA },
  ];
  if (expiresInSeconds) env.push({ name: "PLUGIN_EXPIRES_IN", value: String(expiresInSeconds) });
  return {
    exec: {
      apiVersion: "client.authentication.k8s.io/v1",
      command: process.execPath,
      args: [join(import.meta.dir, "credentials-plugin.ts")],
      env,
      provideClusterInfo: true,
      interactiveMode: "Never",
    },
  };
}
const pluginState = (dir: string): PluginState | undefined =>
  existsSync(join(dir, "state.json")) ? JSON.parse(readFileSync(join(dir, "state.json"), "utf8")) : undefined;

/** Deletes the Secret a token is bound to, and waits until the API server refuses the token. */
async function revoke(secret: string, token: string) {
  await admin.delete(Resources.secrets, secret, NS);
  await waitFor(
    `the token bound to ${secret} refused`,
    async () => {
      const res = await fetch(`${cluster().server}/api/v1/namespaces/${NS}/configmaps`, {
        headers: { authorization: `Bearer ${token}` },
        tls: { ca: readFileSync(cluster().pki.ca.cert) },
      } as RequestInit);
      await res.body?.cancel();
      return res.status === 401;
    },
    { timeoutMs: 30_000 },
  );
}

const listConfigMaps = (c: KubeClient) => c.list(Resources.configMaps, { namespace: NS });

describe("exec credential plug-ins", () => {
  test("an expired credential is replaced before the server has to refuse it", async () => {
    const dir = mkdtempSync(join(scratch, "exec-expiring-"));
    const client = createKubeClient({ kubeconfig: kubeconfigWith("expiring", execUser(dir, 3)) });
    await listConfigMaps(client);
    const first = pluginState(dir)!;
    expect(first.runs).toBe(1);
    // client-go's KUBERNETES_EXEC_INFO, with the cluster because provideClusterInfo is set.
    expect(first.execInfo.spec?.cluster?.server).toBe(cluster().server);
    await waitFor(
      "the first credential's expirationTimestamp to pass",
      () => Date.now() > Date.parse(first.expires!) + 100,
    );
    await revoke(first.secret, first.token);

    await listConfigMaps(client);
    const second = pluginState(dir)!;
    expect(second.runs).toBe(2);
    expect(second.token).not.toBe(first.token);
    expect(client.stats.unauthorized).toBe(0);
    expect(client.stats.credentialRefreshes).toBe(1);
  }, 120_000);

  test("a credential without expiry is kept until refused; a 401 runs the plug-in again and repeats the request once", async () => {
    const dir = mkdtempSync(join(scratch, "exec-revoked-"));
    const client = createKubeClient({ kubeconfig: kubeconfigWith("revoked", execUser(dir)) });
    await listConfigMaps(client);
    await listConfigMaps(client);
    const first = pluginState(dir)!;
    expect(first.runs).toBe(1);
    await revoke(first.secret, first.token);

    // A create refused with 401 was not processed: repeated, it makes exactly one object.
    await client.create(Resources.configMaps, {
      metadata: { name: "after-revocation", namespace: NS },
      data: { a: "1" },
    });
    expect(pluginState(dir)!.runs).toBe(2);
    expect(client.stats.unauthorized).toBe(1);
    const made = (await admin.list(Resources.configMaps, { namespace: NS })).items.filter(
      (c) => c.metadata.name === "after-revocation",
    );
    expect(made.length).toBe(1);
  }, 120_000);

  test("an informer keeps following the namespace across revoked credentials", async () => {
    const dir = mkdtempSync(join(scratch, "exec-informer-"));
    const client = createKubeClient({ kubeconfig: kubeconfigWith("informer", execUser(dir)) });
    // Short server-side watch timeouts: every re-watch presents the credential again.
    const informer = createInformer({
      client,
      resource: Resources.configMaps,
      namespace: NS,
      watchTimeoutSeconds: 2,
      backoffMaxMs: 1000,
    });
    informer.start();
    try {
      await informer.waitForSync(30_000);
      for (let round = 1; round <= 3; round++) {
        const before = pluginState(dir)!;
        await revoke(before.secret, before.token);
        const restarts = informer.stats.watchRestarts;
        await waitFor("a re-watch after the revocation", () => informer.stats.watchRestarts > restarts, {
          timeoutMs: 30_000,
        });
        await admin.create(Resources.configMaps, { metadata: { name: `round-${round}`, namespace: NS } });
        await waitFor(`round-${round} seen by the informer`, () => informer.get(`${NS}/round-${round}`), {
          timeoutMs: 30_000,
          describe: () => ({
            stats: informer.stats,
            lastError: informer.lastError?.message,
            plugin: pluginState(dir)?.runs,
          }),
        });
        expect(pluginState(dir)!.runs).toBe(before.runs + 1);
      }
    } finally {
      await informer.stop();
    }
  }, 180_000);
});

describe("token files", () => {
  test("a token file rewritten with a new token is followed after the old one is revoked", async () => {
    const file = join(scratch, "token");
    const one = await mintBoundToken(admin, NS, SA, "tokenfile-1");
    writeFileSync(file, one.token);
    const client = createKubeClient({ kubeconfig: kubeconfigWith("tokenfile", { tokenFile: file }) });
    await listConfigMaps(client);

    const two = await mintBoundToken(admin, NS, SA, "tokenfile-2");
    writeFileSync(file, `${two.token}\n`);
    await revoke(one.secret, one.token);
    await listConfigMaps(client);
    expect(client.stats.unauthorized).toBe(0);
    expect(client.stats.credentialRefreshes).toBe(1);
  }, 120_000);
});
