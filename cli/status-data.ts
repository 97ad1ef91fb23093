// liqoctl status as data: each section computed by a pure function from the objects read, so the
// text (cli/status-text.ts) and `-o json|yaml` show the same facts. Optional fields a cluster
// leaves unset (a condition's reason or message) are omitted, as kubectl omits empty fields.
import { DISCOVERY_TYPE_LABEL, REMOTE_CLUSTER_ID_LABEL } from "../core/apis/labels.ts";
import {
  REPLICATION_REQUESTED_LABEL,
  REPLICATION_STATUS_LABEL,
  type ResourceRequest,
  type SearchDomain,
} from "../core/apis/index.ts";
import type { KubeObject } from "../core/kube/resources.ts";
import { peeringSummary, type ForeignClusterObject } from "../core/peering/foreigncluster/index.ts";
import {
  NAMESPACE_POLICY_ANNOTATION,
  POLICY_KINDS,
  ReflectionPolicyError,
  type PolicyKind,
  type PolicyOverride,
  type ReflectionPolicy,
} from "../core/reflection/policy.ts";
import { overrideOfNamespace, POLICY_CONFIGMAP, policyFromConfigMap } from "../core/reflection/policy-watch.ts";
import { WIREGUARD_IMPLEMENTATION_ANNOTATION } from "../netfabric/gateway/exposure.ts";
import { deploymentArg, securityModeOf, type Deployment, type SecurityMode } from "./deployment-args.ts";
import { quotaStatus, type QuotaInput, type QuotaStatus } from "./quota-report.ts";
import { readyCondition, type VirtualNodeObject } from "./virtualnode.ts";

/**
 * The document's apiVersion. liqoctl's own group, not one of the CRDs' (discovery.liqo.io, ...):
 * no API server serves a Status; the version says which shape a script reads.
 */
export const STATUS_API_VERSION = "liqoctl.liqo.io/v1alpha1";

export interface IdentityStatus {
  name: string;
  id: string;
  labels: Record<string, string>;
  /** null: liqo auth has not recorded one. */
  authUrl: string | null;
}

export interface PeeringStatus {
  name: string;
  clusterID: string | null;
  outgoing: string;
  incoming: string;
  networking: string;
  authentication: string;
  /** How the ForeignCluster was found: Manual, LAN, WAN, IncomingPeering. */
  discovery: string;
  /** The peering's own virtual node (liqo-<cluster name>), null when there is none. */
  virtualNode: { name: string; ready: boolean } | null;
  unsettled: { type: string; status: string; reason?: string; message?: string }[];
}

export interface VirtualNodeStatus {
  /** The ForeignCluster's name, null when no peering has the VirtualNode's cluster ID. */
  peering: string | null;
  clusterID: string;
  namespace: string;
  name: string;
  deleting: boolean;
  /** The Ready condition's status: True, False, or Unknown (also when it has none yet). */
  ready: string;
  reason?: string;
  message?: string;
  resources: Record<string, string | number>;
}

export interface LanDiscoveryStatus {
  /** Whether the controller manager runs the discovery controller; when not, the rest is null. */
  enabled: boolean;
  advertisement: boolean | null;
  discovery: boolean | null;
  autojoin: boolean | null;
  ttlSeconds: number | null;
  ready: number | null;
  replicas: number | null;
}

export interface WanDomainStatus {
  name: string;
  domain: string;
  autojoin: boolean;
  foreignClusters: string[];
  problem: string | null;
}

export interface DiscoveryStatus {
  lan: LanDiscoveryStatus;
  /** Whether the SearchDomain controller runs (its domains may still be none). */
  wanEnabled: boolean;
  wan: WanDomainStatus[];
}

export interface NetworkStatus {
  securityMode: SecurityMode;
  /** The gateway pods have not all rolled to the Deployment's current flags yet. */
  rolling: boolean;
  /** The WireGuard of the active gateway's device (kernel module or wireguard-go), as it wrote it on
   * the gateway Service; null until a gateway has opened its device. */
  wireguardImplementation: string | null;
}

export interface PluginStatus {
  /** The peering's name (a consumer's own cluster name for incoming). */
  peer: string;
  direction: "outgoing" | "incoming";
  name: string;
  /** The provider's answer (Granted, Refused), or Waiting while it has given none. */
  state: string;
  message?: string;
}

export interface PolicyStatus {
  /** The policy per kind; null when the ConfigMap is refused (the controller manager keeps its previous one). */
  kinds: ReflectionPolicy | null;
  error?: string;
  source: "configmap" | "defaults";
  /** namespace/name of the ConfigMap the controller manager follows. */
  configMap: string;
}

export interface NamespaceOverrideStatus {
  namespace: string;
  policy?: PolicyOverride;
  error?: string;
}

/** One of liqo's Deployments or DaemonSets, and how many of its pods are ready. */
export interface ComponentStatus {
  name: string;
  kind: "Deployment" | "DaemonSet";
  ready: number;
  desired: number;
  /** Its app.kubernetes.io/version label (the chart's appVersion). */
  version: string | null;
}

export interface InstallationStatus {
  namespace: string;
  /** The versions its workloads carry, one unless an upgrade is rolling out; null when none says. */
  version: string | null;
  /** Every workload has all its pods ready. */
  healthy: boolean;
  components: ComponentStatus[];
}

export interface StatusDocument {
  apiVersion: typeof STATUS_API_VERSION;
  kind: "Status";
  clusterIdentity: IdentityStatus;
  installation: InstallationStatus;
  peerings: PeeringStatus[];
  virtualNodes: VirtualNodeStatus[];
  discovery: DiscoveryStatus;
  /** null: no liqo-gateway Deployment (liqo installed without networking). */
  network: NetworkStatus | null;
  quotas: QuotaStatus;
  reflectorPlugins: PluginStatus[];
  reflectionPolicy: PolicyStatus;
  namespaceOverrides: NamespaceOverrideStatus[];
}

export type Workload = KubeObject & {
  spec?: { replicas?: number };
  status?: { readyReplicas?: number; numberReady?: number; desiredNumberScheduled?: number };
};

/** liqo's workloads in its namespace (app.kubernetes.io/part-of=liqo) and whether each is ready. */
export function installationStatus(
  namespace: string,
  deployments: Workload[],
  daemonSets: Workload[],
): InstallationStatus {
  const version = (w: Workload) => w.metadata.labels?.["app.kubernetes.io/version"] ?? null;
  const components: ComponentStatus[] = [
    ...deployments.map((d) => ({
      name: d.metadata.name!,
      kind: "Deployment" as const,
      ready: d.status?.readyReplicas ?? 0,
      desired: d.spec?.replicas ?? 1,
      version: version(d),
    })),
    ...daemonSets.map((d) => ({
      name: d.metadata.name!,
      kind: "DaemonSet" as const,
      ready: d.status?.numberReady ?? 0,
      desired: d.status?.desiredNumberScheduled ?? 0,
      version: version(d),
    })),
  ].sort((a, b) => a.name.localeCompare(b.name));
  const versions = [...new Set(components.map((c) => c.version).filter((v): v is string => !!v))].sort();
  return {
    namespace,
    version: versions.join(", ") || null,
    healthy: components.every((c) => c.ready >= c.desired),
    components,
  };
}

/** The name of the peering with this cluster ID, if any. */
function peeringName(fcs: ForeignClusterObject[], id: string | undefined): string | undefined {
  return fcs.find((f) => f.spec.clusterIdentity?.clusterID === id)?.metadata.name;
}

export function identityStatus(
  me: { clusterName: string; clusterId: string; clusterLabels: Record<string, string> },
  authUrl: string | undefined,
): IdentityStatus {
  return { name: me.clusterName, id: me.clusterId, labels: { ...me.clusterLabels }, authUrl: authUrl ?? null };
}

/** Each peering's conditions; `nodes` maps a virtual node's name to whether it is Ready. */
export function peeringsStatus(fcs: ForeignClusterObject[], nodes: Map<string, boolean>): PeeringStatus[] {
  return fcs.map((fc) => {
    const s = peeringSummary(fc);
    const name = fc.metadata.name!;
    const node = `liqo-${fc.spec.clusterIdentity?.clusterName ?? name}`;
    return {
      name,
      clusterID: fc.spec.clusterIdentity?.clusterID ?? null,
      outgoing: s.outgoing,
      incoming: s.incoming,
      networking: s.network,
      authentication: s.authentication,
      discovery: fc.metadata.labels?.[DISCOVERY_TYPE_LABEL] ?? "Manual",
      virtualNode: nodes.has(node) ? { name: node, ready: nodes.get(node)! } : null,
      unsettled: s.unsettled.map((c) => ({
        type: c.type,
        status: c.status,
        ...(c.reason === undefined ? {} : { reason: c.reason }),
        ...(c.message === undefined ? {} : { message: c.message }),
      })),
    };
  });
}

/** The VirtualNodes, sorted by peering then name (a VirtualNode of no peering sorts by its cluster ID). */
export function virtualNodesStatus(vns: VirtualNodeObject[], fcs: ForeignClusterObject[]): VirtualNodeStatus[] {
  const out = vns.map((vn): VirtualNodeStatus => {
    const c = readyCondition(vn);
    return {
      peering: peeringName(fcs, vn.spec.clusterID) ?? null,
      clusterID: vn.spec.clusterID,
      namespace: vn.metadata.namespace!,
      name: vn.metadata.name!,
      deleting: Boolean(vn.metadata.deletionTimestamp),
      ready: c?.status ?? "Unknown",
      ...(c?.reason === undefined ? {} : { reason: c.reason }),
      ...(c?.message === undefined ? {} : { message: c.message }),
      resources: { ...vn.status?.resources },
    };
  });
  return out.sort((a, b) => peeringLabel(a).localeCompare(peeringLabel(b)) || a.name.localeCompare(b.name));
}

/** How the text names a VirtualNode's peering (also its sort key). */
export const peeringLabel = (vn: VirtualNodeStatus) => vn.peering ?? `${vn.clusterID} (no peering)`;

/**
 * Per peering, what each provider answered for our drop-in reflector plugins (outgoing: our
 * requests, their status replicated back) and what we answered for our consumers' (incoming).
 */
export function pluginsStatus(rrs: (ResourceRequest & KubeObject)[], fcs: ForeignClusterObject[]): PluginStatus[] {
  const nameOf = (id: string | undefined) => peeringName(fcs, id) ?? id ?? "?";
  const out: PluginStatus[] = [];
  for (const rr of rrs) {
    const outgoing = rr.metadata.labels?.[REPLICATION_REQUESTED_LABEL] === "true";
    const incoming = rr.metadata.labels?.[REPLICATION_STATUS_LABEL] === "true";
    if (!outgoing && !incoming) continue;
    const peer = outgoing
      ? nameOf(rr.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL])
      : (rr.spec?.clusterIdentity?.clusterName ?? nameOf(rr.spec?.clusterIdentity?.clusterID));
    const answers = new Map((rr.status?.reflectorPlugins ?? []).map((g) => [g.name, g]));
    for (const p of rr.spec?.reflectorPlugins ?? []) {
      const g = answers.get(p.name);
      out.push({
        peer,
        direction: outgoing ? "outgoing" : "incoming",
        name: p.name,
        // A provider answers Granted or Refused only, so Waiting cannot be mistaken for an answer.
        state: g?.state ?? "Waiting",
        ...(g?.message === undefined ? {} : { message: g.message }),
      });
    }
  }
  return out;
}

/** The network security mode the liqo-gateway Deployment runs with, whether its pods are rolling to
 * it, and the WireGuard implementation the active gateway reported on its Service. */
export function networkStatus(gateway: Deployment | undefined, service?: KubeObject): NetworkStatus | null {
  if (!gateway) return null;
  const replicas = gateway.spec?.replicas ?? 1;
  return {
    wireguardImplementation: service?.metadata.annotations?.[WIREGUARD_IMPLEMENTATION_ANNOTATION] ?? null,
    securityMode: securityModeOf(gateway),
    rolling:
      (gateway.status?.observedGeneration ?? 0) < (gateway.metadata.generation ?? 0) ||
      (gateway.status?.updatedReplicas ?? replicas) < replicas,
  };
}

/** LAN discovery as the liqo-discovery Deployment's flags run it, and each SearchDomain with what it found. */
export function discoveryStatus(
  deployment: Deployment | undefined,
  domains: (SearchDomain & KubeObject)[],
): DiscoveryStatus {
  const flag = (name: string) => deploymentArg(deployment, name);
  const controllers = (flag("controllers") ?? "").split(",");
  const enabled = Boolean(deployment) && controllers.includes("discovery");
  // The role's defaults: advertisement and discovery on, autojoin off, a TTL of 90 s.
  const lan: LanDiscoveryStatus = enabled
    ? {
        enabled,
        advertisement: flag("discovery-advertise") !== "false",
        discovery: flag("discovery-discover") !== "false",
        autojoin: flag("discovery-autojoin") === "true",
        ttlSeconds: Number(flag("discovery-ttl") ?? "90"),
        ready: deployment?.status?.readyReplicas ?? 0,
        replicas: deployment?.spec?.replicas ?? 1,
      }
    : {
        enabled,
        advertisement: null,
        discovery: null,
        autojoin: null,
        ttlSeconds: null,
        ready: null,
        replicas: null,
      };
  return {
    lan,
    wanEnabled: controllers.includes("searchdomain"),
    wan: domains.map((d) => ({
      name: d.metadata.name!,
      domain: d.spec.domain,
      autojoin: Boolean(d.spec.autojoin),
      foreignClusters: (d.status?.foreignClusters ?? []).map((f) => f.name),
      problem: d.status?.problem || null,
    })),
  };
}

/** The reflection policy per kind from the ConfigMap the controller manager follows; a refused one says why. */
export function policyStatus(
  cm: (KubeObject & { data?: Record<string, string> }) | undefined,
  namespace: string,
): PolicyStatus {
  const base = { source: cm ? "configmap" : "defaults", configMap: `${namespace}/${POLICY_CONFIGMAP}` } as const;
  try {
    const policy = policyFromConfigMap(cm, namespace);
    // In POLICY_KINDS's order, as the text lists them.
    const kinds = Object.fromEntries(Object.keys(POLICY_KINDS).map((k) => [k, policy[k as PolicyKind]]));
    return { kinds: kinds as ReflectionPolicy, ...base };
  } catch (err) {
    if (!(err instanceof ReflectionPolicyError)) throw err;
    return { kinds: null, error: err.message, ...base };
  }
}

/** The namespaces whose annotation overrides the cluster's policy; a refused one says why. */
export function namespaceOverridesStatus(namespaces: KubeObject[]): NamespaceOverrideStatus[] {
  return namespaces
    .filter((ns) => ns.metadata.annotations?.[NAMESPACE_POLICY_ANNOTATION]?.trim())
    .map((ns) => {
      const namespace = ns.metadata.name!;
      try {
        return { namespace, policy: overrideOfNamespace(ns)! };
      } catch (err) {
        if (!(err instanceof ReflectionPolicyError)) throw err;
        return { namespace, error: err.message };
      }
    });
}

/** Everything liqoctl status reads from the cluster, as read. */
export interface StatusInputs {
  identity: { clusterName: string; clusterId: string; clusterLabels: Record<string, string> };
  authUrl: string | undefined;
  /** The liqo namespace (named in the reflection policy's ConfigMap). */
  namespace: string;
  fcs: ForeignClusterObject[];
  /** The virtual Nodes' names and whether each is Ready. */
  nodes: Map<string, boolean>;
  virtualNodes: VirtualNodeObject[];
  discovery: Deployment | undefined;
  searchDomains: (SearchDomain & KubeObject)[];
  gateway: Deployment | undefined;
  /** The liqo-gateway Service, where the active gateway writes its WireGuard implementation. */
  gatewayService?: KubeObject;
  quota: Omit<QuotaInput, "fcs">;
  requests: (ResourceRequest & KubeObject)[];
  policy: (KubeObject & { data?: Record<string, string> }) | undefined;
  namespaces: KubeObject[];
  /** liqo's Deployments and DaemonSets in its namespace. */
  workloads: { deployments: Workload[]; daemonSets: Workload[] };
}

export function statusDocument(i: StatusInputs): StatusDocument {
  return {
    apiVersion: STATUS_API_VERSION,
    kind: "Status",
    clusterIdentity: identityStatus(i.identity, i.authUrl),
    installation: installationStatus(i.namespace, i.workloads.deployments, i.workloads.daemonSets),
    peerings: peeringsStatus(i.fcs, i.nodes),
    virtualNodes: virtualNodesStatus(i.virtualNodes, i.fcs),
    discovery: discoveryStatus(i.discovery, i.searchDomains),
    network: networkStatus(i.gateway, i.gatewayService),
    quotas: quotaStatus({ ...i.quota, fcs: i.fcs }),
    reflectorPlugins: pluginsStatus(i.requests, i.fcs),
    reflectionPolicy: policyStatus(i.policy, i.namespace),
    namespaceOverrides: namespaceOverridesStatus(i.namespaces),
  };
}
