// Offloaded pods talk to the origin API server with a token of their local ServiceAccount. Since
// Kubernetes 1.24 ServiceAccounts have no token Secret (Liqo v0.5 could not offload such pods); we
// ask the token controller for one (a kubernetes.io/service-account-token Secret we create), which
// the secrets reflector copies next to the offloaded pod.
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { Resources, type KubeObject } from "../../kube/resources.ts";

export function tokenSecretName(serviceAccount: string): string {
  return `${serviceAccount}-liqo-token`.slice(0, 253);
}

/** Ensures the token Secret exists and is filled in; returns its name, or undefined while the token controller works. */
export async function ensureTokenSecret(client: KubeClient, namespace: string, serviceAccount: string): Promise<string | undefined> {
  const name = tokenSecretName(serviceAccount);
  let secret = await client.find<KubeObject & { data?: Record<string, string> }>(Resources.secrets, name, namespace);
  if (!secret) {
    try {
      secret = await client.create(Resources.secrets, {
        apiVersion: "v1", kind: "Secret", type: "kubernetes.io/service-account-token",
        metadata: { name, namespace, annotations: { "kubernetes.io/service-account.name": serviceAccount }, labels: { "liqo.io/service-account-token": "true" } },
      } as KubeObject);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) throw err;
      secret = await client.get(Resources.secrets, name, namespace);
    }
  }
  return secret?.data?.token ? name : undefined;
}

type PodSpec = { serviceAccountName?: string; automountServiceAccountToken?: boolean; volumes?: { projected?: { sources?: Record<string, unknown>[] } }[] };

/** The ServiceAccount whose token the pod mounts, if it mounts one. */
export function mountedServiceAccount(pod: { spec?: PodSpec }): string | undefined {
  const spec = pod.spec ?? {};
  const mounts = spec.volumes?.some((v) => v.projected?.sources?.some((s) => "serviceAccountToken" in s));
  return mounts ? spec.serviceAccountName || "default" : undefined;
}
