// liqoctl status's text: each section of the data (cli/status-data.ts) formatted for a reader, in
// kubectl's look (tables, then the notes on what is not settled).
import { NAMESPACE_POLICY_ANNOTATION, formatReflectionPolicy } from "../core/reflection/policy.ts";
import { quotaText } from "./quota-report.ts";
import {
  peeringLabel,
  type DiscoveryStatus,
  type IdentityStatus,
  type InstallationStatus,
  type NamespaceOverrideStatus,
  type NetworkStatus,
  type PeeringStatus,
  type PluginStatus,
  type PolicyStatus,
  type StatusDocument,
  type VirtualNodeStatus,
} from "./status-data.ts";
import { table } from "./table.ts";
import { formatResources } from "./virtualnode.ts";

export function identityText(me: IdentityStatus): string {
  const labels =
    Object.entries(me.labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(", ") || "none";
  return [
    `Cluster identity:`,
    `  name:      ${me.name}`,
    `  ID:        ${me.id}`,
    `  labels:    ${labels}`,
    `  auth URL:  ${me.authUrl ?? "unknown (liqo auth has not recorded one)"}`,
  ].join("\n");
}

export function installationText(i: InstallationStatus): string {
  const what = `liqo ${i.version ?? "(version unknown)"} in namespace ${i.namespace}`;
  const rolling = i.version?.includes(",") ? " (an upgrade is rolling out)" : "";
  if (!i.components.length)
    return `Installation: no liqo Deployment in namespace ${i.namespace} (liqoctl install --help)`;
  if (i.healthy) return `Installation: ${what}${rolling}: healthy (${i.components.length} workloads ready)`;
  const lines = i.components
    .filter((c) => c.ready < c.desired)
    .map(
      (c) =>
        `  ${c.name} (${c.kind}): ${c.ready} of ${c.desired} ready: kubectl -n ${i.namespace} describe ${c.kind.toLowerCase()} ${c.name}`,
    );
  return [`Installation: ${what}${rolling}: NOT healthy`, ...lines].join("\n");
}

export function peeringsText(peerings: PeeringStatus[]): string {
  if (!peerings.length)
    return "Peerings: none (liqoctl generate peer-command on a provider prints the command to peer with it)";
  const rows = [
    ["NAME", "CLUSTER ID", "OUTGOING", "INCOMING", "NETWORKING", "AUTHENTICATION", "DISCOVERY", "VIRTUAL NODE"],
  ];
  const notes: string[] = [];
  for (const p of peerings) {
    rows.push([
      p.name,
      p.clusterID ?? "-",
      p.outgoing,
      p.incoming,
      p.networking,
      p.authentication,
      p.discovery,
      p.virtualNode ? `${p.virtualNode.name} (${p.virtualNode.ready ? "Ready" : "NotReady"})` : "-",
    ]);
    for (const c of p.unsettled) notes.push(`  ${p.name} ${c.type} ${c.status} (${c.reason}): ${c.message}`);
  }
  return `Peerings:\n${table(rows)}${notes.length ? `\n\nNot settled:\n${notes.join("\n")}` : ""}`;
}

export function virtualNodesText(vns: VirtualNodeStatus[]): string {
  if (!vns.length)
    return "Virtual nodes: each peering's own only (liqoctl create virtualnode adds more to an outgoing peering)";
  const rows = [["PEERING", "NAME", "READY", "REASON", "RESOURCES"]];
  const notes: string[] = [];
  for (const vn of vns) {
    rows.push([
      peeringLabel(vn),
      `${vn.name}${vn.deleting ? " (deleting)" : ""}`,
      vn.ready,
      vn.reason ?? "Pending",
      formatResources(vn.resources),
    ]);
    if (vn.ready !== "True" && vn.message) notes.push(`  ${vn.namespace}/${vn.name} ${vn.reason}: ${vn.message}`);
  }
  return `Virtual nodes (besides each peering's own):\n${table(rows)}${notes.length ? `\n\nNot ready:\n${notes.join("\n")}` : ""}`;
}

export function pluginsText(plugins: PluginStatus[]): string {
  if (!plugins.length) return "Reflector plugins: none requested or granted (liqoctl plugin install <file.wasm>)";
  const lines = plugins.map(
    (p) =>
      `  ${p.peer} (${p.direction}): ${p.name} ${p.state === "Waiting" ? "waiting for the provider's answer" : `${p.state}: ${p.message ?? ""}`}`,
  );
  return `Reflector plugins:\n${lines.join("\n")}`;
}

export function networkText(network: NetworkStatus | null): string {
  if (!network) return "Network security mode: unknown (no liqo-gateway Deployment: liqo installed without networking)";
  const what =
    network.securityMode === "IntraClusterTrafficSegregation"
      ? "peers reach only the pods offloaded to them, their own pods here and the endpoints of Services reflected to them"
      : "every pod reaches every pod across peerings";
  return `Network security mode: ${network.securityMode} (${what}; helm upgrade --set networking.securityMode=... changes it)${network.rolling ? "\n  the gateway pods are rolling to it" : ""}
${wireguardText(network.wireguardImplementation)}`;
}

function wireguardText(implementation: string | null): string {
  if (implementation === "kernel") return "WireGuard: kernel (the active gateway's device is the kernel module's)";
  if (implementation === "userspace")
    return "WireGuard: userspace (wireguard-go: the nodes have no wireguard kernel module, or the gateway runs with --wireguard userspace)";
  if (implementation) return `WireGuard: ${implementation}`;
  return "WireGuard: not reported yet (no active gateway has opened its device)";
}

export function discoveryText(d: DiscoveryStatus): string {
  const lines: string[] = [];
  const lan = d.lan;
  if (!lan.enabled) {
    lines.push(
      "  LAN (mDNS): off (liqoctl install --set discovery.config.enableDiscovery=true,discovery.config.enableAdvertisement=true)",
    );
  } else {
    const on = (v: boolean | null) => (v ? "on" : "off");
    const running = lan.replicas === 0 ? "scaled to 0" : `${lan.ready}/${lan.replicas} ready`;
    lines.push(
      `  LAN (mDNS): advertisement ${on(lan.advertisement)}, discovery ${on(lan.discovery)}, autojoin ${on(lan.autojoin)}, ttl ${lan.ttlSeconds}s (deployment liqo-discovery: ${running})`,
    );
  }
  if (!d.wan.length)
    lines.push(`  WAN (SearchDomains): ${d.wanEnabled ? "none" : "off (discovery.config.enableWanDiscovery)"}`);
  for (const w of d.wan) {
    lines.push(
      `  WAN ${w.name}: ${w.domain}, autojoin ${w.autojoin ? "on" : "off"}: ${w.foreignClusters.join(", ") || "no cluster"}${w.problem ? ` (problem: ${w.problem})` : ""}`,
    );
  }
  return `Discovery:\n${lines.join("\n")}`;
}

export function policyText(p: PolicyStatus): string {
  if (!p.kinds) return `Reflection policy: refused, the controller manager keeps the previous one: ${p.error}`;
  const rows = Object.entries(p.kinds).map(([k, mode]) => `  ${k.padEnd(16)}${mode}`);
  return `Reflection policy${p.source === "configmap" ? "" : ` (no ConfigMap ${p.configMap}: the defaults)`}:\n${rows.join("\n")}`;
}

export function namespaceOverridesText(overrides: NamespaceOverrideStatus[]): string {
  if (!overrides.length)
    return `Namespace overrides: none (annotate a namespace ${NAMESPACE_POLICY_ANNOTATION}=kind=mode,...)`;
  const rows = overrides.map(
    (o) =>
      `  ${o.namespace.padEnd(16)}${o.policy ? formatReflectionPolicy(o.policy) : `refused, the controller manager keeps its previous override or the cluster's policy: ${o.error}`}`,
  );
  return `Namespace overrides (annotation ${NAMESPACE_POLICY_ANNOTATION}, over the policy above for the kinds named):\n${rows.join("\n")}`;
}

/** The whole of liqoctl status's text, sections apart by a blank line (the two policy sections together). */
export function statusText(s: StatusDocument): string {
  return [
    `${identityText(s.clusterIdentity)}\n${installationText(s.installation)}`,
    peeringsText(s.peerings),
    virtualNodesText(s.virtualNodes),
    discoveryText(s.discovery),
    networkText(s.network),
    quotaText(s.quotas),
    pluginsText(s.reflectorPlugins),
    `${policyText(s.reflectionPolicy)}\n${namespaceOverridesText(s.namespaceOverrides)}`,
  ].join("\n\n");
}
