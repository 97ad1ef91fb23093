// A kubeconfig exec credential plug-in for tests/e2e/credentials.test.ts, and the token minting it
// shares with the test. Each run mints a ServiceAccount token bound to a fresh Secret (deleting
// the Secret revokes the token), records what it handed out in $PLUGIN_STATE and prints an
// ExecCredential, with an expirationTimestamp $PLUGIN_EXPIRES_IN seconds away when that is set.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";

/** A token of `sa` bound to a new Secret `secret`; TokenRequest's shortest life is 10 minutes. */
export async function mintBoundToken(
  admin: KubeClient,
  namespace: string,
  sa: string,
  secret: string,
): Promise<{ token: string; secret: string }> {
  const bound = await admin.create(Resources.secrets, { metadata: { name: secret, namespace }, data: {} });
  const answer = await admin.request<{ status: { token: string } }>(
    "POST",
    `/api/v1/namespaces/${namespace}/serviceaccounts/${sa}/token`,
    {
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: {
          expirationSeconds: 600,
          boundObjectRef: { apiVersion: "v1", kind: "Secret", name: secret, uid: bound.metadata.uid },
        },
      } satisfies Omit<KubeObject, "metadata"> & { spec: unknown },
    },
  );
  return { token: answer.status.token, secret };
}

if (import.meta.main) {
  const env = process.env;
  const stateFile = env.PLUGIN_STATE!;
  const runs = (existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, "utf8")).runs : 0) + 1;
  const admin = createKubeClient({ kubeconfig: env.ADMIN_KUBECONFIG! });
  const minted = await mintBoundToken(admin, env.PLUGIN_NAMESPACE!, env.PLUGIN_SA!, `plugin-${process.pid}-${runs}`);
  const expires = env.PLUGIN_EXPIRES_IN
    ? new Date(Date.now() + Number(env.PLUGIN_EXPIRES_IN) * 1000).toISOString()
    : undefined;
  const execInfo = JSON.parse(env.KUBERNETES_EXEC_INFO ?? "{}");
  writeFileSync(stateFile, JSON.stringify({ runs, ...minted, expires, execInfo }));
  console.log(
    JSON.stringify({
      apiVersion: execInfo.apiVersion ?? "client.authentication.k8s.io/v1",
      kind: "ExecCredential",
      status: { token: minted.token, ...(expires ? { expirationTimestamp: expires } : {}) },
    }),
  );
}
