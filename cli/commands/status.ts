// liqoctl status: this cluster's liqo identity (name, ID, labels, auth URL) and its peerings,
// each with the phase of every condition and, for any that is not settled, why; and what each
// peering's provider granted or refused for the drop-in reflector plugins; the reflection policy;
// the VirtualNodes of each peering (liqoctl create virtualnode); the network security mode; per
// peering, what is used of each offer (quotas).
import { defineCommand } from "citty";
import {
  DISCOVERY_CLUSTER_ID_LABEL,
  TENANT_CORDONED_ANNOTATION,
  TENANT_NAMESPACE_LABEL,
} from "../../core/apis/labels.ts";
import {
  DISCOVERY_TYPE_LABEL,
  ForeignClusterResource,
  REMOTE_CLUSTER_ID_LABEL,
  SearchDomainResource,
  type SearchDomain,
  REPLICATION_REQUESTED_LABEL,
  REPLICATION_STATUS_LABEL,
  ResourceRequestResource,
  type ResourceRequest,
  VirtualNodeResource,
  ResourceOfferResource,
  ShadowPodResource,
} from "../../core/apis/index.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import type { Node, Pod } from "../../core/kube/types.ts";
import { readAuthUrl } from "../../core/peering/auth-url.ts";
import { peeringSummary, type ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { readClusterIdentity } from "../../core/peering/identity.ts";
import {
  formatReflectionPolicy,
  NAMESPACE_POLICY_ANNOTATION,
  POLICY_KINDS,
  ReflectionPolicyError,
  type PolicyKind,
} from "../../core/reflection/policy.ts";
import { overrideOfNamespace, POLICY_CONFIGMAP, policyFromConfigMap } from "../../core/reflection/policy-watch.ts";
import { CliError, ExitCode } from "../errors.ts";
import { liqoKubeFlags } from "../peering.ts";
import { formatResources, readyCondition, type VirtualNodeObject } from "../virtualnode.ts";
import { table } from "../table.ts";
import { deploymentArg, findDeployment, securityModeOf, type Deployment } from "../deployment-args.ts";
import { quotaReport, type Offer, type QuotaRequest, type QuotaShadow } from "../quota-report.ts";

export function peeringsReport(fcs: ForeignClusterObject[], nodes: Map<string, boolean>): string {
  if (!fcs.length)
    return "Peerings: none (liqoctl generate peer-command on a provider prints the command to peer with it)";
  const rows = [
    ["NAME", "CLUSTER ID", "OUTGOING", "INCOMING", "NETWORKING", "AUTHENTICATION", "DISCOVERY", "VIRTUAL NODE"],
  ];
  const notes: string[] = [];
  for (const fc of fcs) {
    const s = peeringSummary(fc);
    const name = fc.metadata.name!;
    const node = `liqo-${fc.spec.clusterIdentity?.clusterName ?? name}`;
    rows.push([
      name,
      fc.spec.clusterIdentity?.clusterID ?? "-",
      s.outgoing,
      s.incoming,
      s.network,
      s.authentication,
      fc.metadata.labels?.[DISCOVERY_TYPE_LABEL] ?? "Manual",
      nodes.has(node) ? `${node} (${nodes.get(node) ? "Ready" : "NotReady"})` : "-",
    ]);
    for (const c of s.unsettled) notes.push(`  ${name} ${c.type} ${c.status} (${c.reason}): ${c.message}`);
  }
  return `Peerings:\n${table(rows)}${notes.length ? `\n\nNot settled:\n${notes.join("\n")}` : ""}`;
}

/** The VirtualNodes, per peering: readiness, reason and the capacity given; why any is not ready. */
export function virtualNodesReport(vns: VirtualNodeObject[], fcs: ForeignClusterObject[]): string {
  if (!vns.length)
    return "Virtual nodes: each peering's own only (liqoctl create virtualnode adds more to an outgoing peering)";
  const peeringOf = (vn: VirtualNodeObject) =>
    fcs.find((f) => f.spec.clusterIdentity?.clusterID === vn.spec.clusterID)?.metadata.name ??
    `${vn.spec.clusterID} (no peering)`;
  const sorted = [...vns].sort(
    (a, b) => peeringOf(a).localeCompare(peeringOf(b)) || a.metadata.name!.localeCompare(b.metadata.name!),
  );
  const rows = [["PEERING", "NAME", "READY", "REASON", "RESOURCES"]];
  const notes: string[] = [];
  for (const vn of sorted) {
    const c = readyCondition(vn);
    rows.push([
      peeringOf(vn),
      `${vn.metadata.name}${vn.metadata.deletionTimestamp ? " (deleting)" : ""}`,
      c?.status ?? "Unknown",
      c?.reason ?? "Pending",
      formatResources(vn.status?.resources),
    ]);
    if (c?.status !== "True" && c?.message)
      notes.push(`  ${vn.metadata.namespace}/${vn.metadata.name} ${c.reason}: ${c.message}`);
  }
  return `Virtual nodes (besides each peering's own):\n${table(rows)}${notes.length ? `\n\nNot ready:\n${notes.join("\n")}` : ""}`;
}

/**
 * Per peering, what each provider answered for our drop-in reflector plugins (outgoing: our
 * requests, their status replicated back) and what we answered for our consumers' (incoming).
 */
export function pluginsReport(rrs: (ResourceRequest & KubeObject)[], fcs: ForeignClusterObject[]): string {
  const nameOf = (id: string | undefined) =>
    fcs.find((f) => f.spec.clusterIdentity?.clusterID === id)?.metadata.name ?? id ?? "?";
  const lines: string[] = [];
  for (const rr of rrs) {
    const outgoing = rr.metadata.labels?.[REPLICATION_REQUESTED_LABEL] === "true";
    const incoming = rr.metadata.labels?.[REPLICATION_STATUS_LABEL] === "true";
    if (!outgoing && !incoming) continue;
    const peer = outgoing
      ? `${nameOf(rr.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL])} (outgoing)`
      : `${rr.spec?.clusterIdentity?.clusterName ?? nameOf(rr.spec?.clusterIdentity?.clusterID)} (incoming)`;
    const answers = new Map((rr.status?.reflectorPlugins ?? []).map((g) => [g.name, g]));
    for (const p of rr.spec?.reflectorPlugins ?? []) {
      const g = answers.get(p.name);
      lines.push(`  ${peer}: ${p.name} ${g ? `${g.state}: ${g.message ?? ""}` : "waiting for the provider's answer"}`);
    }
  }
  return lines.length
    ? `Reflector plugins:\n${lines.join("\n")}`
    : "Reflector plugins: none requested or granted (liqoctl plugin install <file.wasm>)";
}

/**
 * The network security mode the liqo-gateway Deployment runs with (its --security-mode flag, from
 * the chart's networking.securityMode), and whether its pods are still rolling to it.
 */
export function networkReport(gateway: Deployment | undefined): string {
  if (!gateway) return "Network security mode: unknown (no liqo-gateway Deployment: liqo installed without networking)";
  const mode = securityModeOf(gateway);
  const what =
    mode === "IntraClusterTrafficSegregation"
      ? "peers reach only the pods offloaded to them, their own pods here and the endpoints of Services reflected to them"
      : "every pod reaches every pod across peerings";
  const replicas = gateway.spec?.replicas ?? 1;
  const rolling =
    (gateway.status?.observedGeneration ?? 0) < (gateway.metadata.generation ?? 0) ||
    (gateway.status?.updatedReplicas ?? replicas) < replicas;
  return `Network security mode: ${mode} (${what}; helm upgrade --set networking.securityMode=... changes it)${rolling ? "\n  the gateway pods are rolling to it" : ""}`;
}

/**
 * How this cluster finds others: LAN discovery as the liqo-discovery Deployment runs it (its
 * flags: advertisement, discovery, autojoin, ttl) and each SearchDomain (WAN) with what it found.
 */
export function discoveryReport(deployment: Deployment | undefined, domains: (SearchDomain & KubeObject)[]): string {
  const lines: string[] = [];
  const flag = (name: string) => deploymentArg(deployment, name);
  const controllers = (flag("controllers") ?? "").split(",");
  if (!deployment || !controllers.includes("discovery")) {
    lines.push(
      "  LAN (mDNS): off (liqoctl install --set discovery.config.enableDiscovery=true,discovery.config.enableAdvertisement=true)",
    );
  } else {
    const on = (v: string | undefined) => (v === "false" ? "off" : "on");
    const running =
      (deployment.spec?.replicas ?? 1) === 0
        ? "scaled to 0"
        : `${deployment.status?.readyReplicas ?? 0}/${deployment.spec?.replicas ?? 1} ready`;
    lines.push(
      `  LAN (mDNS): advertisement ${on(flag("discovery-advertise"))}, discovery ${on(flag("discovery-discover"))}, autojoin ${flag("discovery-autojoin") === "true" ? "on" : "off"}, ttl ${flag("discovery-ttl") ?? "90"}s (deployment liqo-discovery: ${running})`,
    );
  }
  if (!domains.length)
    lines.push(
      `  WAN (SearchDomains): ${controllers.includes("searchdomain") ? "none" : "off (discovery.config.enableWanDiscovery)"}`,
    );
  for (const d of domains) {
    const found = (d.status?.foreignClusters ?? []).map((f) => f.name).join(", ") || "no cluster";
    lines.push(
      `  WAN ${d.metadata.name}: ${d.spec.domain}, autojoin ${d.spec.autojoin ? "on" : "off"}: ${found}${d.status?.problem ? ` (problem: ${d.status.problem})` : ""}`,
    );
  }
  return `Discovery:
${lines.join("\n")}`;
}

/** The reflection policy per kind, from the ConfigMap the controller manager follows; a refused one says why. */
export function policyReport(
  cm: (KubeObject & { data?: Record<string, string> }) | undefined,
  namespace: string,
): string {
  try {
    const policy = policyFromConfigMap(cm, namespace);
    const rows = Object.keys(POLICY_KINDS).map((k) => `  ${k.padEnd(16)}${policy[k as PolicyKind]}`);
    return `Reflection policy${cm ? "" : ` (no ConfigMap ${namespace}/${POLICY_CONFIGMAP}: the defaults)`}:\n${rows.join("\n")}`;
  } catch (err) {
    if (!(err instanceof ReflectionPolicyError)) throw err;
    return `Reflection policy: refused, the controller manager keeps the previous one: ${err.message}`;
  }
}

/** Namespaces whose annotation overrides the cluster's policy for their objects; a refused one says why. */
export function namespacePolicyReport(namespaces: KubeObject[]): string {
  const rows = namespaces
    .filter((ns) => ns.metadata.annotations?.[NAMESPACE_POLICY_ANNOTATION]?.trim())
    .map((ns) => {
      const name = ns.metadata.name!;
      try {
        return `  ${name.padEnd(16)}${formatReflectionPolicy(overrideOfNamespace(ns)!)}`;
      } catch (err) {
        if (!(err instanceof ReflectionPolicyError)) throw err;
        return `  ${name.padEnd(16)}refused, the controller manager keeps its previous override or the cluster's policy: ${err.message}`;
      }
    });
  if (!rows.length)
    return `Namespace overrides: none (annotate a namespace ${NAMESPACE_POLICY_ANNOTATION}=kind=mode,...)`;
  return `Namespace overrides (annotation ${NAMESPACE_POLICY_ANNOTATION}, over the policy above for the kinds named):\n${rows.join("\n")}`;
}

/** The quota section: reads offers, pods, namespaces, virtual nodes, ShadowPods and the controller manager's --peer-quota. */
async function quotaSection(client: KubeClient, ns: string, fcs: ForeignClusterObject[]): Promise<string> {
  const all = <T extends KubeObject>(res: ResourceRef, labelSelector?: string) =>
    client.list<T>(res, { labelSelector }).then(
      (l) => l.items,
      () => [] as T[],
    );
  const manager = await findDeployment(client, "liqo-controller-manager", ns);
  return quotaReport({
    fcs,
    offers: await all<Offer>(ResourceOfferResource),
    pods: await all<Pod>(Resources.pods),
    namespaces: await all(Resources.namespaces, REMOTE_CLUSTER_ID_LABEL),
    nodes: await all(Resources.nodes, "liqo.io/type=virtual-node"),
    shadowPods: await all<QuotaShadow>(ShadowPodResource),
    cordoned: new Set(
      (await all(Resources.namespaces, `${TENANT_NAMESPACE_LABEL}=true`))
        .filter((n) => n.metadata.annotations?.[TENANT_CORDONED_ANNOTATION] === "true")
        .map((n) => n.metadata.labels?.[DISCOVERY_CLUSTER_ID_LABEL] ?? ""),
    ),
    mode: deploymentArg(manager, "peer-quota"),
    requests: await all<QuotaRequest>(ResourceRequestResource),
  });
}

export default defineCommand({
  meta: { name: "status", description: "Show this cluster's liqo identity and its peerings" },
  args: { ...liqoKubeFlags },
  async run({ args }) {
    const ns = args["liqo-namespace"];
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const me = await readClusterIdentity(client, ns);
    if (!me)
      throw new CliError(
        `liqo is not installed here: no ConfigMap ${ns}/liqo-clusterid-configmap (start liqo auth, or liqoctl install)`,
        ExitCode.Failure,
      );
    const authUrl = await readAuthUrl(client, ns);
    const labels =
      Object.entries(me.clusterLabels)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ") || "none";
    const fcs = (await client.list<ForeignClusterObject>(ForeignClusterResource)).items;
    const nodes = new Map<string, boolean>();
    for (const n of (await client.list<Node>(Resources.nodes, { labelSelector: "liqo.io/type=virtual-node" })).items) {
      nodes.set(
        n.metadata.name!,
        n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
      );
    }
    console.log(
      [
        `Cluster identity:`,
        `  name:      ${me.clusterName}`,
        `  ID:        ${me.clusterId}`,
        `  labels:    ${labels}`,
        `  auth URL:  ${authUrl ?? "unknown (liqo auth has not recorded one)"}`,
        "",
        peeringsReport(fcs, nodes),
        "",
        virtualNodesReport(
          await client.list<VirtualNodeObject>(VirtualNodeResource).then(
            (l) => l.items,
            () => [],
          ),
          fcs,
        ),
        "",
        discoveryReport(
          await findDeployment(client, "liqo-discovery", ns),
          await client.list<SearchDomain & KubeObject>(SearchDomainResource).then(
            (l) => l.items,
            () => [],
          ),
        ),
        "",
        networkReport(await findDeployment(client, "liqo-gateway", ns)),
        "",
        await quotaSection(client, ns, fcs),
        "",
        pluginsReport(
          await client.list<ResourceRequest & KubeObject>(ResourceRequestResource).then(
            (l) => l.items,
            () => [],
          ),
          fcs,
        ),
        "",
        policyReport(await client.find(Resources.configMaps, POLICY_CONFIGMAP, ns), ns),
        namespacePolicyReport((await client.list<KubeObject>(Resources.namespaces)).items),
      ].join("\n"),
    );
  },
});
