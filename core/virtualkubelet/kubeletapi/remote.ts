// How to reach the remote API server for streams the KubeClient does not model (logs that never
// end, exec over WebSocket): its URL, headers and TLS material, from the same kubeconfig.
import type { KubeClient } from "../../kube/client.ts";

export interface RemoteEndpoint {
  server: string;
  headers: Record<string, string>;
  tls: { ca?: Buffer; cert?: string | Buffer; key?: string | Buffer; rejectUnauthorized?: boolean };
}

/** The remote client's server, headers and TLS material, its current credential included (an exec plug-in's, a rotated token). */
export async function remoteEndpoint(client: KubeClient): Promise<RemoteEndpoint> {
  const { server, headers, tls } = await client.endpoint();
  return {
    server,
    headers: { ...headers, "user-agent": "liqo-virtual-kubelet" },
    tls: { ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: tls.rejectUnauthorized },
  };
}

export function podPath(namespace: string, name: string, sub: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}/${sub}`;
}

/** The message of a Kubernetes Status body, or the raw text when it is not one. */
export function statusMessage(text: string): string {
  try {
    const s = JSON.parse(text) as { message?: string };
    if (s.message) return s.message;
  } catch {
    /* not JSON */
  }
  return text.trim().slice(0, 500);
}
