// A thin Kubernetes REST client on Bun's fetch. The kubeconfig (and its auth plug-ins) comes from
// @kubernetes/client-node; requests go through Bun's own TLS options, which carry the CA and the
// client certificate on Bun (client-node 2.x's undici dispatcher silently drops them).
import type { KubeConfig } from "./kubeconfig.ts";
import { readFileSync } from "node:fs";
import { apiErrorFromStatus, KubeApiError, transportError, type StatusBody } from "./errors.ts";
import { loadKubeConfig, type KubeConfigOptions, type LoadedKubeConfig } from "./config.ts";
import { credentialSource, sameCredential, type Credential, type CredentialSource } from "./credentials.ts";
import { watchLiveness, watchSilenceGuard, type WatchLivenessOptions } from "./liveness.ts";
import {
  builtinResource,
  keyOf,
  objectKey,
  resourcePath,
  splitApiVersion,
  type KubeObject,
  type ObjectList,
  type ResourceRef,
} from "./resources.ts";

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  /** The object's key, for error messages. */
  key?: string;
  timeoutMs?: number;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  signal?: AbortSignal;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: WatchEventType;
  object: T;
}

export interface DeleteOptions {
  /** Delete only if the object still has this UID (never another object of the same name). */
  uid?: string;
  resourceVersion?: string;
  gracePeriodSeconds?: number;
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
}

export type JsonPatchOp =
  | { op: "remove"; path: string }
  | { op: "add" | "replace" | "test"; path: string; value: unknown };

export interface ApplyOptions {
  fieldManager: string;
  force?: boolean;
  subresource?: string;
}

/** What does not rotate: the CA, the kubeconfig's client certificate, the server name, impersonation. */
interface Connection {
  headers: Record<string, string>;
  tls: {
    ca?: Buffer;
    cert?: string | Buffer;
    key?: string | Buffer;
    rejectUnauthorized?: boolean;
    serverName?: string;
  };
}

export interface KubeClientOptions extends WatchLivenessOptions {
  userAgent?: string;
  /** Per-request timeout for everything but watches. */
  timeoutMs?: number;
  /** HTTP CONNECT proxy towards the API server (Liqo's foreignProxyUrl: in-band peering reaches the peer through its proxy in the tunnel). */
  proxy?: string;
  /** kubectl's users[].user.tokenFile, re-read when it changes (loadKubeConfig finds it). */
  tokenFile?: string;
}

/** kubeconfig's *-data fields are base64, the others file paths. */
function material(file: string | undefined, data: string | undefined): Buffer | undefined {
  if (data) return Buffer.from(data, "base64");
  return file ? readFileSync(file) : undefined;
}

const MAX_RETRY_AFTER_ATTEMPTS = 10;

/**
 * The wait a 429/5xx answer asks for in Retry-After (seconds, capped at 10 s), if it asks. A 429 was
 * not processed, so any verb may repeat; a 5xx may have been (a timed-out DELETE by name could then
 * delete a re-created object), so only reads repeat after one.
 */
function retryAfterMs(res: Response, method: string): number | undefined {
  if (res.status !== 429 && !(res.status >= 500 && method === "GET")) return undefined;
  const header = res.headers.get("retry-after");
  if (header === null) return undefined;
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 10) * 1000 : 1000;
}

export class KubeClient {
  readonly server: string;
  private connection?: Connection;
  private readonly credentials: CredentialSource;
  private readonly liveness: Required<WatchLivenessOptions>;
  private pinging?: Promise<string | undefined>;
  private discovery = new Map<string, Promise<ResourceRef[]>>();
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly proxy?: string;
  /** Counts requests by verb and outcome, for the roles' /metrics. */
  readonly stats = {
    requests: 0,
    errors: 0,
    /** Answers 401 (a credential expired or revoked), and new credentials obtained since the first. */
    unauthorized: 0,
    credentialRefreshes: 0,
    /** Watches given up because they fell silent and the server did not answer a ping (see liveness.ts). */
    silentWatches: 0,
  };

  constructor(
    readonly kc: KubeConfig,
    options: KubeClientOptions = {},
  ) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new KubeApiError("the kubeconfig has no current cluster; pass --context", 0, "NoCluster", "");
    this.server = cluster.server.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.userAgent = options.userAgent ?? "liqo-bun";
    this.proxy = options.proxy;
    this.credentials = credentialSource(kc, { tokenFile: options.tokenFile });
    this.liveness = watchLiveness(options);
  }

  private conn(): Connection {
    if (this.connection) return this.connection;
    const cluster = this.kc.getCurrentCluster()!;
    const user = this.kc.getCurrentUser();
    const headers: Record<string, string> = { "user-agent": this.userAgent };
    if (user?.impersonateUser) headers["impersonate-user"] = user.impersonateUser;
    this.connection = {
      headers,
      tls: {
        ca: material(cluster.caFile, cluster.caData),
        cert: material(user?.certFile ?? undefined, user?.certData ?? undefined),
        key: material(user?.keyFile ?? undefined, user?.keyData ?? undefined),
        rejectUnauthorized: cluster.skipTLSVerify ? false : undefined,
        serverName: cluster.tlsServerName || undefined,
      },
    };
    return this.connection;
  }

  /**
   * The server, headers (the current credential's included) and TLS material of a request this
   * client does not model: a stream kept open, an upgrade, another rendering.
   */
  async endpoint(): Promise<{ server: string; headers: Record<string, string>; tls: Connection["tls"] }> {
    const conn = this.conn();
    const credential = await this.credential();
    return {
      server: this.server,
      headers: { ...conn.headers, ...credential.headers },
      tls: credential.cert ? { ...conn.tls, cert: credential.cert, key: credential.key } : conn.tls,
    };
  }

  /**
   * One request with the current credential; a 401 makes the source drop it, and if that yields
   * another credential (the plug-in ran again, the file was rewritten) the request is sent once
   * more: a 401 means the server did nothing, so any verb may repeat.
   */
  private async fetch(method: string, path: string, options: RequestOptions, stream = false): Promise<Response> {
    const credential = await this.credential();
    const res = await this.send(method, path, options, stream, credential);
    if (res.status !== 401) return res;
    this.stats.unauthorized++;
    this.credentials.rejected(credential);
    const next = await this.credential();
    if (sameCredential(next, credential)) return res;
    await res.body?.cancel();
    return this.send(method, path, options, stream, next);
  }

  private async credential(): Promise<Credential> {
    const credential = await this.credentials.current();
    this.stats.credentialRefreshes = this.credentials.refreshes;
    return credential;
  }

  private async send(
    method: string,
    path: string,
    options: RequestOptions,
    stream: boolean,
    credential: Credential,
  ): Promise<Response> {
    const conn = this.conn();
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { ...conn.headers, ...credential.headers, accept: "application/json" };
    const tls = credential.cert ? { ...conn.tls, cert: credential.cert, key: credential.key } : conn.tls;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
      headers["content-type"] = options.contentType ?? "application/json";
    }
    const key = options.key ?? path;
    const signals = [options.signal].filter(Boolean) as AbortSignal[];
    if (!stream) signals.push(AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs));
    this.stats.requests++;
    try {
      return await fetch(url, {
        method,
        headers,
        body,
        tls,
        ...(this.proxy ? { proxy: this.proxy } : {}),
        signal: signals.length ? AbortSignal.any(signals) : undefined,
        // Watches stay open for minutes; their end is the server's timeoutSeconds, not Bun's idle timer.
        ...(stream ? { timeout: false } : {}),
      } as RequestInit);
    } catch (err) {
      this.stats.errors++;
      throw transportError(err, this.server, key, method);
    }
  }

  /** A GET answered in plain text (a pod's log, `/api/v1/namespaces/<ns>/pods/<name>/log`). */
  async text(path: string, options: RequestOptions = {}): Promise<string> {
    const res = await this.fetch("GET", path, options);
    const body = await res.text();
    if (!res.ok) throw apiErrorFromStatus(res.status, { message: body.slice(0, 300) }, options.key ?? path, "GET");
    return body;
  }

  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return (await this.requestWithStatus<T>(method, path, options)).body;
  }

  /** Like request, with the HTTP status of the answer (201 Created against 200 OK, say). */
  async requestWithStatus<T = unknown>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<{ body: T; status: number }> {
    let res = await this.fetch(method, path, options);
    // Like client-go: a 429 carrying Retry-After (e.g. "storage is (re)initializing" right after a
    // CRD is established) means the server did not process the request; see retryAfterMs.
    for (let attempt = 1; attempt <= MAX_RETRY_AFTER_ATTEMPTS && retryAfterMs(res, method) !== undefined; attempt++) {
      await res.body?.cancel();
      await Bun.sleep(retryAfterMs(res, method)!);
      res = await this.fetch(method, path, options);
    }
    const text = await res.text();
    if (!res.ok) {
      this.stats.errors++;
      let status: StatusBody | undefined;
      try {
        status = JSON.parse(text);
      } catch {
        status = { message: text.slice(0, 300) };
      }
      throw apiErrorFromStatus(res.status, status, options.key ?? path, method);
    }
    return { body: (text ? JSON.parse(text) : undefined) as T, status: res.status };
  }

  get<T extends KubeObject = KubeObject>(
    res: ResourceRef,
    name: string,
    namespace?: string,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.request<T>("GET", resourcePath(res, namespace, name), { key: keyOf(namespace, name), signal });
  }

  /** Like get, but undefined instead of a NotFound error. */
  async find<T extends KubeObject = KubeObject>(
    res: ResourceRef,
    name: string,
    namespace?: string,
  ): Promise<T | undefined> {
    try {
      return await this.get<T>(res, name, namespace);
    } catch (err) {
      if (err instanceof KubeApiError && err.notFound) return undefined;
      throw err;
    }
  }

  list<T extends KubeObject = KubeObject>(res: ResourceRef, options: ListOptions = {}): Promise<ObjectList<T>> {
    const { namespace, signal, ...query } = options;
    return this.request<ObjectList<T>>("GET", resourcePath(res, namespace), { query: { ...query }, signal });
  }

  create<T extends KubeObject = KubeObject>(
    res: ResourceRef,
    obj: KubeObject,
    namespace = obj.metadata.namespace,
    options: { fieldManager?: string } = {},
  ): Promise<T> {
    return this.request<T>("POST", resourcePath(res, namespace), {
      body: obj,
      key: objectKey(obj),
      query: { fieldManager: options.fieldManager },
    });
  }

  replace<T extends KubeObject = KubeObject>(res: ResourceRef, obj: KubeObject, subresource?: string): Promise<T> {
    return this.request<T>("PUT", resourcePath(res, obj.metadata.namespace, obj.metadata.name, subresource), {
      body: obj,
      key: objectKey(obj),
    });
  }

  mergePatch<T extends KubeObject = KubeObject>(
    res: ResourceRef,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    subresource?: string,
  ): Promise<T> {
    return this.request<T>("PATCH", resourcePath(res, namespace, name, subresource), {
      body: patch,
      contentType: "application/merge-patch+json",
      key: keyOf(namespace, name),
    });
  }

  /** A JSON patch (RFC 6902); an op that fails (a "test", a missing path) fails the whole patch. */
  jsonPatch<T extends KubeObject = KubeObject>(
    res: ResourceRef,
    name: string,
    namespace: string | undefined,
    ops: JsonPatchOp[],
    options: { fieldManager?: string; subresource?: string } = {},
  ): Promise<T> {
    return this.request<T>("PATCH", resourcePath(res, namespace, name, options.subresource), {
      body: ops,
      contentType: "application/json-patch+json",
      key: keyOf(namespace, name),
      query: { fieldManager: options.fieldManager },
    });
  }

  /** Server-side apply: the object as this field manager wants it; JSON is valid apply YAML. */
  async apply<T extends KubeObject = KubeObject>(res: ResourceRef, obj: KubeObject, options: ApplyOptions): Promise<T> {
    return (await this.applyReporting<T>(res, obj, options)).object;
  }

  /** Server-side apply, and whether it created the object (201) rather than changed an existing one. */
  async applyReporting<T extends KubeObject = KubeObject>(
    res: ResourceRef,
    obj: KubeObject,
    options: ApplyOptions,
  ): Promise<{ object: T; created: boolean }> {
    const { namespace, name } = obj.metadata;
    if (!name) throw new KubeApiError(`apply ${res.kind}: the object has no metadata.name`, 0, "Invalid", "");
    const body = {
      ...obj,
      apiVersion: obj.apiVersion ?? (res.group ? `${res.group}/${res.version}` : res.version),
      kind: obj.kind ?? res.kind,
    };
    const answer = await this.requestWithStatus<T>("PATCH", resourcePath(res, namespace, name, options.subresource), {
      body,
      contentType: "application/apply-patch+yaml",
      key: objectKey(obj),
      query: { fieldManager: options.fieldManager, force: options.force ?? true },
    });
    return { object: answer.body, created: answer.status === 201 };
  }

  /** Deletes; false when it was already gone. With `uid`, a different object of that name is left alone (Conflict). */
  async delete(res: ResourceRef, name: string, namespace?: string, options: DeleteOptions = {}): Promise<boolean> {
    const preconditions =
      options.uid || options.resourceVersion
        ? { uid: options.uid, resourceVersion: options.resourceVersion }
        : undefined;
    try {
      await this.request("DELETE", resourcePath(res, namespace, name), {
        key: keyOf(namespace, name),
        body: {
          apiVersion: "v1",
          kind: "DeleteOptions",
          preconditions,
          gracePeriodSeconds: options.gracePeriodSeconds,
          propagationPolicy: options.propagationPolicy,
        },
      });
      return true;
    } catch (err) {
      if (err instanceof KubeApiError && err.notFound) return false;
      throw err;
    }
  }

  /**
   * A watch stream; ends when the server closes it. A 410 arrives as an ERROR event or a thrown Gone.
   * A watch that falls silent while the server stops answering is abandoned with a Timeout error
   * (liveness.ts), so the caller re-watches instead of waiting for TCP to give up.
   */
  async *watch<T extends KubeObject = KubeObject>(
    res: ResourceRef,
    options: WatchOptions = {},
  ): AsyncGenerator<WatchEvent<T>> {
    const { namespace, signal, ...query } = options;
    const path = resourcePath(res, namespace);
    const guard =
      this.liveness.watchIdleMs > 0
        ? watchSilenceGuard({
            liveness: this.liveness,
            bookmarks: Boolean(options.allowWatchBookmarks),
            ping: (ms) => this.ping(ms),
            onSilent: () => {
              this.stats.silentWatches++;
            },
          })
        : undefined;
    const signals = [signal, guard?.signal].filter(Boolean) as AbortSignal[];
    const silent = (err: unknown) =>
      new KubeApiError(`WATCH ${path} on ${this.server}: ${guard!.reason}; re-watch`, 0, "Timeout", path, {
        cause: err,
      });
    try {
      let response: Response;
      try {
        response = await this.fetch(
          "GET",
          path,
          {
            query: { ...query, watch: true },
            signal: signals.length ? AbortSignal.any(signals) : undefined,
            key: path,
          },
          true,
        );
      } catch (err) {
        if (guard?.reason) throw silent(err);
        throw err;
      }
      if (!response.ok) {
        const text = await response.text();
        let status: StatusBody | undefined;
        try {
          status = JSON.parse(text);
        } catch {
          status = { message: text.slice(0, 300) };
        }
        throw apiErrorFromStatus(response.status, status, path, "WATCH");
      }
      if (!response.body) return;
      const decoder = new TextDecoder();
      let buffered = "";
      try {
        for await (const chunk of response.body) {
          guard?.touch();
          buffered += decoder.decode(chunk as Uint8Array, { stream: true });
          let newline: number;
          while ((newline = buffered.indexOf("\n")) >= 0) {
            const line = buffered.slice(0, newline).trim();
            buffered = buffered.slice(newline + 1);
            if (line) yield JSON.parse(line) as WatchEvent<T>;
          }
          // Time the consumer spent on events is not the server's silence.
          guard?.touch();
        }
      } catch (err) {
        if (guard?.reason) throw silent(err);
        if (signal?.aborted) return;
        throw transportError(err, this.server, path, "WATCH");
      }
    } finally {
      guard?.stop();
    }
  }

  /** Whether the server answers at all (any HTTP status will do): undefined if it does, else why not. */
  ping(timeoutMs: number): Promise<string | undefined> {
    // One ping at a time per client, as client-go pings a connection once for all its streams.
    this.pinging ??= this.request("GET", "/version", { timeoutMs })
      .then(
        () => undefined,
        (err: Error) => (err instanceof KubeApiError && err.status > 0 ? undefined : err.message),
      )
      .finally(() => {
        this.pinging = undefined;
      });
    return this.pinging;
  }

  /** Finds where a kind is served; built-in kinds need no request. */
  async resourceFor(apiVersion: string, kind: string): Promise<ResourceRef> {
    const known = builtinResource(apiVersion, kind);
    if (known) return known;
    let pending = this.discovery.get(apiVersion);
    if (!pending) {
      const { group, version } = splitApiVersion(apiVersion);
      const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
      pending = this.request<{ resources: { name: string; kind: string; namespaced: boolean }[] }>("GET", path).then(
        (list) =>
          list.resources
            .filter((r) => !r.name.includes("/"))
            .map((r) => ({ group, version, kind: r.kind, plural: r.name, namespaced: r.namespaced })),
      );
      pending.catch(() => this.discovery.delete(apiVersion));
      this.discovery.set(apiVersion, pending);
    }
    const found = (await pending).find((r) => r.kind === kind);
    if (!found)
      throw new KubeApiError(
        `${apiVersion} ${kind} is not served by ${this.server}; is its CRD installed?`,
        404,
        "NotFound",
        kind,
      );
    return found;
  }

  /** Forgets discovery results, e.g. after installing CRDs. */
  resetDiscovery(): void {
    this.discovery.clear();
  }
}

export function createKubeClient(
  source: KubeConfig | LoadedKubeConfig | KubeConfigOptions = {},
  options: KubeClientOptions = {},
): KubeClient {
  if ("getCurrentCluster" in source) return new KubeClient(source as KubeConfig, options);
  const loaded = "kc" in source ? source : loadKubeConfig(source as KubeConfigOptions);
  return new KubeClient(loaded.kc, { tokenFile: loaded.tokenFile, ...options });
}
