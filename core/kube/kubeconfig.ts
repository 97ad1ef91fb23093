// A loaded kubeconfig: its clusters, users and contexts and the current context. The entries are
// read by @kubernetes/client-node's own config_types (the same fields, defaults and errors as its
// KubeConfig), but its KubeConfig class is not imported here: its module loads every generated API
// class, 27–31 MiB of RSS in each role's process for API clients this project does not use (measured by
// tests/bench/kubeconfig-memory.ts). Only a user with an auth-provider (OIDC, Azure, GCP) loads it,
// on its first request, to run client-node's authenticators.
import type { KubeConfig as ClientNodeKubeConfig } from "@kubernetes/client-node";
import type { RequestOptions } from "node:https";
import {
  type Cluster,
  type Context,
  newClusters,
  newContexts,
  newUsers,
  type User,
} from "@kubernetes/client-node/dist/config_types.js";

export type { Cluster, Context, User };

export interface KubeConfigEntries {
  clusters: Cluster[];
  users: User[];
  contexts: Context[];
  currentContext: string;
}

export class KubeConfig {
  clusters: Cluster[] = [];
  users: User[] = [];
  contexts: Context[] = [];
  currentContext = "";
  /** client-node's KubeConfig over the same entries, once an auth-provider needed it (it caches tokens). */
  private authProviders?: Promise<ClientNodeKubeConfig>;

  /** A kubeconfig's text (YAML or JSON), as kubectl reads it; invalid entries throw, naming the field. */
  loadFromString(text: string): void {
    const raw = Bun.YAML.parse(text);
    if (raw == null || typeof raw !== "object" || Array.isArray(raw)) {
      throw new Error("a kubeconfig must be a mapping with clusters, users and contexts");
    }
    this.loadFromObject(raw as Record<string, unknown>);
  }

  /** An already parsed kubeconfig (clusters, users, contexts, current-context). */
  loadFromObject(raw: Record<string, unknown>): void {
    this.loadFromOptions({
      clusters: newClusters(raw.clusters),
      users: newUsers(raw.users),
      contexts: newContexts(raw.contexts),
      currentContext: typeof raw["current-context"] === "string" ? raw["current-context"] : "",
    });
  }

  loadFromOptions(options: KubeConfigEntries): void {
    this.clusters = options.clusters;
    this.users = options.users;
    this.contexts = options.contexts;
    this.currentContext = options.currentContext;
    this.authProviders = undefined;
  }

  getCurrentContext(): string {
    return this.currentContext;
  }

  getContextObject(name: string): Context | null {
    return this.contexts.find((c) => c.name === name) ?? null;
  }

  getCurrentCluster(): Cluster | null {
    const context = this.getContextObject(this.currentContext);
    return context ? (this.clusters.find((c) => c.name === context.cluster) ?? null) : null;
  }

  getCurrentUser(): User | null {
    const context = this.getContextObject(this.currentContext);
    return context ? (this.users.find((u) => u.name === context.user) ?? null) : null;
  }

  /** The Authorization header the current user's auth-provider gives, by client-node's authenticators. */
  async authProviderHeader(): Promise<string | undefined> {
    this.authProviders ??= import("@kubernetes/client-node").then(({ KubeConfig: Full }) => {
      const full = new Full();
      full.loadFromOptions(this);
      return full;
    });
    const opts: RequestOptions = {};
    await (await this.authProviders).applyToHTTPSOptions(opts);
    const auth = Object.entries(opts.headers ?? {}).find(([k]) => k.toLowerCase() === "authorization");
    return auth ? String(auth[1]) : undefined;
  }
}
