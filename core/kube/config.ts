// Kubeconfig loading with kubectl's rules: --kubeconfig, else every file in KUBECONFIG merged
// (the first file to define a name or current-context wins), else ~/.kube/config; then --context.
// When none of those applies inside a pod (KUBERNETES_SERVICE_HOST/PORT set), the pod's
// ServiceAccount is used, as client-go's rest.InClusterConfig (see incluster.ts).
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, resolve } from "node:path";
import { KubeConfigError } from "./errors.ts";
import { IN_CLUSTER_CONTEXT, inClusterAvailable, loadInClusterConfig } from "./incluster.ts";
import { KubeConfig } from "./kubeconfig.ts";

export interface KubeConfigOptions {
  /** Like kubectl's --kubeconfig: one file, which must exist. */
  kubeconfig?: string;
  /** Like kubectl's --context. */
  context?: string;
  /** The environment to read KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST/PORT and
   *  LIQO_SERVICEACCOUNT_DIR from; the process's by default. */
  env?: Record<string, string | undefined>;
}

export interface LoadedKubeConfig {
  kc: KubeConfig;
  context: string;
  server: string;
  /** Empty for the in-cluster configuration. */
  files: string[];
  /** Set when the configuration is the pod's ServiceAccount: its namespace. */
  inCluster?: { namespace?: string; dir: string };
  /**
   * The user's token file (kubectl's `tokenFile`, or client-node's `token-file`), re-read by the
   * client whenever it changes; client-node drops the one and reads the other once.
   */
  tokenFile?: string;
}

type Named = { name: string; [k: string]: unknown };
interface RawConfig {
  clusters?: Named[];
  users?: Named[];
  contexts?: Named[];
  "current-context"?: string;
  [k: string]: unknown;
}

const pathFields: Record<"clusters" | "users", [string, string][]> = {
  clusters: [["cluster", "certificate-authority"]],
  users: [
    ["user", "client-certificate"],
    ["user", "client-key"],
    ["user", "tokenFile"],
    ["user", "token-file"],
  ],
};

export function kubeconfigFiles(options: KubeConfigOptions = {}): string[] {
  const env = options.env ?? process.env;
  if (options.kubeconfig) {
    if (!existsSync(options.kubeconfig)) {
      throw new KubeConfigError(
        `kubeconfig ${options.kubeconfig} does not exist; pass an existing file to --kubeconfig`,
      );
    }
    return [resolve(options.kubeconfig)];
  }
  if (env.KUBECONFIG) {
    // kubectl skips listed files that do not exist.
    const files = env.KUBECONFIG.split(delimiter)
      .filter((f) => f && existsSync(f))
      .map((f) => resolve(f));
    if (files.length === 0) {
      throw new KubeConfigError(
        `none of the files in KUBECONFIG (${env.KUBECONFIG}) exists; fix KUBECONFIG or pass --kubeconfig`,
      );
    }
    return files;
  }
  const home = env.HOME ?? homedir();
  const file = resolve(home, ".kube", "config");
  if (!existsSync(file)) {
    throw new KubeConfigError(
      `no kubeconfig: ${file} does not exist and KUBECONFIG is not set; pass --kubeconfig (in a pod, KUBERNETES_SERVICE_HOST/PORT select the in-cluster ServiceAccount instead)`,
    );
  }
  return [file];
}

function parseFile(file: string): RawConfig {
  let raw: unknown;
  try {
    raw = Bun.YAML.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new KubeConfigError(`kubeconfig ${file} is not valid YAML: ${(err as Error).message}`, { cause: err });
  }
  if (raw == null) return {};
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw new KubeConfigError(`kubeconfig ${file} must be a mapping with clusters, users and contexts`);
  }
  const config = raw as RawConfig;
  for (const section of ["clusters", "users"] as const) {
    for (const entry of config[section] ?? []) {
      for (const [inner, field] of pathFields[section]) {
        const body = entry[inner] as Record<string, unknown> | undefined;
        const value = body?.[field];
        if (typeof value === "string" && value && !isAbsolute(value)) body![field] = resolve(dirname(file), value);
      }
      // As client-go: an exec command with a path separator is relative to its kubeconfig; a bare name is looked up in PATH.
      const exec = (entry.user as { exec?: { command?: unknown } } | undefined)?.exec;
      if (
        section === "users" &&
        typeof exec?.command === "string" &&
        exec.command.includes("/") &&
        !isAbsolute(exec.command)
      ) {
        exec.command = resolve(dirname(file), exec.command);
      }
    }
  }
  return config;
}

/** Merges files in order; for every named entry and for current-context the first file wins. */
export function mergeKubeconfigs(configs: RawConfig[]): RawConfig {
  const merged: RawConfig = { apiVersion: "v1", kind: "Config", clusters: [], users: [], contexts: [] };
  for (const config of configs) {
    for (const section of ["clusters", "users", "contexts"] as const) {
      for (const entry of config[section] ?? []) {
        if (!entry || typeof entry.name !== "string") continue;
        if (!merged[section]!.some((e) => e.name === entry.name)) merged[section]!.push(entry);
      }
    }
    if (!merged["current-context"] && config["current-context"]) merged["current-context"] = config["current-context"];
  }
  return merged;
}

/** True when no kubeconfig applies (no --kubeconfig, KUBECONFIG or ~/.kube/config) but a pod's environment does. */
export function usesInClusterConfig(options: KubeConfigOptions = {}): boolean {
  const env = options.env ?? process.env;
  if (options.kubeconfig || env.KUBECONFIG) return false;
  if (existsSync(resolve(env.HOME ?? homedir(), ".kube", "config"))) return false;
  return inClusterAvailable(env);
}

export function loadKubeConfig(options: KubeConfigOptions = {}): LoadedKubeConfig {
  if (usesInClusterConfig(options)) {
    if (options.context && options.context !== IN_CLUSTER_CONTEXT) {
      throw new KubeConfigError(
        `--context ${options.context} needs a kubeconfig, but none was found and the in-cluster configuration has the single context "${IN_CLUSTER_CONTEXT}"; pass --kubeconfig or drop --context`,
      );
    }
    const kc = loadInClusterConfig(options.env ?? process.env);
    return {
      kc,
      context: IN_CLUSTER_CONTEXT,
      server: kc.getCurrentCluster()!.server,
      files: [],
      inCluster: { namespace: kc.namespace, dir: kc.dir },
    };
  }
  const files = kubeconfigFiles(options);
  const merged = mergeKubeconfigs(files.map(parseFile));
  const where = files.join(", ");
  const context = options.context ?? merged["current-context"];
  const names = (merged.contexts ?? []).map((c) => c.name);
  if (!context) {
    throw new KubeConfigError(
      `no context selected in ${where}: pass --context (available: ${names.join(", ") || "none"})`,
    );
  }
  const ctx = merged.contexts!.find((c) => c.name === context);
  if (!ctx) {
    throw new KubeConfigError(
      `context "${context}" not found in ${where}; available contexts: ${names.join(", ") || "none"}`,
    );
  }
  const body = (ctx.context ?? {}) as { cluster?: string; user?: string };
  const cluster = merged.clusters!.find((c) => c.name === body.cluster);
  if (!cluster) {
    throw new KubeConfigError(
      `context "${context}" refers to cluster "${body.cluster}", which is not defined in ${where}`,
    );
  }
  const user = body.user ? merged.users!.find((u) => u.name === body.user) : undefined;
  if (body.user && !user) {
    throw new KubeConfigError(`context "${context}" refers to user "${body.user}", which is not defined in ${where}`);
  }
  const userBody = (user?.user ?? {}) as Record<string, unknown>;
  const tokenFile = [userBody.tokenFile, userBody["token-file"]].find(
    (f): f is string => typeof f === "string" && f !== "",
  );
  const server = (cluster.cluster as { server?: string } | undefined)?.server;
  if (!server) throw new KubeConfigError(`cluster "${cluster.name}" in ${where} has no server URL`);
  merged["current-context"] = context;
  const kc = new KubeConfig();
  try {
    kc.loadFromObject(merged);
  } catch (err) {
    throw new KubeConfigError(`kubeconfig ${where} cannot be used: ${(err as Error).message}`, { cause: err });
  }
  return { kc, context, server, files, ...(tokenFile ? { tokenFile } : {}) };
}
