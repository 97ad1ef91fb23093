// In-cluster configuration, as client-go's rest.InClusterConfig: the API server from
// KUBERNETES_SERVICE_HOST/PORT, the pod's ServiceAccount token, CA and namespace from its mounted
// directory. The kubelet rotates projected tokens (they expire after an hour), so the token is not
// read once: every request checks the file and re-reads it when it changed.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { KubeConfigError } from "./errors.ts";
import { KubeConfig } from "./kubeconfig.ts";

/** Where the kubelet mounts the ServiceAccount; LIQO_SERVICEACCOUNT_DIR overrides it (tests, sidecars). */
export const DEFAULT_SERVICEACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
export const IN_CLUSTER_CONTEXT = "in-cluster";

type Env = Record<string, string | undefined>;

/** True when the process looks like it runs in a pod: client-go's test, both variables set. */
export function inClusterAvailable(env: Env): boolean {
  return Boolean(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT);
}

export function serviceAccountDir(env: Env): string {
  return env.LIQO_SERVICEACCOUNT_DIR || DEFAULT_SERVICEACCOUNT_DIR;
}

/** A KubeConfig for the pod's own API server whose bearer token follows the token file. */
export class InClusterKubeConfig extends KubeConfig {
  readonly tokenFile: string;
  readonly caFile: string;
  /** The pod's namespace (the ServiceAccount's), as client-go reads it. */
  readonly namespace: string | undefined;
  private token = "";
  private stamp = "";

  constructor(
    readonly dir: string,
    server: string,
  ) {
    super();
    this.tokenFile = join(dir, "token");
    this.caFile = join(dir, "ca.crt");
    const nsFile = join(dir, "namespace");
    this.namespace = existsSync(nsFile) ? readFileSync(nsFile, "utf8").trim() || undefined : undefined;
    this.loadFromOptions({
      clusters: [{ name: IN_CLUSTER_CONTEXT, server, caFile: this.caFile, skipTLSVerify: false }],
      users: [{ name: "service-account" }],
      contexts: [{ name: IN_CLUSTER_CONTEXT, cluster: IN_CLUSTER_CONTEXT, user: "service-account" }],
      currentContext: IN_CLUSTER_CONTEXT,
    });
    this.bearerToken(); // a missing or empty token fails here, at start-up, not on the first request
  }

  /** The current token: re-read whenever the file's mtime, size or inode changed (a stat per call). */
  bearerToken(): string {
    let stat;
    try {
      stat = statSync(this.tokenFile);
    } catch (err) {
      // Keep using the last token while the kubelet swaps the ..data symlink; fail only if we never had one.
      if (this.token) return this.token;
      throw new KubeConfigError(
        `in-cluster config: cannot read the ServiceAccount token ${this.tokenFile} (${(err as Error).message}); mount the token (automountServiceAccountToken: true) or set LIQO_SERVICEACCOUNT_DIR to the directory holding token, ca.crt and namespace`,
        { cause: err },
      );
    }
    const stamp = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    if (stamp !== this.stamp) {
      const token = readFileSync(this.tokenFile, "utf8").trim();
      if (!token) {
        if (this.token) return this.token;
        throw new KubeConfigError(
          `in-cluster config: the ServiceAccount token ${this.tokenFile} is empty; mount a valid token or set LIQO_SERVICEACCOUNT_DIR`,
        );
      }
      this.token = token;
      this.stamp = stamp;
    }
    return this.token;
  }
}

export function loadInClusterConfig(env: Env): InClusterKubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new KubeConfigError(
      "in-cluster config needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (set in every pod); outside a pod pass --kubeconfig",
    );
  }
  if (!/^\d+$/.test(port)) throw new KubeConfigError(`KUBERNETES_SERVICE_PORT must be a port number, got "${port}"`);
  const dir = serviceAccountDir(env);
  const ca = join(dir, "ca.crt");
  if (!existsSync(ca)) {
    throw new KubeConfigError(
      `in-cluster config: ${ca} does not exist; mount the ServiceAccount (automountServiceAccountToken: true) or set LIQO_SERVICEACCOUNT_DIR to the directory holding token, ca.crt and namespace`,
    );
  }
  // An IPv6 address needs brackets in a URL, as net.JoinHostPort adds them in client-go.
  const hostPart = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return new InClusterKubeConfig(dir, `https://${hostPart}:${port}`);
}
