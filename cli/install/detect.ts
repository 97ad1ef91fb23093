// What liqoctl can learn about a cluster from its API alone. Each probe returns undefined when the
// cluster does not expose that source; providers pick the probes that apply to them.
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";

export interface Networks {
  podCIDR?: string;
  serviceCIDR?: string;
  source: string;
}

const ServiceCIDRs: ResourceRef = {
  group: "networking.k8s.io",
  version: "v1",
  kind: "ServiceCIDR",
  plural: "servicecidrs",
  namespaced: false,
};

/** Value of --flag=value or --flag value in a command line. */
export function flagValue(command: string[], flag: string): string | undefined {
  for (let i = 0; i < command.length; i++) {
    const a = command[i]!;
    if (a.startsWith(`--${flag}=`)) return a.slice(flag.length + 3);
    if (a === `--${flag}` && i + 1 < command.length) return command[i + 1];
  }
  return undefined;
}

async function orUndefined<T>(probe: () => Promise<T>): Promise<T | undefined> {
  try {
    return await probe();
  } catch (err) {
    // Missing kinds (404) and missing rights (403) just mean "this source is not available".
    if (err instanceof KubeApiError && [403, 404].includes(err.status)) return undefined;
    throw err;
  }
}

/** kubeadm (and kind, which runs kubeadm): the kube-controller-manager static pod's flags. */
export async function fromControllerManagerPod(client: KubeClient): Promise<Networks | undefined> {
  const pods = await orUndefined(() =>
    client.list(Resources.pods, { namespace: "kube-system", labelSelector: "component=kube-controller-manager" }),
  );
  const pod = pods?.items[0] as
    | (KubeObject & { spec?: { containers?: { command?: string[]; args?: string[] }[] } })
    | undefined;
  if (!pod) return undefined;
  const c = pod.spec?.containers?.[0];
  const cmd = [...(c?.command ?? []), ...(c?.args ?? [])];
  const podCIDR = flagValue(cmd, "cluster-cidr");
  const serviceCIDR = flagValue(cmd, "service-cluster-ip-range");
  return podCIDR || serviceCIDR ? { podCIDR, serviceCIDR, source: `pod kube-system/${pod.metadata.name}` } : undefined;
}

/** kubeadm's ClusterConfiguration, kept in kube-system/kubeadm-config. */
export async function fromKubeadmConfig(
  client: KubeClient,
): Promise<(Networks & { controlPlaneEndpoint?: string }) | undefined> {
  const cm = await orUndefined(() =>
    client.find<KubeObject & { data?: Record<string, string> }>(Resources.configMaps, "kubeadm-config", "kube-system"),
  );
  const text = cm?.data?.ClusterConfiguration;
  if (!text) return undefined;
  const cfg = Bun.YAML.parse(text) as {
    networking?: { podSubnet?: string; serviceSubnet?: string };
    controlPlaneEndpoint?: string;
  };
  return {
    podCIDR: cfg.networking?.podSubnet,
    serviceCIDR: cfg.networking?.serviceSubnet,
    controlPlaneEndpoint: cfg.controlPlaneEndpoint,
    source: "configmap kube-system/kubeadm-config",
  };
}

/** k3s records each server's arguments in the node annotation k3s.io/node-args; k3s defaults otherwise. */
export async function fromK3sNodes(client: KubeClient): Promise<Networks | undefined> {
  const nodes = await orUndefined(() => client.list(Resources.nodes));
  for (const n of nodes?.items ?? []) {
    const raw = n.metadata.annotations?.["k3s.io/node-args"];
    if (!raw) continue;
    let args: string[] = [];
    try {
      args = JSON.parse(raw);
    } catch {
      continue;
    }
    if (!args.includes("server")) continue;
    return {
      podCIDR: flagValue(args, "cluster-cidr") ?? "10.42.0.0/16",
      serviceCIDR: flagValue(args, "service-cidr") ?? "10.43.0.0/16",
      source: `node ${n.metadata.name} annotation k3s.io/node-args (k3s defaults where absent)`,
    };
  }
  return undefined;
}

/** OpenShift's cluster network configuration (config.openshift.io/v1 Network "cluster"). */
export async function fromOpenShiftNetwork(client: KubeClient): Promise<Networks | undefined> {
  const net = await orUndefined(() =>
    client.request<{ status?: { clusterNetwork?: { cidr: string }[]; serviceNetwork?: string[] } }>(
      "GET",
      "/apis/config.openshift.io/v1/networks/cluster",
    ),
  );
  if (!net?.status) return undefined;
  return {
    podCIDR: net.status.clusterNetwork?.[0]?.cidr,
    serviceCIDR: net.status.serviceNetwork?.[0],
    source: "networks.config.openshift.io/cluster",
  };
}

/** Any Kubernetes ≥ 1.33: the default ServiceCIDR object holds the service range. */
export async function fromServiceCidrApi(client: KubeClient): Promise<Networks | undefined> {
  const cidr = await orUndefined(() =>
    client.find<KubeObject & { spec?: { cidrs?: string[] } }>(ServiceCIDRs, "kubernetes"),
  );
  const v4 = cidr?.spec?.cidrs?.find((c) => c.includes("."));
  return v4 ? { serviceCIDR: v4, source: "servicecidr/kubernetes" } : undefined;
}

/**
 * Older clusters: a server-side dry run of a Service with an out-of-range cluster IP is refused
 * with "The range of valid IPs is <cidr>". Nothing is created.
 */
export async function fromServiceDryRun(client: KubeClient): Promise<Networks | undefined> {
  const svc = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "liqoctl-service-cidr-probe", namespace: "default" },
    spec: { clusterIP: "1.1.1.1", ports: [{ port: 443 }] },
  };
  try {
    await client.request("POST", "/api/v1/namespaces/default/services", { body: svc, query: { dryRun: "All" } });
  } catch (err) {
    const m = /range of valid IPs is ([0-9.]+\/\d+)/.exec((err as Error).message);
    if (m) return { serviceCIDR: m[1], source: "the API server's answer to an out-of-range Service IP (dry run)" };
  }
  return undefined;
}

/** The cluster's nodes' pod CIDRs (per node, not the cluster range: only a hint for the user). */
export async function nodePodCidrs(client: KubeClient): Promise<string[]> {
  const nodes = await orUndefined(() => client.list<KubeObject & { spec?: { podCIDR?: string } }>(Resources.nodes));
  return (nodes?.items ?? []).map((n) => n.spec?.podCIDR).filter(Boolean) as string[];
}

/** InternalIP of a control-plane node: what peers reach for kind, whose kubeconfig points at localhost. */
export async function controlPlaneAddress(client: KubeClient): Promise<string | undefined> {
  const nodes = await orUndefined(() =>
    client.list<KubeObject & { status?: { addresses?: { type: string; address: string }[] } }>(Resources.nodes, {
      labelSelector: "node-role.kubernetes.io/control-plane",
    }),
  );
  return nodes?.items[0]?.status?.addresses?.find((a) => a.type === "InternalIP")?.address;
}

/** The kube-system namespace UID: the cluster ID liqo uses (core/peering/identity.ts). */
export async function kubeSystemUid(client: KubeClient): Promise<string | undefined> {
  return (await orUndefined(() => client.get(Resources.namespaces, "kube-system")))?.metadata.uid;
}
