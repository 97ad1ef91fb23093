// The install providers: what each Kubernetes distribution lets liqoctl detect about itself, and
// the flags that stand in for what it cannot. Liqo's liqoctl calls the cloud APIs (AWS, GCP, Azure)
// for the network ranges; this one does not, so the cloud providers take them as flags and say so.
import type { ArgsDef } from "citty";
import type { KubeClient } from "../../core/kube/client.ts";
import {
  controlPlaneAddress,
  fromControllerManagerPod,
  fromK3sNodes,
  fromKubeadmConfig,
  fromOpenShiftNetwork,
  fromServiceCidrApi,
  fromServiceDryRun,
  type Networks,
} from "./detect.ts";

export interface Detection {
  podCIDR?: string;
  serviceCIDR?: string;
  apiServerUrl?: string;
  clusterName?: string;
  clusterLabels: Record<string, string>;
  /** The Service type for auth and gateway: LoadBalancer where the platform provides one. */
  serviceType: "LoadBalancer" | "NodePort";
  /** LoadBalancer only if the cluster turns out to have a load balancer (probed before installing), else NodePort. */
  checkLoadBalancer?: boolean;
  /** Where each detected value came from, or why it could not be found (printed with --verbose / on failure). */
  notes: string[];
}

export interface Provider {
  name: string;
  description: string;
  flags: ArgsDef;
  /** What a missing pod CIDR means on this platform, for the error message. */
  podCidrHint?: string;
  detect(client: KubeClient, flags: Record<string, unknown>): Promise<Detection>;
}

async function firstNetworks(
  client: KubeClient,
  probes: ((c: KubeClient) => Promise<Networks | undefined>)[],
  notes: string[],
): Promise<Partial<Networks>> {
  const out: Partial<Networks> = {};
  for (const probe of probes) {
    const n = await probe(client);
    if (!n) continue;
    if (!out.podCIDR && n.podCIDR) {
      out.podCIDR = n.podCIDR;
      notes.push(`pod CIDR ${n.podCIDR} from ${n.source}`);
    }
    if (!out.serviceCIDR && n.serviceCIDR) {
      out.serviceCIDR = n.serviceCIDR;
      notes.push(`service CIDR ${n.serviceCIDR} from ${n.source}`);
    }
    if (out.podCIDR && out.serviceCIDR) break;
  }
  return out;
}

/** Every cluster can tell its service range, one way or another. */
const serviceProbes = [fromServiceCidrApi, fromServiceDryRun];
export const isLoopback = (url: string) => /^https?:\/\/(127\.|localhost|\[::1\])/.test(url);

function onPremises(
  name: string,
  description: string,
  probes: ((c: KubeClient) => Promise<Networks | undefined>)[],
  serviceType: Detection["serviceType"],
): Provider {
  return {
    name,
    description,
    flags: {},
    podCidrHint: "the --cluster-cidr of kube-controller-manager (or your CNI's pod network)",
    async detect(client) {
      const notes: string[] = [];
      const nets = await firstNetworks(client, [...probes, ...serviceProbes], notes);
      let apiServerUrl: string | undefined;
      const kubeadm = name === "kubeadm" ? await fromKubeadmConfig(client) : undefined;
      if (kubeadm?.controlPlaneEndpoint) {
        apiServerUrl = `https://${kubeadm.controlPlaneEndpoint.replace(/^https:\/\//, "")}`;
        notes.push(`API server ${apiServerUrl} from kubeadm's controlPlaneEndpoint`);
      } else if (isLoopback(client.server)) {
        // kind and k3s kubeconfigs point at localhost, which peers cannot reach.
        const ip = await controlPlaneAddress(client);
        if (ip) {
          apiServerUrl = `https://${ip}:6443`;
          notes.push(
            `API server ${apiServerUrl}: the control-plane node's InternalIP (the kubeconfig's ${client.server} is loopback)`,
          );
        } else
          notes.push(
            `the kubeconfig's API server ${client.server} is loopback and no control-plane node was found; peers outside this machine need --api-server-url`,
          );
      }
      // Load balancers are optional on premises (k3s has one, OpenShift on bare metal may not).
      return {
        ...nets,
        apiServerUrl,
        clusterLabels: { "liqo.io/provider": name },
        serviceType,
        checkLoadBalancer: serviceType === "LoadBalancer",
        notes,
      };
    },
  };
}

function cloud(
  name: string,
  description: string,
  flags: ArgsDef,
  nameFlag: string,
  regionFlags: string[],
  podCidrHint: string,
): Provider {
  return {
    name,
    description,
    flags,
    podCidrHint,
    async detect(client, f) {
      const notes = [`${name}: liqoctl (on Bun) does not call the cloud API; the pod CIDR comes from --pod-cidr`];
      const nets = await firstNetworks(client, serviceProbes, notes);
      const region = regionFlags.map((r) => f[r]).find((v) => typeof v === "string" && v) as string | undefined;
      const clusterName =
        typeof f[nameFlag] === "string" && f[nameFlag] ? (f[nameFlag] as string).toLowerCase() : undefined;
      if (clusterName) notes.push(`cluster name ${clusterName} from --${nameFlag}`);
      return {
        ...nets,
        clusterName,
        serviceType: "LoadBalancer",
        notes,
        clusterLabels: { "liqo.io/provider": name, ...(region ? { "topology.liqo.io/region": region } : {}) },
      };
    },
  };
}

export const providers: Record<string, Provider> = {
  kind: onPremises("kind", "Install liqo on a KinD cluster", [fromControllerManagerPod, fromKubeadmConfig], "NodePort"),
  k3s: onPremises("k3s", "Install liqo on a K3s cluster", [fromK3sNodes], "LoadBalancer"),
  kubeadm: onPremises(
    "kubeadm",
    "Install liqo on a kubeadm cluster",
    [fromControllerManagerPod, fromKubeadmConfig],
    "NodePort",
  ),
  openshift: onPremises(
    "openshift",
    "Install liqo on an OpenShift Container Platform cluster",
    [fromOpenShiftNetwork],
    "LoadBalancer",
  ),
  eks: cloud(
    "eks",
    "Install liqo on an EKS cluster",
    {
      "eks-cluster-region": {
        type: "string",
        description: "AWS region of the cluster (becomes the topology.liqo.io/region label)",
      },
      "eks-cluster-name": { type: "string", description: "EKS cluster name (default cluster name in liqo)" },
    },
    "eks-cluster-name",
    ["eks-cluster-region"],
    "the VPC CIDR the amazon-vpc-cni gives pods (aws ec2 describe-vpcs)",
  ),
  gke: cloud(
    "gke",
    "Install liqo on a GKE cluster",
    {
      "project-id": { type: "string", description: "GCP project of the cluster" },
      "cluster-id": { type: "string", description: "GKE cluster name (default cluster name in liqo)" },
      zone: { type: "string", description: "zone of a zonal cluster" },
      region: {
        type: "string",
        description: "region of a regional cluster (becomes the topology.liqo.io/region label)",
      },
      "credentials-path": {
        type: "string",
        description: "GCP service account key (not used: liqoctl (on Bun) does not call the GCP API)",
      },
    },
    "cluster-id",
    ["region", "zone"],
    "the cluster's clusterIpv4Cidr (gcloud container clusters describe <id> --format='value(clusterIpv4Cidr)')",
  ),
  aks: cloud(
    "aks",
    "Install liqo on an AKS cluster",
    {
      "resource-group-name": { type: "string", description: "Azure resource group of the cluster" },
      "resource-name": { type: "string", description: "AKS resource name (default cluster name in liqo)" },
      "subscription-name": { type: "string", description: "Azure subscription of the cluster" },
    },
    "resource-name",
    [],
    "the cluster's podCidr (az aks show --query networkProfile.podCidr), or the VNet subnet with Azure CNI",
  ),
  generic: {
    name: "generic",
    description: "Install liqo on any other Kubernetes distribution (--api-server-url --pod-cidr --service-cidr)",
    flags: {},
    podCidrHint: "the range your CNI assigns pod IPs from",
    async detect(client) {
      const notes: string[] = [];
      const nets = await firstNetworks(client, serviceProbes, notes);
      // Any cluster may have a load balancer (MetalLB, a cloud's): used when it answers, else NodePort.
      return {
        ...nets,
        clusterLabels: { "liqo.io/provider": "generic" },
        serviceType: "LoadBalancer",
        checkLoadBalancer: true,
        notes,
      };
    },
  },
};
