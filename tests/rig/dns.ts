// The cluster DNS of a rig cluster with real nodes: CoreDNS (built here, run from the rig's image)
// as a Deployment behind the Service at the service CIDR's 10th address, as kubeadm sets it up.
// Every pod of the cluster resolves <service>.<namespace>.svc.cluster.local through it.
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { RigError } from "./errors.ts";
import { nthAddress } from "./node-config.ts";

export const corednsImage = "ghcr.io/liqo-bun/coredns:v1.14.7";
export const clusterDnsAddress = (serviceCIDR: string) => nthAddress(serviceCIDR, 10);

const manager = { fieldManager: "liqo-rig", force: true };

// No upstream resolver: rig nodes have no way out, so names outside the cluster fail fast.
const corefile = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
    loop
    loadbalance
}
`;

export function clusterDnsObjects(serviceCIDR: string): [ResourceRef, KubeObject][] {
  const ns = "kube-system";
  const labels = { "k8s-app": "kube-dns" };
  return [
    [
      Resources.serviceAccounts,
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "coredns", namespace: ns } },
    ],
    [
      Resources.clusterRoles,
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: "system:coredns" },
        rules: [
          { apiGroups: [""], resources: ["endpoints", "services", "pods", "namespaces"], verbs: ["list", "watch"] },
          { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
        ],
      } as KubeObject,
    ],
    [
      Resources.clusterRoleBindings,
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "system:coredns" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "system:coredns" },
        subjects: [{ kind: "ServiceAccount", name: "coredns", namespace: ns }],
      } as KubeObject,
    ],
    [
      Resources.configMaps,
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "coredns", namespace: ns },
        data: { Corefile: corefile },
      } as KubeObject,
    ],
    [
      Resources.deployments,
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "coredns", namespace: ns, labels },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              serviceAccountName: "coredns",
              dnsPolicy: "Default",
              // Never on a kwok node of a mixed cluster: there it would only pretend to run.
              nodeSelector: { type: "real" },
              priorityClassName: "system-cluster-critical",
              containers: [
                {
                  name: "coredns",
                  image: corednsImage,
                  // Imported into the nodes, or (the rig's foreign profile) pulled from its registry.
                  imagePullPolicy: "IfNotPresent",
                  args: ["-conf", "/etc/coredns/Corefile"],
                  ports: [
                    { name: "dns", containerPort: 53, protocol: "UDP" },
                    { name: "dns-tcp", containerPort: 53, protocol: "TCP" },
                  ],
                  readinessProbe: { httpGet: { path: "/ready", port: 8181 }, periodSeconds: 2 },
                  livenessProbe: { httpGet: { path: "/health", port: 8080 }, periodSeconds: 10, failureThreshold: 5 },
                  resources: { requests: { cpu: "50m", memory: "32Mi" }, limits: { memory: "128Mi" } },
                  volumeMounts: [{ name: "config", mountPath: "/etc/coredns", readOnly: true }],
                },
              ],
              volumes: [{ name: "config", configMap: { name: "coredns" } }],
            },
          },
        },
      } as KubeObject,
    ],
    [
      Resources.services,
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "kube-dns", namespace: ns, labels },
        spec: {
          clusterIP: clusterDnsAddress(serviceCIDR),
          selector: labels,
          ports: [
            { name: "dns", port: 53, protocol: "UDP", targetPort: 53 },
            { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: 53 },
          ],
        },
      } as KubeObject,
    ],
  ];
}

type DeploymentObject = KubeObject & { status?: { readyReplicas?: number } };

export async function deployClusterDns(
  cluster: string,
  serviceCIDR: string,
  client: KubeClient,
  timeoutMs = 120_000,
): Promise<void> {
  for (const [res, obj] of clusterDnsObjects(serviceCIDR)) await client.apply(res, obj, manager);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const d = await client.find<DeploymentObject>(Resources.deployments, "coredns", "kube-system");
    if ((d?.status?.readyReplicas ?? 0) >= 1) return;
    await Bun.sleep(500);
  }
  const pods = await client.list(Resources.pods, { namespace: "kube-system", labelSelector: "k8s-app=kube-dns" });
  const states = pods.items.map(
    (p) => `${p.metadata.name}: ${JSON.stringify((p as { status?: unknown }).status).slice(0, 400)}`,
  );
  throw new RigError(
    `cluster ${cluster}: CoreDNS did not become ready within ${timeoutMs / 1000}s; ${states.join("; ") || "no pod was created"}`,
  );
}
