// liqoctl status: this cluster's liqo identity (name, ID, labels, auth URL) and its peerings,
// each with the phase of every condition and, for any that is not settled, why; and what each
// peering's provider granted or refused for the drop-in reflector plugins; the reflection policy;
// the VirtualNodes of each peering (liqoctl create virtualnode); the network security mode; per
// peering, what is used of each offer (quotas). -o json|yaml prints the same facts as one document
// (cli/status-data.ts), for scripts.
import { defineCommand } from "citty";
import {
  DISCOVERY_CLUSTER_ID_LABEL,
  REMOTE_CLUSTER_ID_LABEL,
  TENANT_CORDONED_ANNOTATION,
  TENANT_NAMESPACE_LABEL,
} from "../../core/apis/labels.ts";
import {
  ForeignClusterResource,
  SearchDomainResource,
  type SearchDomain,
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
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { readClusterIdentity } from "../../core/peering/identity.ts";
import { GATEWAY_SERVICE_NAME } from "../../netfabric/shared/labels.ts";
import { POLICY_CONFIGMAP } from "../../core/reflection/policy-watch.ts";
import { CliError, ExitCode } from "../errors.ts";
import { liqoKubeFlags } from "../peering.ts";
import type { VirtualNodeObject } from "../virtualnode.ts";
import { deploymentArg, findDeployment, type Deployment } from "../deployment-args.ts";
import type { Offer, QuotaInput, QuotaShadow } from "../quota-report.ts";
import {
  discoveryStatus,
  namespaceOverridesStatus,
  networkStatus,
  peeringsStatus,
  pluginsStatus,
  policyStatus,
  statusDocument,
  virtualNodesStatus,
  type StatusInputs,
  type Workload,
} from "../status-data.ts";
import {
  discoveryText,
  namespaceOverridesText,
  networkText,
  peeringsText,
  pluginsText,
  policyText,
  statusText,
  virtualNodesText,
} from "../status-text.ts";

// Each section's text from the objects as read: the data, then its formatting.
export const peeringsReport = (fcs: ForeignClusterObject[], nodes: Map<string, boolean>) =>
  peeringsText(peeringsStatus(fcs, nodes));
export const virtualNodesReport = (vns: VirtualNodeObject[], fcs: ForeignClusterObject[]) =>
  virtualNodesText(virtualNodesStatus(vns, fcs));
export const pluginsReport = (rrs: (ResourceRequest & KubeObject)[], fcs: ForeignClusterObject[]) =>
  pluginsText(pluginsStatus(rrs, fcs));
export const networkReport = (gateway: Deployment | undefined, service?: KubeObject) =>
  networkText(networkStatus(gateway, service));
export const discoveryReport = (deployment: Deployment | undefined, domains: (SearchDomain & KubeObject)[]) =>
  discoveryText(discoveryStatus(deployment, domains));
export const policyReport = (cm: (KubeObject & { data?: Record<string, string> }) | undefined, namespace: string) =>
  policyText(policyStatus(cm, namespace));
export const namespacePolicyReport = (namespaces: KubeObject[]) =>
  namespaceOverridesText(namespaceOverridesStatus(namespaces));

const OUTPUTS = ["text", "json", "yaml"] as const;
type Output = (typeof OUTPUTS)[number];

/** The --output value, refused unless it is one of OUTPUTS (before any API call). */
export function statusOutput(value: string | undefined): Output {
  const output = value ?? "text";
  if (!(OUTPUTS as readonly string[]).includes(output))
    throw new CliError(`--output ${output}: use json or yaml (or text, the default)`);
  return output as Output;
}

/** What the quota section reads: offers, pods, namespaces, virtual nodes, ShadowPods and the controller manager's --peer-quota. */
async function readQuotaInput(
  client: KubeClient,
  ns: string,
  requests: ResourceRequest[],
): Promise<Omit<QuotaInput, "fcs">> {
  const all = <T extends KubeObject>(res: ResourceRef, labelSelector?: string) =>
    client.list<T>(res, { labelSelector }).then(
      (l) => l.items,
      () => [] as T[],
    );
  const manager = await findDeployment(client, "liqo-controller-manager", ns);
  return {
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
    requests,
  };
}

/** Everything the status shows, read from the cluster; a list this user may not read counts as empty. */
export async function readStatusInputs(client: KubeClient, ns: string): Promise<StatusInputs> {
  const identity = await readClusterIdentity(client, ns);
  if (!identity)
    throw new CliError(
      `liqo is not installed here: no ConfigMap ${ns}/liqo-clusterid-configmap (start liqo auth, or liqoctl install)`,
      ExitCode.Failure,
    );
  const optional = <T extends KubeObject>(res: ResourceRef) =>
    client.list<T>(res).then(
      (l) => l.items,
      () => [] as T[],
    );
  const authUrl = await readAuthUrl(client, ns);
  const fcs = (await client.list<ForeignClusterObject>(ForeignClusterResource)).items;
  const nodes = new Map<string, boolean>();
  for (const n of (await client.list<Node>(Resources.nodes, { labelSelector: "liqo.io/type=virtual-node" })).items) {
    nodes.set(n.metadata.name!, n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false);
  }
  const virtualNodes = await optional<VirtualNodeObject>(VirtualNodeResource);
  const discovery = await findDeployment(client, "liqo-discovery", ns);
  const searchDomains = await optional<SearchDomain & KubeObject>(SearchDomainResource);
  const gateway = await findDeployment(client, "liqo-gateway", ns);
  const gatewayService = gateway
    ? await client.find<KubeObject>(Resources.services, GATEWAY_SERVICE_NAME, ns).catch(() => undefined)
    : undefined;
  const requests = await optional<ResourceRequest & KubeObject>(ResourceRequestResource);
  const liqoWorkloads = (res: ResourceRef) =>
    client.list<Workload>(res, { namespace: ns, labelSelector: "app.kubernetes.io/part-of=liqo" }).then(
      (l) => l.items,
      () => [] as Workload[],
    );
  return {
    identity,
    authUrl,
    namespace: ns,
    fcs,
    nodes,
    virtualNodes,
    discovery,
    searchDomains,
    gateway,
    gatewayService,
    quota: await readQuotaInput(client, ns, requests),
    requests,
    policy: await client.find(Resources.configMaps, POLICY_CONFIGMAP, ns),
    namespaces: (await client.list<KubeObject>(Resources.namespaces)).items,
    workloads: {
      deployments: await liqoWorkloads(Resources.deployments),
      daemonSets: await liqoWorkloads(Resources.daemonSets),
    },
  };
}

export default defineCommand({
  meta: { name: "status", description: "Show this cluster's liqo identity and its peerings" },
  args: {
    ...liqoKubeFlags,
    output: {
      type: "string",
      alias: "o",
      description: "output format: text (default), json or yaml (one Status document, for scripts)",
    },
  },
  async run({ args }) {
    const output = statusOutput(args.output);
    const ns = args["liqo-namespace"];
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const status = statusDocument(await readStatusInputs(client, ns));
    if (output === "json") console.log(JSON.stringify(status, null, 2));
    else if (output === "yaml") console.log(Bun.YAML.stringify(status, null, 2).trimEnd());
    else console.log(statusText(status));
  },
});
