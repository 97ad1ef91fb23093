// GET /containerLogs/{namespace}/{pod}/{container}: the remote pod's log, streamed through as it
// arrives. Follow mode has no idle timeout on either leg: a quiet container is not a dead one
// (Liqo's virtual kubelet cut such streams, a long-standing complaint).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../../log.ts";
import { podPath, remoteEndpoint, statusMessage, type RemoteEndpoint } from "./remote.ts";
import type { KubeClient } from "../../kube/client.ts";
import { keyOf } from "../../kube/resources.ts";
import type { RemotePodRef } from "./types.ts";

// Kubelet's query parameters, which are also pods/log's; `tail` is kubelet's legacy spelling.
const passThrough = [
  "follow",
  "previous",
  "tailLines",
  "sinceSeconds",
  "sinceTime",
  "timestamps",
  "limitBytes",
] as const;

export function remoteLogQuery(query: URLSearchParams, container: string): URLSearchParams {
  const out = new URLSearchParams({ container });
  for (const k of passThrough) {
    const v = query.get(k);
    if (v !== null && v !== "") out.set(k, v);
  }
  const tail = query.get("tail");
  if (tail && tail !== "all" && !out.has("tailLines")) out.set("tailLines", tail);
  return out;
}

export function validateLogQuery(query: URLSearchParams): string | undefined {
  for (const k of ["tailLines", "sinceSeconds", "limitBytes"]) {
    const v = query.get(k);
    if (v !== null && !/^\d+$/.test(v)) return `query parameter ${k}="${v}" must be a non-negative integer`;
  }
  const since = query.get("sinceTime");
  if (since && Number.isNaN(Date.parse(since))) return `query parameter sinceTime="${since}" must be an RFC 3339 time`;
  if (query.get("sinceSeconds") && since) return "sinceSeconds and sinceTime cannot both be set";
  return undefined;
}

export async function serveContainerLogs(
  req: IncomingMessage,
  res: ServerResponse,
  remote: KubeClient,
  target: RemotePodRef,
  container: string,
  query: URLSearchParams,
  log: Logger,
): Promise<void> {
  const endpoint: RemoteEndpoint = await remoteEndpoint(remote);
  const url = `${endpoint.server}${podPath(target.remoteNamespace, target.remoteName, "log")}?${remoteLogQuery(query, container)}`;
  const abort = new AbortController();
  // The caller (the local API server) went away: stop pulling from the remote one.
  res.on("close", () => abort.abort());
  let upstream: Response;
  try {
    upstream = await fetch(url, {
      headers: endpoint.headers,
      tls: endpoint.tls,
      signal: abort.signal,
      timeout: false,
    } as RequestInit);
  } catch (err) {
    if (abort.signal.aborted) return;
    log.warn("remote log request failed", { err, pod: keyOf(target.remoteNamespace, target.remoteName) });
    res
      .writeHead(502, { "content-type": "text/plain" })
      .end(
        `cannot reach the remote cluster's API server for the logs of ${target.remoteNamespace}/${target.remoteName}: ${(err as Error).message}\n`,
      );
    return;
  }
  if (!upstream.ok) {
    const text = await upstream.text();
    // The remote's own status code (404 for an unknown container, 400 for --previous without a
    // previous instance) with its message: the local API server relays both to kubectl.
    res.writeHead(upstream.status, { "content-type": "text/plain" }).end(`remote cluster: ${statusMessage(text)}\n`);
    return;
  }
  res.writeHead(200, { "content-type": "text/plain", "cache-control": "no-cache" });
  res.flushHeaders?.();
  if (!upstream.body) return void res.end();
  try {
    for await (const chunk of upstream.body) {
      if (!res.write(chunk))
        await new Promise<void>((resolve) => {
          res.once("drain", resolve);
          res.once("close", resolve);
        });
      if (res.destroyed) break;
    }
  } catch (err) {
    if (!abort.signal.aborted)
      log.warn("remote log stream broke", { err, pod: keyOf(target.remoteNamespace, target.remoteName) });
  }
  res.end();
  void req;
}
