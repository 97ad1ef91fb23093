// A consumer cluster statically peered with providers, liqo's roles running as processes (as the
// quick start does): the consumer runs the namespace offloading controller, the pod webhook and
// one virtual kubelet per provider (given the provider's kubeconfig by flag); every provider runs
// the ShadowPod controller. Shared by the tests/e2e/offloading-*.test.ts files.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ForeignClusterResource, installCrds, ResourceOfferResource } from "../../core/apis/index.ts";
import { REPLICATION_DESTINATION_LABEL } from "../../core/apis/labels.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { tenantNamespaceName, uniqueName } from "../../core/offloading/index.ts";
import { ensureClusterIdentity } from "../../core/peering/identity.ts";
import { createShadowPodController, type ShadowPodController } from "../../core/shadowpod/controller.ts";
import { startRole } from "../quickstart/roles.ts";
import { freePort } from "../rig/ports.ts";
import { isAlive, killGroupNow } from "../rig/process.ts";
import { serverExt, sign } from "../rig/pki.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";

export interface ClusterInfo {
  name: string;
  region: string;
  clusterID: string;
  client: KubeClient;
  kubeconfig: string;
}

export interface OffloadingRig {
  rig: TestRig;
  consumer: ClusterInfo;
  providers: ClusterInfo[];
  /** The NamespaceMap name of a provider: the key of remoteNamespacesConditions. */
  mapName(provider: ClusterInfo): string;
  /** Runs liqoctl with the consumer's kubeconfig. */
  liqoctl(...args: string[]): Promise<{ code: number; out: string; err: string }>;
  /** Runs kubectl against a cluster of the rig. */
  kubectl(cluster: ClusterInfo, ...args: string[]): Promise<{ code: number; out: string; err: string }>;
  /** The roles started, by name ("rome/webhook", "milan/controller-manager", ...). */
  roles(): string[];
  /** `kill -9` of a role, then started again with the same arguments (as its Deployment would), until ready. */
  killAndRestart(role: string): Promise<void>;
}

async function run(cmd: string[]) {
  const proc = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code: await proc.exited, out, err };
}

/** What the provider offers in a static peering: the virtual node's resources, and its ShadowPods' quota. */
const STATIC_OFFER = { cpu: "64", memory: "256Gi", pods: "20000" };

/**
 * The provider's half of a static peering: its offer to the consumer in the consumer's tenant
 * namespace, as the ResourceRequest controller would keep it (the ShadowPod controller admits
 * the consumer's ShadowPods against it).
 */
async function staticOffer(consumer: ClusterInfo, provider: ClusterInfo) {
  const tenant = tenantNamespaceName({ clusterID: consumer.clusterID, clusterName: consumer.name });
  await provider.client.create(Resources.namespaces, { metadata: { name: tenant } });
  await provider.client.create(ResourceOfferResource, {
    apiVersion: "sharing.liqo.io/v1alpha1",
    kind: "ResourceOffer",
    metadata: {
      name: `resourceoffer-${provider.clusterID}`,
      namespace: tenant,
      labels: { [REPLICATION_DESTINATION_LABEL]: consumer.clusterID },
    },
    spec: { clusterId: provider.clusterID, resourceQuota: { hard: STATIC_OFFER } },
  } as KubeObject);
}

async function staticPeering(consumer: ClusterInfo, provider: ClusterInfo, server: string) {
  await staticOffer(consumer, provider);
  const remote = { clusterID: provider.clusterID, clusterName: provider.name };
  const tenant = tenantNamespaceName(remote);
  await consumer.client.create(Resources.namespaces, {
    metadata: {
      name: tenant,
      labels: { "discovery.liqo.io/cluster-id": remote.clusterID, "discovery.liqo.io/tenant-namespace": "true" },
    },
  });
  await consumer.client.create(ForeignClusterResource, {
    apiVersion: "discovery.liqo.io/v1alpha1",
    kind: "ForeignCluster",
    metadata: { name: remote.clusterName, labels: { "discovery.liqo.io/cluster-id": remote.clusterID } },
    spec: {
      clusterIdentity: remote,
      foreignAuthUrl: server,
      outgoingPeeringEnabled: "Yes",
      incomingPeeringEnabled: "No",
      networkingEnabled: "No",
    },
  } as KubeObject);
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const cond = (type: string, status: string) => ({
    type,
    status,
    lastTransitionTime: now,
    reason: "StaticPeering",
    message: "static peering for the test",
  });
  await consumer.client.mergePatch(
    ForeignClusterResource,
    remote.clusterName,
    undefined,
    {
      status: {
        tenantNamespace: { local: tenant, remote: "" },
        peeringConditions: [
          cond("OutgoingPeering", "Established"),
          cond("IncomingPeering", "None"),
          cond("NetworkStatus", "None"),
          cond("AuthenticationStatus", "Established"),
        ],
      },
    },
    "status",
  );
}

const Vap = {
  group: "admissionregistration.k8s.io",
  version: "v1",
  kind: "ValidatingAdmissionPolicy",
  plural: "validatingadmissionpolicies",
  namespaced: false,
};
const VapBinding = { ...Vap, kind: "ValidatingAdmissionPolicyBinding", plural: "validatingadmissionpolicybindings" };
export const KWOK_DELETE_GUARD = "rig-kwok-deletes-terminating-pods-only";

/**
 * kwok, the rig's fake kubelet, finishes a pod's deletion with a DELETE by name and no UID
 * precondition, from a job queued by the pod's "being deleted" update. Under load that job runs
 * after the ShadowPod controller has already re-created the pod under the same name, so it kills
 * the new pod, whose own deletion queues the next such job: one delete became 2 to 20 re-creations
 * (core/shadowpod/recreate-stress.test.ts). A real kubelet deletes with the pod's UID as
 * precondition; this policy gives kwok the same effect: kwok may delete only a pod that is
 * already being deleted, so a stale job aimed at a live pod is refused.
 */
export async function guardKwokDeletes(client: KubeClient): Promise<void> {
  await client.create(Vap, {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicy",
    metadata: { name: KWOK_DELETE_GUARD },
    spec: {
      failurePolicy: "Fail",
      matchConstraints: {
        resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["DELETE"], resources: ["pods"] }],
      },
      matchConditions: [{ name: "kwok", expression: "request.userInfo.username == 'kwok'" }],
      validations: [
        {
          expression: "has(oldObject.metadata.deletionTimestamp)",
          message:
            "kwok may only finish deleting a pod that is being deleted (a stale delete by name would hit a re-created pod of the same name)",
        },
      ],
    },
  } as KubeObject);
  await client.create(VapBinding, {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicyBinding",
    metadata: { name: KWOK_DELETE_GUARD },
    spec: { policyName: KWOK_DELETE_GUARD, validationActions: ["Deny"] },
  } as KubeObject);
}

/** The `liqo virtual-kubelet` arguments for a provider; `via` replaces kubeconfigs and the kubelet address. */
/**
 * A stand-in for the virtual node in the consumer (the virtual kubelet's node controller makes the
 * real one) and the provider's ShadowPod controller, started: what a pod offloader test runs against.
 */
export async function virtualNodeStandIn(
  consumer: KubeClient,
  provider: KubeClient,
  nodeName: string,
  remoteClusterId: string,
): Promise<ShadowPodController> {
  await consumer.create(Resources.nodes, {
    metadata: {
      name: nodeName,
      labels: { "liqo.io/type": "virtual-node", "liqo.io/remote-cluster-id": remoteClusterId },
    },
  });
  const shadowPods = createShadowPodController({ client: provider });
  await shadowPods.start();
  return shadowPods;
}

export function virtualKubeletArgs(
  r: Pick<OffloadingRig, "rig" | "consumer">,
  p: ClusterInfo,
  kubeletPort: number,
  via: { kubeconfig?: string; remoteKubeconfig?: string; kubeletHost?: string } = {},
): string[] {
  const consumerCluster = r.rig.clusters[0]!;
  const host = via.kubeletHost ?? "127.0.0.1";
  const certs = join(r.rig.dir, "liqo-certs");
  const kubeletCert = sign(
    certs,
    consumerCluster.pki.ca,
    `kubelet-${p.name}`,
    `/CN=liqo-${p.name}`,
    serverExt([`IP:${host}`]),
  );
  return [
    "virtual-kubelet",
    `--kubeconfig=${via.kubeconfig ?? r.consumer.kubeconfig}`,
    `--remote-kubeconfig=${via.remoteKubeconfig ?? p.kubeconfig}`,
    `--cluster-id=${r.consumer.clusterID}`,
    `--remote-cluster-id=${p.clusterID}`,
    `--remote-cluster-name=${p.name}`,
    `--remote-cluster-labels=topology.liqo.io/region=${p.region}`,
    `--resources=${Object.entries(STATIC_OFFER)
      .map(([k, v]) => `${k}=${v}`)
      .join(",")}`,
    `--kubelet-address=${host}:${kubeletPort}`,
    `--kubelet-cert=${kubeletCert.cert}`,
    `--kubelet-key=${kubeletCert.key}`,
    `--client-ca=${consumerCluster.pki.ca.cert}`,
  ];
}

/**
 * Starts the rig: `clusters[0]` consumes, the others provide; regions label every cluster. With
 * `virtualKubelets: false` the caller starts them (e.g. in a network namespace, see virtualKubeletArgs);
 * `nodes` kwok nodes per cluster (110 pods each).
 */
export async function startOffloadingRig(
  clusters: { name: string; region: string }[],
  options: { virtualKubelets?: boolean; nodes?: number } = {},
): Promise<OffloadingRig> {
  const rig = await startTestRig({
    clusters: clusters.length,
    names: clusters.map((c) => c.name),
    nodes: options.nodes ?? 1,
  });
  const infos: ClusterInfo[] = [];
  for (const c of clusters) {
    const client = rig.client(c.name);
    await installCrds(client);
    await guardKwokDeletes(client);
    const id = await ensureClusterIdentity(client, {
      clusterName: c.name,
      clusterLabels: { "topology.liqo.io/region": c.region },
    });
    infos.push({
      ...c,
      clusterID: id.clusterId,
      client,
      kubeconfig: rig.clusters.find((x) => x.name === c.name)!.kubeconfig,
    });
  }
  const [consumer, ...providers] = infos as [ClusterInfo, ...ClusterInfo[]];
  const consumerCluster = rig.clusters[0]!;
  const certs = join(rig.dir, "liqo-certs");
  mkdirSync(certs, { recursive: true });
  const webhookCert = sign(certs, consumerCluster.pki.ca, "webhook", "/CN=liqo-webhook", serverExt(["IP:127.0.0.1"]));
  const started = new Map<string, { args: string[]; pid: number }>();
  const role = async (name: string, args: string[]) => {
    started.set(name, { args, pid: (await startRole(rig, name, args)).pid });
  };

  for (const p of providers) {
    await role(`${p.name}/controller-manager`, [
      "controller-manager",
      `--kubeconfig=${p.kubeconfig}`,
      `--cluster-id=${p.clusterID}`,
      `--cluster-name=${p.name}`,
      "--controllers=shadowpod",
    ]);
    await staticPeering(consumer, p, rig.clusters.find((x) => x.name === p.name)!.server);
  }
  await role(`${consumer.name}/controller-manager`, [
    "controller-manager",
    `--kubeconfig=${consumer.kubeconfig}`,
    `--cluster-id=${consumer.clusterID}`,
    `--cluster-name=${consumer.name}`,
    "--controllers=namespaceoffloading",
  ]);
  const webhookPort = await freePort();
  await role(`${consumer.name}/webhook`, [
    "webhook",
    `--kubeconfig=${consumer.kubeconfig}`,
    `--tls-cert-file=${webhookCert.cert}`,
    `--tls-key-file=${webhookCert.key}`,
    `--ca-file=${consumerCluster.pki.ca.cert}`,
    `--address=127.0.0.1:${webhookPort}`,
    `--register-url=https://127.0.0.1:${webhookPort}`,
  ]);
  for (const p of providers) {
    if (options.virtualKubelets === false) break;
    await role(
      `${consumer.name}/virtual-kubelet-${p.name}`,
      virtualKubeletArgs({ rig, consumer }, p, await freePort()),
    );
  }
  const kubectlBin = join(rig.bin, "kubectl");
  return {
    rig,
    consumer,
    providers,
    mapName: (p) => uniqueName({ clusterID: p.clusterID, clusterName: p.name }),
    liqoctl: (...args) =>
      run([
        process.execPath,
        join(import.meta.dir, "../../cli/main.ts"),
        ...args,
        `--kubeconfig=${consumer.kubeconfig}`,
      ]),
    kubectl: (c, ...args) => run([kubectlBin, `--kubeconfig=${c.kubeconfig}`, ...args]),
    roles: () => [...started.keys()],
    async killAndRestart(name) {
      const r = started.get(name);
      if (!r) throw new Error(`no role ${name} in this rig (roles: ${[...started.keys()].join(", ")})`);
      killGroupNow(r.pid);
      while (isAlive(r.pid)) await Bun.sleep(20);
      await role(name, r.args);
    },
  };
}
