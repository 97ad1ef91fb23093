// The local cluster's identity (ID, name, labels), kept where Liqo v0.5 keeps it: the ConfigMap
// `liqo-clusterid-configmap` in the liqo namespace, keys CLUSTER_ID and CLUSTER_NAME (pkg/consts
// clusterid.go, the Helm template liqo-clusterid-configmap.yaml). Cluster labels are a Liqo v0.5
// controller-manager flag; we also keep them in the ConfigMap (key CLUSTER_LABELS, JSON) so every
// role reads one source. Once written, the ConfigMap is the truth: it is never rewritten.
import { createHash, randomUUID } from "node:crypto";
import { KubeApiError } from "../kube/errors.ts";
import type { KubeClient } from "../kube/client.ts";
import { Resources, type KubeObject } from "../kube/resources.ts";
import { silentLogger, type Logger } from "../log.ts";
import { ADJECTIVES, NOUNS } from "./words.ts";

export const CLUSTER_ID_CONFIGMAP = "liqo-clusterid-configmap";
export const CLUSTER_ID_KEY = "CLUSTER_ID";
export const CLUSTER_NAME_KEY = "CLUSTER_NAME";
export const CLUSTER_LABELS_KEY = "CLUSTER_LABELS";
/** Liqo finds the ConfigMap by this label (consts.ClusterIDConfigMapSelector). */
export const CLUSTER_ID_CONFIGMAP_SELECTOR = { "app.kubernetes.io/name": "clusterid-configmap" };

export interface LocalClusterIdentity {
  clusterId: string;
  clusterName: string;
  clusterLabels: Record<string, string>;
}

export interface EnsureIdentityOptions {
  liqoNamespace?: string;
  /** The install-time name; ignored (with a warning) when the ConfigMap already holds another. */
  clusterName?: string;
  clusterLabels?: Record<string, string>;
  logger?: Logger;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** The tenant namespace `liqo-tenant-<name>-<6 hex>` must stay within 63 characters. */
export const MAX_CLUSTER_NAME = 63 - "liqo-tenant-".length - "-abcdef".length;

/** Why a cluster name cannot be used, or undefined. */
export function clusterNameProblem(name: string): string | undefined {
  if (!name) return "the cluster name is empty";
  if (name.length > MAX_CLUSTER_NAME)
    return `cluster name "${name}" has ${name.length} characters; at most ${MAX_CLUSTER_NAME} fit in the tenant namespace name`;
  if (!DNS_LABEL.test(name))
    return `cluster name "${name}" is not a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)`;
  return undefined;
}

/** Why a cluster ID cannot be used, or undefined. IDs become part of object names, so lowercase DNS labels only. */
export function clusterIdProblem(id: string): string | undefined {
  if (!id) return "the cluster ID is empty";
  if (id.length > 63 || !DNS_LABEL.test(id))
    return `cluster ID "${id}" must be a lowercase DNS-1123 label of at most 63 characters, such as a UUID`;
  return undefined;
}

/**
 * A readable adjective-noun name (Liqo's liqoctl generates one the same way), derived from the
 * cluster ID so that two racing installers, or a retry, pick the same name.
 */
export function generatedClusterName(clusterId: string): string {
  const h = createHash("sha256").update(clusterId).digest();
  return `${ADJECTIVES[h.readUInt16BE(0) % ADJECTIVES.length]}-${NOUNS[h.readUInt16BE(2) % NOUNS.length]}`;
}

const LABEL_NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const LABEL_VALUE = /^(([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?)$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why a label key/value pair is invalid, or undefined. */
export function labelProblem(key: string, value: string): string | undefined {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `label key "${key}": the prefix must be a DNS subdomain such as example.com`;
  if (!name || name.length > 63 || !LABEL_NAME.test(name))
    return `label key "${key}": the name must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`;
  if (value.length > 63 || !LABEL_VALUE.test(value))
    return `label "${key}": value "${value}" must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`;
  return undefined;
}

/** Parses `--cluster-labels k=v,k2=v2` (kubectl's syntax); throws naming the bad pair. */
export function parseClusterLabels(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = pair.indexOf("=");
    if (eq <= 0)
      throw new Error(`cluster label "${pair}" is not key=value, e.g. topology.kubernetes.io/region=eu-south`);
    const key = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    const problem = labelProblem(key, value);
    if (problem) throw new Error(problem);
    if (key in out && out[key] !== value)
      throw new Error(`cluster label "${key}" is given twice with different values`);
    out[key] = value;
  }
  return out;
}

/** The kube-system namespace's UID: stable for the cluster's lifetime, readable with a plain get. */
async function stableClusterUid(client: KubeClient, log: Logger): Promise<string> {
  try {
    const ns = await client.get(Resources.namespaces, "kube-system");
    if (ns.metadata.uid && !clusterIdProblem(ns.metadata.uid)) return ns.metadata.uid;
  } catch (err) {
    log.warn("cannot read the kube-system namespace UID; generating a cluster ID", { err });
  }
  return randomUUID();
}

function decodeLabels(cm: KubeObject, log: Logger): Record<string, string> | undefined {
  const raw = (cm.data as Record<string, string> | undefined)?.[CLUSTER_LABELS_KEY];
  if (raw === undefined) return undefined;
  try {
    const parsed = JSON.parse(raw);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed))
      return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]));
  } catch {
    /* reported below */
  }
  log.warn(`${CLUSTER_ID_CONFIGMAP} has a ${CLUSTER_LABELS_KEY} that is not a JSON object; using no cluster labels`, {
    value: raw.slice(0, 200),
  });
  return {};
}

/** Reads the identity; undefined when the ConfigMap (or its CLUSTER_ID) is missing. */
export async function readClusterIdentity(
  client: KubeClient,
  liqoNamespace = "liqo",
  logger: Logger = silentLogger,
): Promise<LocalClusterIdentity | undefined> {
  const cm = await client.find(Resources.configMaps, CLUSTER_ID_CONFIGMAP, liqoNamespace);
  const data = (cm?.data ?? {}) as Record<string, string>;
  if (!cm || !data[CLUSTER_ID_KEY]) return undefined;
  return {
    clusterId: data[CLUSTER_ID_KEY],
    clusterName: data[CLUSTER_NAME_KEY] || generatedClusterName(data[CLUSTER_ID_KEY]),
    clusterLabels: decodeLabels(cm, logger) ?? {},
  };
}

/**
 * Returns the cluster identity, creating the ConfigMap on first run. Idempotent and race-safe:
 * a ConfigMap someone else created wins; keys it lacks are added, keys it has are kept.
 */
export async function ensureClusterIdentity(
  client: KubeClient,
  options: EnsureIdentityOptions = {},
): Promise<LocalClusterIdentity> {
  const ns = options.liqoNamespace ?? "liqo";
  const log = (options.logger ?? silentLogger).child({ component: "cluster-identity" });
  if (options.clusterName !== undefined) {
    const problem = clusterNameProblem(options.clusterName);
    if (problem) throw new Error(`${problem}; pass another --cluster-name`);
  }
  for (const [k, v] of Object.entries(options.clusterLabels ?? {})) {
    const problem = labelProblem(k, v);
    if (problem) throw new Error(`${problem}; fix --cluster-labels`);
  }

  let cm = await client.find(Resources.configMaps, CLUSTER_ID_CONFIGMAP, ns);
  if (!cm) {
    await ensureNamespace(client, ns);
    const clusterId = await stableClusterUid(client, log);
    const data = {
      [CLUSTER_ID_KEY]: clusterId,
      [CLUSTER_NAME_KEY]: options.clusterName ?? generatedClusterName(clusterId),
      [CLUSTER_LABELS_KEY]: JSON.stringify(options.clusterLabels ?? {}),
    };
    try {
      cm = await client.create(Resources.configMaps, {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: CLUSTER_ID_CONFIGMAP, namespace: ns, labels: CLUSTER_ID_CONFIGMAP_SELECTOR },
        data,
      });
      log.info("cluster identity created", { clusterId, clusterName: data[CLUSTER_NAME_KEY] });
    } catch (err) {
      if (!(err instanceof KubeApiError && err.conflict)) throw err;
      cm = await client.get(Resources.configMaps, CLUSTER_ID_CONFIGMAP, ns);
    }
  }

  const data = { ...((cm.data ?? {}) as Record<string, string>) };
  const missing: Record<string, string> = {};
  if (!data[CLUSTER_ID_KEY]) missing[CLUSTER_ID_KEY] = await stableClusterUid(client, log);
  const clusterId = data[CLUSTER_ID_KEY] || missing[CLUSTER_ID_KEY]!;
  if (!data[CLUSTER_NAME_KEY]) missing[CLUSTER_NAME_KEY] = options.clusterName ?? generatedClusterName(clusterId);
  if (data[CLUSTER_LABELS_KEY] === undefined) missing[CLUSTER_LABELS_KEY] = JSON.stringify(options.clusterLabels ?? {});
  if (Object.keys(missing).length) {
    // resourceVersion makes this a compare-and-swap: a concurrent writer's values are not overwritten.
    cm = await client.mergePatch(Resources.configMaps, CLUSTER_ID_CONFIGMAP, ns, {
      metadata: { resourceVersion: cm.metadata.resourceVersion },
      data: missing,
    });
    Object.assign(data, missing);
  }
  const identity: LocalClusterIdentity = {
    clusterId,
    clusterName: data[CLUSTER_NAME_KEY]!,
    clusterLabels: decodeLabels({ ...cm, data } as KubeObject, log) ?? {},
  };
  if (options.clusterName !== undefined && options.clusterName !== identity.clusterName) {
    log.warn(
      `the cluster is already named ${identity.clusterName} in ${ns}/${CLUSTER_ID_CONFIGMAP}; --cluster-name ${options.clusterName} is ignored (peers know the old name)`,
    );
  }
  if (
    options.clusterLabels &&
    JSON.stringify(sorted(options.clusterLabels)) !== JSON.stringify(sorted(identity.clusterLabels))
  ) {
    log.warn(`${ns}/${CLUSTER_ID_CONFIGMAP} holds other cluster labels; the stored ones are kept`, {
      stored: identity.clusterLabels,
      given: options.clusterLabels,
    });
  }
  return identity;
}

const sorted = (r: Record<string, string>) =>
  Object.fromEntries(Object.entries(r).sort(([a], [b]) => a.localeCompare(b)));

/** Creates a namespace if missing (the liqo namespace on a bare cluster, as in the tests). */
export async function ensureNamespace(
  client: KubeClient,
  name: string,
  labels?: Record<string, string>,
): Promise<KubeObject> {
  const found = await client.find(Resources.namespaces, name);
  if (found) return found;
  try {
    return await client.create(Resources.namespaces, {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name, labels },
    });
  } catch (err) {
    if (err instanceof KubeApiError && err.conflict) return client.get(Resources.namespaces, name);
    throw err;
  }
}
