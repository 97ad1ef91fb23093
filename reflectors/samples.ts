// Realistic objects as the engine's caches hold them (server fields included), shared by the
// table tests, the conformance runs and the benchmark.
import type { KubeObject, ReflectionContext } from "../core/reflection/abi.ts";

export const ctx: ReflectionContext = {
  localClusterId: "home-1111",
  remoteClusterId: "far-2222",
  localNamespace: "shop",
  remoteNamespace: "shop-home-1111",
  virtualNodeName: "liqo-far-2222",
  virtualKubeletIp: "10.0.0.77",
  storageClass: "remote-ssd",
};

const server = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  namespace: "shop",
  uid: "0b6f4b8e-6a55-4bd2-9d2b-5b8e1c3a9f10",
  resourceVersion: "48213",
  generation: 3,
  creationTimestamp: "2026-01-01T10:00:00Z",
  labels: { app: "shop", tier: "web" },
  annotations: { owner: "team-a" },
  managedFields: [
    {
      manager: "kubectl",
      operation: "Apply",
      apiVersion: "v1",
      time: "2026-01-01T10:00:00Z",
      fieldsType: "FieldsV1",
      fieldsV1: { "f:metadata": { "f:labels": { "f:app": {} } } },
    },
  ],
  ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "shop-7d9", uid: "9f1c", controller: true }],
  ...extra,
});

/** The reflection labels a remote copy made by us carries. */
export const ownedLabels = { "liqo.io/managed-by": "reflection", "liqo.io/origin-cluster-id": ctx.localClusterId };

export const service: KubeObject = {
  apiVersion: "v1",
  kind: "Service",
  metadata: server("web"),
  spec: {
    type: "LoadBalancer",
    clusterIP: "10.96.0.15",
    clusterIPs: ["10.96.0.15"],
    loadBalancerIP: "192.0.2.10",
    healthCheckNodePort: 31999,
    externalTrafficPolicy: "Local",
    selector: { app: "shop" },
    sessionAffinity: "None",
    ports: [
      { name: "http", port: 80, targetPort: 8080, protocol: "TCP", nodePort: 30080 },
      { name: "https", port: 443, targetPort: 8443, protocol: "TCP", nodePort: 30443 },
    ],
  },
  status: { loadBalancer: { ingress: [{ ip: "192.0.2.10" }] } },
};

export const ingress: KubeObject = {
  apiVersion: "networking.k8s.io/v1",
  kind: "Ingress",
  metadata: server("web"),
  spec: {
    ingressClassName: "nginx",
    rules: [
      {
        host: "shop.example.com",
        http: {
          paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }],
        },
      },
    ],
  },
};

export const configMap: KubeObject = {
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: server("settings"),
  data: { "app.yaml": "color: blue\nsize: 3\n", mode: "prod" },
};

export const saSecret: KubeObject = {
  apiVersion: "v1",
  kind: "Secret",
  type: "kubernetes.io/service-account-token",
  metadata: server("builder-token-x7k2", {
    annotations: { "kubernetes.io/service-account.name": "builder", "kubernetes.io/service-account.uid": "5e0a" },
  }),
  data: { token: "ZXlKaGJHY2lPaUpTVXpJMU5pSXNJbXRwWkNJNklp", "ca.crt": "LS0tLS1CRUdJTg==", namespace: "c2hvcA==" },
};

export const endpointSlice: KubeObject = {
  apiVersion: "discovery.k8s.io/v1",
  kind: "EndpointSlice",
  addressType: "IPv4",
  metadata: server("web-abcde", {
    labels: {
      "kubernetes.io/service-name": "web",
      "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    },
  }),
  ports: [{ name: "http", port: 8080, protocol: "TCP" }],
  endpoints: [
    {
      addresses: ["10.244.1.5"],
      conditions: { ready: true },
      nodeName: "worker-1",
      targetRef: { kind: "Pod", name: "web-1", namespace: "shop" },
    },
    {
      addresses: ["10.244.9.7"],
      conditions: { ready: true },
      nodeName: "liqo-far-2222",
      targetRef: { kind: "Pod", name: "web-2", namespace: "shop" },
    },
  ],
};

export const pvc: KubeObject = {
  apiVersion: "v1",
  kind: "PersistentVolumeClaim",
  metadata: server("data", {
    annotations: {
      "volume.kubernetes.io/selected-node": "liqo-far-2222",
      "pv.kubernetes.io/bind-completed": "yes",
      keep: "me",
    },
  }),
  spec: {
    accessModes: ["ReadWriteOnce"],
    resources: { requests: { storage: "5Gi" } },
    storageClassName: "liqo",
    volumeName: "pvc-1234",
    volumeMode: "Filesystem",
  },
};

export const remotePv: KubeObject = {
  apiVersion: "v1",
  kind: "PersistentVolume",
  metadata: {
    name: "pvc-remote-42",
    uid: "r-1",
    resourceVersion: "7",
    labels: { "topology.kubernetes.io/zone": "z1" },
  },
  spec: {
    capacity: { storage: "5Gi" },
    accessModes: ["ReadWriteOnce"],
    storageClassName: "remote-ssd",
    persistentVolumeReclaimPolicy: "Delete",
    claimRef: {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      namespace: "shop-home-1111",
      name: "data",
      uid: "r-9",
    },
    csi: { driver: "ssd.csi.example.com", volumeHandle: "vol-42" },
    nodeAffinity: {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["far-node-3"] }] },
        ],
      },
    },
  },
  status: { phase: "Bound" },
};

export const serviceAccount: KubeObject = {
  apiVersion: "v1",
  kind: "ServiceAccount",
  metadata: { name: "builder", namespace: "shop", resourceVersion: "5120" },
  secrets: [{ name: "builder-token-x7k2" }],
};

const container = (name: string) => ({
  name,
  image: `registry.example.com/shop/${name}:1.4.2`,
  imagePullPolicy: "IfNotPresent",
  args: ["--port=8080", "--log-level=info", "--metrics"],
  ports: [{ name: "http", containerPort: 8080, protocol: "TCP" }],
  env: [
    { name: "MODE", value: "prod" },
    { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
    { name: "DB_URL", valueFrom: { secretKeyRef: { name: "db", key: "url" } } },
  ],
  resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { cpu: "500m", memory: "256Mi" } },
  volumeMounts: [
    { name: "settings", mountPath: "/etc/shop" },
    { name: "kube-api-access-9x8lq", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true },
  ],
  livenessProbe: {
    httpGet: { path: "/healthz", port: 8080, scheme: "HTTP" },
    initialDelaySeconds: 5,
    periodSeconds: 10,
  },
  readinessProbe: { httpGet: { path: "/readyz", port: 8080, scheme: "HTTP" }, periodSeconds: 5 },
  terminationMessagePath: "/dev/termination-log",
  terminationMessagePolicy: "File",
});

/** About 4 KB of JSON, like a typical two-container pod in an informer cache. */
export const pod: KubeObject = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: server("web-7d9-abcde"),
  spec: {
    containers: [container("web"), container("sidecar")],
    volumes: [
      { name: "settings", configMap: { name: "settings" } },
      {
        name: "kube-api-access-9x8lq",
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
            { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
            {
              downwardAPI: {
                items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }],
              },
            },
          ],
        },
      },
    ],
    serviceAccountName: "builder",
    serviceAccount: "builder",
    nodeName: "liqo-far-2222",
    schedulerName: "default-scheduler",
    nodeSelector: { "liqo.io/type": "virtual-node" },
    priority: 1000,
    priorityClassName: "high",
    preemptionPolicy: "PreemptLowerPriority",
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "liqo.io/type", operator: "In", values: ["virtual-node"] }] },
          ],
        },
      },
    },
    hostNetwork: true,
    hostPID: true,
    hostIPC: true,
    restartPolicy: "Always",
    dnsPolicy: "ClusterFirst",
    terminationGracePeriodSeconds: 30,
    tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" }],
  },
  status: { phase: "Pending" },
};

export const remotePod: KubeObject = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "web-7d9-abcde", namespace: "shop-home-1111", uid: "r-77", labels: { ...ownedLabels } },
  spec: { containers: [{ name: "web", image: "x" }] },
  status: {
    phase: "Running",
    podIP: "10.250.3.4",
    podIPs: [{ ip: "10.250.3.4" }],
    hostIP: "172.18.0.9",
    hostIPs: [{ ip: "172.18.0.9" }],
    containerStatuses: [
      { name: "web", ready: true, restartCount: 1, image: "x", imageID: "x", started: true },
      { name: "sidecar", ready: true, restartCount: 0, image: "y", imageID: "y" },
    ],
  },
};
