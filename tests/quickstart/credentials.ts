// What the quick start's out-of-cluster roles run with, taken from what the chart installed:
// a kubeconfig per role holding a token of the role's ServiceAccount (so each role runs under the
// chart's least-privilege RBAC, as its pod would), and the chart's serving certificates.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { RigError } from "../rig/errors.ts";

/** A day: the quick start is a developer session; `rig down` ends it long before. */
const TOKEN_SECONDS = 24 * 3600;

interface AdminKubeconfig {
  clusters: { cluster: { server: string; "certificate-authority-data"?: string; "certificate-authority"?: string } }[];
}

/**
 * Writes a kubeconfig for ServiceAccount `serviceAccount` in `namespace`, with a token from the
 * TokenRequest API (what the kubelet mounts into a pod) and the admin kubeconfig's server and CA.
 */
export async function serviceAccountKubeconfig(
  client: KubeClient,
  adminKubeconfig: string,
  o: { namespace: string; serviceAccount: string; out: string },
): Promise<string> {
  const sa = await client.find(Resources.serviceAccounts, o.serviceAccount, o.namespace);
  if (!sa)
    throw new RigError(
      `ServiceAccount ${o.namespace}/${o.serviceAccount} does not exist: the chart should have created it (is the liqo release installed? helm list -n ${o.namespace})`,
    );
  const answer = await client.request<{ status: { token: string } }>(
    "POST",
    `/api/v1/namespaces/${o.namespace}/serviceaccounts/${o.serviceAccount}/token`,
    {
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: TOKEN_SECONDS },
      },
    },
  );
  const admin = Bun.YAML.parse(await Bun.file(adminKubeconfig).text()) as AdminKubeconfig;
  const cluster = admin.clusters?.[0]?.cluster;
  if (!cluster?.server) throw new RigError(`${adminKubeconfig} names no cluster server`);
  const user = `system:serviceaccount:${o.namespace}:${o.serviceAccount}`;
  const config = {
    apiVersion: "v1",
    kind: "Config",
    "current-context": o.serviceAccount,
    clusters: [{ name: "cluster", cluster }],
    users: [{ name: user, user: { token: answer.status.token } }],
    contexts: [{ name: o.serviceAccount, context: { cluster: "cluster", user, namespace: o.namespace } }],
  };
  writeFileSync(o.out, Bun.YAML.stringify(config, null, 2), { mode: 0o600 });
  return o.out;
}

/** Writes a kubernetes.io/tls Secret's tls.crt, tls.key (and ca.crt) to dir; returns the paths. */
export async function secretFiles(
  client: KubeClient,
  namespace: string,
  name: string,
  dir: string,
): Promise<{ cert: string; key: string; ca: string }> {
  const secret = await client.find<KubeObject & { data?: Record<string, string> }>(Resources.secrets, name, namespace);
  const data = secret?.data ?? {};
  if (!data["tls.crt"] || !data["tls.key"])
    throw new RigError(
      `Secret ${namespace}/${name} has no tls.crt/tls.key: the chart generates it (certificates.yaml); reinstall with liqoctl install`,
    );
  mkdirSync(dir, { recursive: true });
  const path = (f: string) => join(dir, `${name}.${f}`);
  writeFileSync(path("crt"), Buffer.from(data["tls.crt"], "base64"));
  writeFileSync(path("key"), Buffer.from(data["tls.key"], "base64"), { mode: 0o600 });
  writeFileSync(path("ca.crt"), Buffer.from(data["ca.crt"] ?? "", "base64"));
  return { cert: path("crt"), key: path("key"), ca: path("ca.crt") };
}

/** The cluster CA as a pod sees it (the kube-root-ca.crt ConfigMap the chart mounts). */
export async function clusterCaFile(client: KubeClient, namespace: string, out: string): Promise<string> {
  const cm = await client.find<KubeObject & { data?: Record<string, string> }>(
    Resources.configMaps,
    "kube-root-ca.crt",
    namespace,
  );
  if (!cm?.data?.["ca.crt"])
    throw new RigError(
      `ConfigMap ${namespace}/kube-root-ca.crt has no ca.crt yet (the controller manager publishes it in every namespace)`,
    );
  writeFileSync(out, cm.data["ca.crt"]);
  return out;
}
