// How to reach the remote API server for streams the KubeClient does not model (logs that never
// end, exec over WebSocket): its URL, headers and TLS material, from the same kubeconfig.
import type { KubeClient } from "../../kube/client.ts";

export interface RemoteEndpoint {
  server: string;
  headers: Record<string, string>;
  tls: { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized?: boolean };
}

const cache = new WeakMap<KubeClient, Promise<RemoteEndpoint>>();

export function remoteEndpoint(client: KubeClient): Promise<RemoteEndpoint> {
  let found = cache.get(client);
  if (!found) {
    found = (async () => {
      const opts: {
        ca?: Buffer;
        cert?: Buffer;
        key?: Buffer;
        rejectUnauthorized?: boolean;
        headers?: Record<string, string>;
        auth?: string;
      } = {};
      await client.kc.applyToHTTPSOptions(opts as never);
      const headers: Record<string, string> = { "user-agent": "liqo-virtual-kubelet" };
      for (const [k, v] of Object.entries(opts.headers ?? {})) headers[k.toLowerCase()] = String(v);
      if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString("base64")}`;
      return {
        server: client.server,
        headers,
        tls: { ca: opts.ca, cert: opts.cert, key: opts.key, rejectUnauthorized: opts.rejectUnauthorized },
      };
    })();
    found.catch(() => cache.delete(client));
    cache.set(client, found);
  }
  return found;
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
