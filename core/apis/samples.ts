// Valid objects of every kind, shaped as Liqo v0.5 writes them (liqoctl peer out-of-band,
// liqoctl offload namespace, the documented NamespaceOffloading status, the network manager's
// exchange). Functions, so every caller gets its own copy to change. Used by the unit tests and the
// end-to-end CRD test, and handy for later controllers' tests.
import type { KubeObject } from "../kube/resources.ts";

export const MILAN = { clusterID: "4858caa2-7848-4aab-a6b4-6984389bac56", clusterName: "milan" };
export const ROME = { clusterID: "53d11339-fc85-4741-a912-a3eda781a69e", clusterName: "rome" };
const TENANT = "liqo-tenant-milan-3f1c2a";

/** What `liqoctl peer out-of-band milan --auth-url … --cluster-id …` creates. */
export const sampleForeignCluster = () => ({
  apiVersion: "discovery.liqo.io/v1alpha1",
  kind: "ForeignCluster",
  metadata: {
    name: "milan",
    labels: { "discovery.liqo.io/discovery-type": "Manual", "discovery.liqo.io/cluster-id": MILAN.clusterID },
  },
  spec: {
    clusterIdentity: { ...MILAN },
    foreignAuthUrl: "https://172.18.0.2:31845",
    outgoingPeeringEnabled: "Yes",
    incomingPeeringEnabled: "Auto",
    insecureSkipTLSVerify: true,
  },
});

export const sampleForeignClusterStatus = () => ({
  tenantNamespace: { local: TENANT, remote: "liqo-tenant-rome-8a1b2c" },
  peeringConditions: [
    {
      type: "OutgoingPeering",
      status: "Established",
      lastTransitionTime: "2022-05-05T15:08:33Z",
      reason: "Established",
      message: "The ResourceOffer has been accepted",
    },
    { type: "IncomingPeering", status: "None", lastTransitionTime: "2022-05-05T15:08:33Z" },
    { type: "NetworkStatus", status: "Established", lastTransitionTime: "2022-05-05T15:08:30Z" },
    { type: "AuthenticationStatus", status: "Established", lastTransitionTime: "2022-05-05T15:08:20Z" },
  ],
});

export const sampleResourceRequest = () => ({
  apiVersion: "discovery.liqo.io/v1alpha1",
  kind: "ResourceRequest",
  metadata: { name: ROME.clusterID, namespace: TENANT, labels: { "liqo.io/replication": "true" } },
  spec: { clusterIdentity: { ...ROME }, authUrl: "https://172.18.0.3:30721" },
});

export const sampleResourceOffer = () => ({
  apiVersion: "sharing.liqo.io/v1alpha1",
  kind: "ResourceOffer",
  metadata: { name: MILAN.clusterID, namespace: TENANT },
  spec: {
    clusterId: MILAN.clusterID,
    resourceQuota: { hard: { cpu: "4", memory: "7692Mi", pods: 110, "ephemeral-storage": "50Gi" } },
    labels: { "liqo.io/provider": "kind", "topology.liqo.io/region": "north" },
    storageClasses: [{ storageClassName: "standard", default: true }],
  },
});

/** What `liqoctl offload namespace liqo-demo --pod-offloading-strategy Remote --selector topology.liqo.io/region=south` writes. */
export const sampleNamespaceOffloading = () => ({
  apiVersion: "offloading.liqo.io/v1alpha1",
  kind: "NamespaceOffloading",
  metadata: { name: "offloading", namespace: "liqo-demo" },
  spec: {
    namespaceMappingStrategy: "EnforceSameName",
    podOffloadingStrategy: "Remote",
    clusterSelector: {
      nodeSelectorTerms: [
        { matchExpressions: [{ key: "topology.liqo.io/region", operator: "In", values: ["south"] }] },
      ],
    },
  },
});

/** The status the Liqo documentation shows for the offloading tutorial. */
export const sampleNamespaceOffloadingStatus = () => ({
  offloadingPhase: "Ready",
  remoteNamespaceName: "liqo-demo",
  remoteNamespacesConditions: {
    "florence-539f8b": [
      {
        lastTransitionTime: "2022-05-05T15:08:33Z",
        message: "You have not selected this cluster through ClusterSelector fields",
        reason: "ClusterNotSelected",
        status: "False",
        type: "OffloadingRequired",
      },
    ],
    "naples-7881be": [
      {
        lastTransitionTime: "2022-05-05T15:08:43Z",
        message: "The remote cluster has been selected through the ClusterSelector field",
        reason: "ClusterSelected",
        status: "True",
        type: "OffloadingRequired",
      },
      {
        lastTransitionTime: "2022-05-05T15:08:43Z",
        message: "Namespace correctly offloaded on this cluster",
        reason: "RemoteNamespaceCreated",
        status: "True",
        type: "Ready",
      },
    ],
  },
});

export const sampleNamespaceMap = () => ({
  apiVersion: "virtualkubelet.liqo.io/v1alpha1",
  kind: "NamespaceMap",
  metadata: { name: "milan-a1b2c3", namespace: TENANT },
  spec: { desiredMapping: { "liqo-demo": "liqo-demo" } },
});

export const sampleShadowPod = () => ({
  apiVersion: "virtualkubelet.liqo.io/v1alpha1",
  kind: "ShadowPod",
  metadata: { name: "hello-7d4b9c-x2x9z", namespace: "liqo-demo", labels: { "liqo.io/managed-by": "shadowpod" } },
  spec: {
    pod: {
      containers: [
        {
          name: "nginx",
          image: "nginx:1.23",
          ports: [{ containerPort: 80, protocol: "TCP" }],
          resources: { requests: { cpu: "100m" } },
        },
      ],
      restartPolicy: "Always",
      tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" }],
    },
  },
});

export const sampleNetworkConfig = () => ({
  apiVersion: "net.liqo.io/v1alpha1",
  kind: "NetworkConfig",
  metadata: { name: "net-config-x7k2p", namespace: TENANT, labels: { "liqo.io/replication": "true" } },
  spec: {
    cluster: { ...MILAN },
    podCIDR: "10.200.0.0/16",
    externalCIDR: "10.201.0.0/16",
    endpointIP: "172.18.0.3",
    backendType: "wireguard",
    backend_config: { publicKey: "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmE=", port: "51820" },
  },
});

export const sampleTunnelEndpoint = () => ({
  apiVersion: "net.liqo.io/v1alpha1",
  kind: "TunnelEndpoint",
  metadata: { name: "tep-milan", namespace: TENANT },
  spec: {
    clusterID: MILAN.clusterID,
    localPodCIDR: "10.200.0.0/16",
    localNATPodCIDR: "10.50.0.0/16",
    localExternalCIDR: "10.201.0.0/16",
    remotePodCIDR: "10.200.0.0/16",
    remoteNATPodCIDR: "10.60.0.0/16",
    remoteExternalCIDR: "10.201.0.0/16",
    endpointIP: "172.18.0.2",
    backendType: "wireguard",
    backend_config: { publicKey: "YmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm8=", port: "51820" },
  },
});

export const sampleNatMapping = () => ({
  apiVersion: "net.liqo.io/v1alpha1",
  kind: "NatMapping",
  metadata: { name: "natmapping-milan", labels: { "net.liqo.io/natmapping": "true" } },
  spec: {
    clusterID: MILAN.clusterID,
    podCIDR: "10.60.0.0/16",
    externalCIDR: "10.201.0.0/16",
    clusterMappings: { "10.201.0.5": "10.200.1.7" },
  },
});

export const sampleIpamStorage = () => ({
  apiVersion: "net.liqo.io/v1alpha1",
  kind: "IpamStorage",
  metadata: { name: "ipamstorage-rome", labels: { "net.liqo.io/ipamstorage": "true" } },
  spec: {
    prefixes: {},
    pools: ["10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12"],
    reservedSubnets: [],
    clusterSubnets: {
      [MILAN.clusterID]: {
        localNATPodCIDR: "10.50.0.0/16",
        remotePodCIDR: "10.60.0.0/16",
        localNATExternalCIDR: "None",
        remoteExternalCIDR: "10.201.0.0/16",
      },
    },
    externalCIDR: "10.201.0.0/16",
    endpointMappings: { "10.200.1.7": { ip: "10.201.0.5", clusterMappings: { [MILAN.clusterID]: {} } } },
    natMappingsConfigured: { [MILAN.clusterID]: {} },
    podCIDR: "10.200.0.0/16",
    serviceCIDR: "10.96.0.0/12",
  },
});

/** One valid object of each kind, by kind. */
export const samples: Record<string, () => KubeObject> = {
  ForeignCluster: sampleForeignCluster,
  ResourceRequest: sampleResourceRequest,
  ResourceOffer: sampleResourceOffer,
  NamespaceOffloading: sampleNamespaceOffloading,
  NamespaceMap: sampleNamespaceMap,
  ShadowPod: sampleShadowPod,
  NetworkConfig: sampleNetworkConfig,
  TunnelEndpoint: sampleTunnelEndpoint,
  NatMapping: sampleNatMapping,
  IpamStorage: sampleIpamStorage,
  VirtualNode: () => ({
    apiVersion: "virtualkubelet.liqo.io/v1alpha1",
    kind: "VirtualNode",
    metadata: { name: "milan-gpu", namespace: TENANT },
    spec: {
      clusterID: MILAN.clusterID,
      resourceQuota: { hard: { cpu: "2", memory: "4Gi", pods: 20 } },
      labels: { accelerator: "gpu" },
      taints: [{ key: "accelerator", value: "gpu", effect: "NoSchedule" }],
      offloadingPatch: { nodeSelector: { "example.com/gpu": "true" } },
    },
  }),
  ServiceExport: () => ({
    apiVersion: "multicluster.x-k8s.io/v1alpha1",
    kind: "ServiceExport",
    metadata: { name: "web", namespace: TENANT },
    spec: {},
  }),
  ServiceImport: () => ({
    apiVersion: "multicluster.x-k8s.io/v1alpha1",
    kind: "ServiceImport",
    metadata: { name: "web", namespace: TENANT },
    spec: {
      ports: [{ name: "http", protocol: "TCP", port: 80 }],
      ips: ["10.96.0.42"],
      type: "ClusterSetIP",
      sessionAffinity: "None",
    },
  }),
  ExportedService: () => ({
    apiVersion: "multicluster.liqo.io/v1alpha1",
    kind: "ExportedService",
    metadata: { name: "shop.web.53d11339", namespace: TENANT },
    spec: {
      serviceNamespace: "shop",
      serviceName: "web",
      exportedAt: "2026-01-02T03:04:05Z",
      type: "ClusterSetIP",
      ports: [{ name: "http", protocol: "TCP", port: 80 }],
      sessionAffinity: "None",
      slices: [
        {
          addressType: "IPv4",
          ports: [{ name: "http", port: 8080, protocol: "TCP" }],
          endpoints: [{ addresses: ["10.200.1.7"], ready: true }],
        },
      ],
    },
  }),
  SearchDomain: () => ({
    apiVersion: "discovery.liqo.io/v1alpha1",
    kind: "SearchDomain",
    metadata: { name: "example" },
    spec: { domain: "clusters.example.com", autojoin: true },
  }),
};
