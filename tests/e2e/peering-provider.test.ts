// Resource negotiation between two rig clusters, provider side and the CRD replicator: rome
// (consumer) holds a real peer identity on milan (provider) and runs the replicator with it;
// milan runs the ResourceRequest controller. Request → offer → acceptance → withdrawal → deletion
// and revocation, with conflicts and a restart of milan's API server on the way.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ForeignClusterResource,
  installCrds,
  NetworkConfigResource,
  ResourceOfferResource,
  ResourceRequestResource,
  type ForeignCluster,
  type NetworkConfig,
  type ResourceOffer,
  type ResourceRequest,
} from "../../core/apis/index.ts";
import { DISCOVERY_CLUSTER_ID_LABEL, TENANT_NAMESPACE_LABEL } from "../../core/apis/labels.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { createRegistry } from "../../core/metrics/index.ts";
import { tenantNamespaceName } from "../../core/offloading/names.ts";
import {
  ensurePeeringRbac,
  issueIdentity,
  peerKubeconfig,
  revokeIdentity,
  type IssuedIdentity,
} from "../../core/peering/auth/index.ts";
import { ensureClusterIdentity, type LocalClusterIdentity } from "../../core/peering/identity.ts";
import { createCrdReplicator, type CrdReplicator } from "../../core/peering/replicator/index.ts";
import {
  createResourceRequestController,
  TENANT_FINALIZER,
  type ResourceRequestController,
} from "../../core/peering/sharing/index.ts";
import { fakeNode, restartApiServer } from "../rig/cluster.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { statusOf } from "../support/status.ts";

let rig: TestRig;
let rome: KubeClient;
let milan: KubeClient;
let peer: KubeClient;
let romeId: LocalClusterIdentity;
let milanId: LocalClusterIdentity;
let issued: IssuedIdentity;
let localNs: string;
let replicator: CrdReplicator;
let controller: ResourceRequestController;
const registry = createRegistry();
/** Added to the provider controller's clock, to reach the withdrawal timeout without waiting for it. */
let clockSkewMs = 0;
const dir = mkdtempSync(join(tmpdir(), "peering-provider-"));
const T = { timeoutMs: 90_000, intervalMs: 200 };

const labelsOf = (o: KubeObject | undefined) => o?.metadata.labels ?? {};
const offerOn = (c: KubeClient, ns: string) => c.find<ResourceOffer>(ResourceOfferResource, "milan", ns);
const requestName = () => romeId.clusterId;
const offerWrites = async () =>
  Number(/^liqo_resourceoffer_writes_total (\d+)$/m.exec(await registry.expose())?.[1] ?? "0");

const status = statusOf;

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  rome = rig.client("rome");
  milan = rig.client("milan");
  await Promise.all([installCrds(rome), installCrds(milan)]);
  romeId = await ensureClusterIdentity(rome, { clusterName: "rome" });
  milanId = await ensureClusterIdentity(milan, {
    clusterName: "milan",
    clusterLabels: { "topology.liqo.io/region": "north" },
  });
  await ensurePeeringRbac(milan);
  issued = await issueIdentity(milan, { clusterID: romeId.clusterId, clusterName: "rome" });
  const file = join(dir, "peer.kubeconfig");
  writeFileSync(
    file,
    peerKubeconfig({
      clusterName: "milan",
      apiServerUrl: rig.clusters[1]!.server,
      apiServerCa: readFileSync(rig.clusters[1]!.pki.ca.cert, "utf8"),
      token: issued.token,
      namespace: issued.namespace,
      userName: "liqo-rome",
    }),
  );
  peer = createKubeClient({ kubeconfig: file });
  // The consumer's own tenant namespace for milan, as its ForeignCluster controller makes it.
  localNs = tenantNamespaceName({ clusterID: milanId.clusterId, clusterName: "milan" });
  await rome.create(Resources.namespaces, {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: {
      name: localNs,
      labels: { [DISCOVERY_CLUSTER_ID_LABEL]: milanId.clusterId, [TENANT_NAMESPACE_LABEL]: "true" },
    },
  });
  // RBAC takes a moment to reach the authorizer's cache.
  await waitFor(
    "the peer identity to list its tenant namespace",
    async () => (await status(peer.list(ResourceRequestResource, { namespace: issued.namespace }))) === 200,
    T,
  );

  controller = createResourceRequestController({
    client: milan,
    clusterIdentity: milanId,
    sharingPercentage: 50,
    debounceMs: 200,
    withdrawalTimeoutMs: 60_000,
    revokeGraceMs: 500,
    registry,
    now: () => Date.now() + clockSkewMs,
  });
  replicator = createCrdReplicator({
    local: rome,
    remote: peer,
    localClusterId: romeId.clusterId,
    remoteClusterId: milanId.clusterId,
    localTenantNamespace: localNs,
    remoteTenantNamespace: issued.namespace,
    registry,
    conflictRecheckMs: 1_000,
  });
  await Promise.all([controller.start(), replicator.start()]);
}, 600_000);

afterAll(async () => {
  await replicator?.stop();
  await controller?.stop();
  await rig?.down();
  rmSync(dir, { recursive: true, force: true });
});

describe("a consumer's ResourceRequest", () => {
  test("is pushed to the provider's tenant namespace, marked as a replica, and gets the provider's finalizer", async () => {
    expect(replicator.synced()).toBe(true);
    await rome.create(ResourceRequestResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ResourceRequest",
      metadata: {
        name: requestName(),
        namespace: localNs,
        labels: { "liqo.io/replication": "true", "liqo.io/remoteID": milanId.clusterId },
      },
      spec: {
        clusterIdentity: { clusterID: romeId.clusterId, clusterName: "rome" },
        authUrl: "https://127.0.0.1:30721",
      },
    });
    const remote = await waitFor(
      "the request on milan with the tenant finalizer",
      async () => {
        const rr = await milan.find<ResourceRequest>(ResourceRequestResource, requestName(), issued.namespace);
        return rr?.metadata.finalizers?.includes(TENANT_FINALIZER) ? rr : undefined;
      },
      T,
    );
    expect(labelsOf(remote)["liqo.io/replicated"]).toBe("true");
    expect(labelsOf(remote)["liqo.io/originID"]).toBe(romeId.clusterId);
    expect(labelsOf(remote)["liqo.io/replication"]).toBeUndefined();
    expect(remote.spec.clusterIdentity.clusterName).toBe("rome");
  });

  test("the provider's answer in the request's status is copied back to the consumer", async () => {
    await waitFor(
      "offerState Created on rome's request",
      async () =>
        (await rome.get<ResourceRequest>(ResourceRequestResource, requestName(), localNs)).status?.offerState ===
        "Created",
      T,
    );
  });

  test("the offer reaches the consumer with 50% of milan's free allocatable and milan's labels", async () => {
    // Nothing runs on milan's worker yet, so free = allocatable (7800m, 31Gi, 110, 95Gi).
    const busy = (await milan.list(Resources.pods)).items.filter((p) => (p.spec as { nodeName?: string })?.nodeName);
    expect(busy.map((p) => p.metadata.name)).toEqual([]);
    const offer = await waitFor("milan's offer on rome", () => offerOn(rome, localNs), T);
    expect(offer.spec.resourceQuota?.hard).toEqual({
      cpu: "3900m",
      memory: "15872Mi",
      pods: "55",
      "ephemeral-storage": "48640Mi",
    });
    expect(offer.spec.clusterId).toBe(milanId.clusterId);
    expect(offer.spec.labels).toEqual({ "topology.liqo.io/region": "north" });
    expect(labelsOf(offer)["liqo.io/replicated"]).toBe("true");
    expect(labelsOf(offer)["liqo.io/originID"]).toBe(milanId.clusterId);
  });

  test("the provider records an incoming ForeignCluster for the consumer, IncomingPeering Pending", async () => {
    const fc = await waitFor(
      "ForeignCluster rome on milan",
      async () => {
        const f = await milan.find<ForeignCluster>(ForeignClusterResource, "rome");
        return f?.status?.peeringConditions?.find((c) => c.type === "IncomingPeering")?.status === "Pending"
          ? f
          : undefined;
      },
      T,
    );
    expect(fc.spec.clusterIdentity).toEqual({ clusterID: romeId.clusterId, clusterName: "rome" });
    expect(labelsOf(fc)["discovery.liqo.io/discovery-type"]).toBe("IncomingPeering");
    expect(fc.status?.tenantNamespace?.local).toBe(issued.namespace);
  });
});

describe("the offer follows the provider's nodes and pods", () => {
  const cpuOnRome = async () => (await offerOn(rome, localNs))?.spec.resourceQuota?.hard?.cpu;

  test("a second node doubles it", async () => {
    await milan.create(Resources.nodes, fakeNode(rig.clusters[1]!, 1));
    await waitFor("the offer to grow to 7800m", async () => (await cpuOnRome()) === "7800m", T);
  });

  test("a pod's requests shrink it; the consumer's own offloaded pods do not", async () => {
    const node = "milan-worker-1";
    const pod = (name: string, labels: Record<string, string> = {}) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "default", labels },
      spec: {
        nodeName: node,
        containers: [{ name: "c", image: "nginx", resources: { requests: { cpu: "2", memory: "1Gi" } } }],
      },
    });
    const writesBefore = await offerWrites();
    await milan.create(
      Resources.pods,
      pod("mine", { "liqo.io/managed-by": "shadowpod", "liqo.io/origin-cluster-id": romeId.clusterId }),
    );
    await milan.create(Resources.pods, pod("local-work"));
    await waitFor("the offer to shrink by half of 2 cpu", async () => (await cpuOnRome()) === "6800m", T);
    await controller.idle();
    // Many pod events (created, scheduled, Running), one change of amounts: one write.
    expect(await offerWrites()).toBe(writesBefore + 1);
    const hard = (await offerOn(rome, localNs))!.spec.resourceQuota!.hard!;
    expect(hard.memory).toBe("31232Mi"); // (62Gi - 1Gi) / 2
    expect(hard.pods).toBe("109"); // (220 - 1) / 2, rounded down
  });
});

describe("status flows back to the side that did not write it", () => {
  test("accepting the offer on the consumer shows on the provider, and the incoming peering is Established", async () => {
    await rome.mergePatch(
      ResourceOfferResource,
      "milan",
      localNs,
      { status: { phase: "Accepted", virtualKubeletStatus: "Created" } },
      "status",
    );
    await waitFor(
      "Accepted on milan's offer",
      async () => (await offerOn(milan, issued.namespace))?.status?.phase === "Accepted",
      T,
    );
    await waitFor(
      "IncomingPeering Established on milan",
      async () =>
        (await milan.get<ForeignCluster>(ForeignClusterResource, "rome")).status?.peeringConditions?.find(
          (c) => c.type === "IncomingPeering",
        )?.status === "Established",
      T,
    );
  });

  test("NetworkConfigs go both ways, each status written by its receiver", async () => {
    const nc = (name: string, ns: string, to: LocalClusterIdentity) => ({
      apiVersion: "net.liqo.io/v1alpha1",
      kind: "NetworkConfig",
      metadata: {
        name,
        namespace: ns,
        labels: {
          "liqo.io/replication": "true",
          "liqo.io/remoteID": to.clusterId,
          "liqo.io/ownership": "netcfgCreator",
        },
      },
      spec: {
        cluster: { clusterID: to.clusterId, clusterName: to.clusterName },
        podCIDR: "10.200.0.0/16",
        externalCIDR: "10.201.0.0/16",
        endpointIP: "127.0.0.1",
        backendType: "wireguard",
        backend_config: { port: "51820" },
      },
    });
    await rome.create(NetworkConfigResource, nc("net-config-to-milan", localNs, milanId));
    await milan.create(NetworkConfigResource, nc("net-config-to-rome", issued.namespace, romeId));
    // Each receiver processes the other's NetworkConfig in its own cluster.
    const received = await waitFor(
      "rome's NetworkConfig on milan",
      () => milan.find<NetworkConfig>(NetworkConfigResource, "net-config-to-milan", issued.namespace),
      T,
    );
    expect(labelsOf(received)["liqo.io/originID"]).toBe(romeId.clusterId);
    expect(labelsOf(received)["liqo.io/ownership"]).toBe("netcfgCreator");
    await milan.mergePatch(
      NetworkConfigResource,
      "net-config-to-milan",
      issued.namespace,
      { status: { processed: true, podCIDRNAT: "10.210.0.0/16" } },
      "status",
    );
    await waitFor(
      "milan's NetworkConfig on rome",
      () => rome.find(NetworkConfigResource, "net-config-to-rome", localNs),
      T,
    );
    await rome.mergePatch(
      NetworkConfigResource,
      "net-config-to-rome",
      localNs,
      { status: { processed: true, podCIDRNAT: "None" } },
      "status",
    );
    await waitFor(
      "milan's status on rome's NetworkConfig",
      async () =>
        (await rome.get<NetworkConfig>(NetworkConfigResource, "net-config-to-milan", localNs)).status?.podCIDRNAT ===
        "10.210.0.0/16",
      T,
    );
    await waitFor(
      "rome's status on milan's NetworkConfig",
      async () =>
        (await milan.get<NetworkConfig>(NetworkConfigResource, "net-config-to-rome", issued.namespace)).status
          ?.processed === true,
      T,
    );
  });
});

describe("changes to the source", () => {
  test("a label removed from the source is removed from the copy", async () => {
    await rome.mergePatch(NetworkConfigResource, "net-config-to-milan", localNs, {
      metadata: { labels: { "liqo.io/ownership": null, extra: "1" } },
    });
    await waitFor(
      "the copy's labels to follow",
      async () => {
        const l = labelsOf(await milan.get(NetworkConfigResource, "net-config-to-milan", issued.namespace));
        return l.extra === "1" && !("liqo.io/ownership" in l) && l["liqo.io/originID"] === romeId.clusterId;
      },
      T,
    );
  });
});

describe("objects the replicator did not make", () => {
  test("a foreign object of the same name is never touched: the conflict is an Event and a metric", async () => {
    const theirs = await milan.create<ResourceRequest>(ResourceRequestResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ResourceRequest",
      metadata: { name: "taken", namespace: issued.namespace, labels: { owner: "someone-else" } },
      spec: { clusterIdentity: { clusterID: "someone", clusterName: "someone" }, authUrl: "https://10.0.0.1:443" },
    });
    const ours = () =>
      rome.create(ResourceRequestResource, {
        apiVersion: "discovery.liqo.io/v1alpha1",
        kind: "ResourceRequest",
        metadata: {
          name: "taken",
          namespace: localNs,
          labels: { "liqo.io/replication": "true", "liqo.io/remoteID": milanId.clusterId },
        },
        spec: {
          clusterIdentity: { clusterID: romeId.clusterId, clusterName: "rome" },
          authUrl: "https://127.0.0.1:30721",
        },
      });
    await ours();
    await waitFor(
      "the conflict to be reported",
      () => replicator.conflicts().includes("push-resourcerequests/taken"),
      T,
    );
    const event = await waitFor(
      "a ReplicationConflict Event on rome's request",
      async () =>
        (await rome.list(Resources.events, { namespace: localNs })).items.find(
          (e) => e.reason === "ReplicationConflict" && (e.involvedObject as { name: string }).name === "taken",
        ),
      T,
    );
    expect(event.message).toContain("delete or rename it");
    expect(await registry.expose()).toContain(
      'liqo_crd_replicator_conflicts_total{remote_cluster_id="' +
        milanId.clusterId +
        '",channel="push-resourcerequests"} 1',
    );
    await replicator.idle();
    expect((await milan.get(ResourceRequestResource, "taken", issued.namespace)).metadata.resourceVersion).toBe(
      theirs.metadata.resourceVersion!,
    );

    // Deleting ours must not delete theirs either.
    await rome.delete(ResourceRequestResource, "taken", localNs);
    await waitFor("the conflict to clear", () => !replicator.conflicts().includes("push-resourcerequests/taken"), T);
    await replicator.idle();
    const after = await milan.get(ResourceRequestResource, "taken", issued.namespace);
    expect(after.metadata.resourceVersion).toBe(theirs.metadata.resourceVersion!);
    expect(after.metadata.uid).toBe(theirs.metadata.uid!);

    // Once the name is free, the held-back object replicates (the recheck finds it), and its deletion follows.
    await ours();
    await waitFor("the conflict again", () => replicator.conflicts().includes("push-resourcerequests/taken"), T);
    await milan.delete(ResourceRequestResource, "taken", issued.namespace);
    const replica = await waitFor(
      "our request replicated under the freed name",
      async () => {
        const r = await milan.find(ResourceRequestResource, "taken", issued.namespace);
        return labelsOf(r)["liqo.io/originID"] === romeId.clusterId ? r : undefined;
      },
      T,
    );
    expect(replica.metadata.uid).not.toBe(theirs.metadata.uid!);
    expect(replicator.conflicts()).toEqual([]);
    await rome.delete(ResourceRequestResource, "taken", localNs);
    await waitFor(
      "the replica deleted with its source",
      async () => !(await milan.find(ResourceRequestResource, "taken", issued.namespace)),
      T,
    );
  });
});

describe("requests the provider does not serve", () => {
  test("a replicated-looking request outside a tenant namespace gets an Event and no offer", async () => {
    await milan.create(ResourceRequestResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ResourceRequest",
      metadata: {
        name: "stray",
        namespace: "default",
        labels: { "liqo.io/replicated": "true", "liqo.io/originID": romeId.clusterId },
      },
      spec: {
        clusterIdentity: { clusterID: romeId.clusterId, clusterName: "rome" },
        authUrl: "https://127.0.0.1:30721",
      },
    });
    const event = await waitFor(
      "a NotInTenantNamespace Event",
      async () =>
        (await milan.list(Resources.events, { namespace: "default" })).items.find(
          (e) => e.reason === "NotInTenantNamespace",
        ),
      T,
    );
    expect(event.message).toContain("default is not a tenant namespace");
    await controller.idle();
    expect(await offerOn(milan, "default")).toBeUndefined();
    await milan.delete(ResourceRequestResource, "stray", "default");
  });

  test("a request claiming another cluster than the one its tenant namespace belongs to is refused: no offer, no finalizer", async () => {
    const parisId = "5d7c3a52-7f0e-4f51-9a3e-0a4c1d2b3e4f";
    const paris = await issueIdentity(milan, { clusterID: parisId, clusterName: "paris" });
    await milan.create(ResourceRequestResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ResourceRequest",
      metadata: {
        name: parisId,
        namespace: paris.namespace,
        labels: { "liqo.io/replicated": "true", "liqo.io/originID": parisId },
      },
      spec: {
        clusterIdentity: { clusterID: romeId.clusterId, clusterName: "rome" },
        authUrl: "https://127.0.0.1:30721",
      },
    });
    const event = await waitFor(
      "a ClusterIdentityMismatch Event",
      async () =>
        (await milan.list(Resources.events, { namespace: paris.namespace })).items.find(
          (e) => e.reason === "ClusterIdentityMismatch",
        ),
      T,
    );
    expect(event.message).toContain(`tenant namespace of cluster ${parisId}`);
    await controller.idle();
    expect(await offerOn(milan, paris.namespace)).toBeUndefined();
    expect((await milan.get(ResourceRequestResource, parisId, paris.namespace)).metadata.finalizers ?? []).toEqual([]);
    await revokeIdentity(milan, parisId);
  });
});

describe("faults", () => {
  test("milan's API server restarting mid-way: changes made meanwhile converge, with no duplicates", async () => {
    await restartApiServer(rig.clusters[1]!, rig.bin);
    // Made while the replicator's watches on milan reconnect.
    await rome.mergePatch(NetworkConfigResource, "net-config-to-milan", localNs, { spec: { endpointIP: "127.0.0.2" } });
    await waitFor(
      "the new endpoint on milan",
      async () =>
        (await milan.get<NetworkConfig>(NetworkConfigResource, "net-config-to-milan", issued.namespace)).spec
          .endpointIP === "127.0.0.2",
      T,
    );
    await replicator.idle();
    const names = async (c: KubeClient, res: typeof ResourceRequestResource, ns: string) =>
      (await c.list(res, { namespace: ns })).items.map((o) => o.metadata.name).sort();
    expect(await names(milan, ResourceRequestResource, issued.namespace)).toEqual([requestName()]);
    expect(await names(milan, ResourceOfferResource, issued.namespace)).toEqual(["milan"]);
    expect(await names(milan, NetworkConfigResource, issued.namespace)).toEqual([
      "net-config-to-milan",
      "net-config-to-rome",
    ]);
    expect(await names(rome, ResourceOfferResource, localNs)).toEqual(["milan"]);
    expect(await names(rome, NetworkConfigResource, localNs)).toEqual(["net-config-to-milan", "net-config-to-rome"]);
  });

  test("a pulled copy deleted on the consumer comes back (the provider's object is the truth)", async () => {
    await rome.delete(NetworkConfigResource, "net-config-to-rome", localNs);
    await waitFor("the copy back on rome", () => rome.find(NetworkConfigResource, "net-config-to-rome", localNs), T);
  });
});

describe("the end of the peering", () => {
  test("withdrawal: the offer is withdrawn, then removed once the consumer's virtual kubelet is gone", async () => {
    await rome.mergePatch(ResourceRequestResource, requestName(), localNs, {
      spec: { withdrawalTimestamp: new Date().toISOString().replace(/\.\d+Z$/, "Z") },
    });
    await waitFor(
      "the withdrawal on rome's copy of the offer",
      async () => !!(await offerOn(rome, localNs))?.spec.withdrawalTimestamp,
      T,
    );
    await waitFor(
      "IncomingPeering Disconnecting on milan",
      async () =>
        (await milan.get<ForeignCluster>(ForeignClusterResource, "rome")).status?.peeringConditions?.find(
          (c) => c.type === "IncomingPeering",
        )?.status === "Disconnecting",
      T,
    );
    // Still used: the offer stays.
    expect(await offerOn(milan, issued.namespace)).toBeDefined();
    await rome.mergePatch(
      ResourceOfferResource,
      "milan",
      localNs,
      { status: { virtualKubeletStatus: "None" } },
      "status",
    );
    await waitFor("the offer gone from milan", async () => !(await offerOn(milan, issued.namespace)), T);
    await waitFor("the offer gone from rome", async () => !(await offerOn(rome, localNs)), T);
    await waitFor(
      "IncomingPeering None on milan",
      async () =>
        (await milan.get<ForeignCluster>(ForeignClusterResource, "rome")).status?.peeringConditions?.find(
          (c) => c.type === "IncomingPeering",
        )?.status === "None",
      T,
    );
    await waitFor(
      "offerState None on rome's request",
      async () =>
        (await rome.get<ResourceRequest>(ResourceRequestResource, requestName(), localNs)).status?.offerState ===
        "None",
      T,
    );
  });

  test("re-asking after a withdrawal brings a fresh offer; a consumer that never lets go is cut off after the timeout", async () => {
    await rome.mergePatch(ResourceRequestResource, requestName(), localNs, { spec: { withdrawalTimestamp: null } });
    const offer = await waitFor(
      "a fresh offer on rome",
      async () => {
        const o = await offerOn(rome, localNs);
        return o && !o.spec.withdrawalTimestamp ? o : undefined;
      },
      T,
    );
    expect(offer.spec.resourceQuota?.hard?.cpu).toBe("6800m");
    await rome.mergePatch(
      ResourceOfferResource,
      "milan",
      localNs,
      { status: { phase: "Accepted", virtualKubeletStatus: "Created" } },
      "status",
    );
    await waitFor(
      "IncomingPeering Established again",
      async () =>
        (await milan.get<ForeignCluster>(ForeignClusterResource, "rome")).status?.peeringConditions?.find(
          (c) => c.type === "IncomingPeering",
        )?.status === "Established",
      T,
    );
    await waitFor(
      "Created on milan's offer",
      async () => (await offerOn(milan, issued.namespace))?.status?.virtualKubeletStatus === "Created",
      T,
    );

    await rome.mergePatch(ResourceRequestResource, requestName(), localNs, {
      spec: { withdrawalTimestamp: new Date().toISOString().replace(/\.\d+Z$/, "Z") },
    });
    await waitFor(
      "the withdrawal on milan's offer",
      async () => !!(await offerOn(milan, issued.namespace))?.spec.withdrawalTimestamp,
      T,
    );
    await controller.handle(issued.namespace).catch(() => undefined); // still within the timeout: it waits
    expect(await offerOn(milan, issued.namespace)).toBeDefined();
    clockSkewMs = 61_000;
    // Handled here rather than waiting for the queue's retry; the queue may be handling the same
    // namespace meanwhile (a 409 on a stale version), so repeat until the offer is gone.
    await waitFor(
      "the offer cut off on milan",
      async () => {
        await controller.handle(issued.namespace).catch(() => undefined);
        return !(await offerOn(milan, issued.namespace));
      },
      T,
    );
    const event = await waitFor(
      "an OfferWithdrawalTimeout Event",
      async () =>
        (await milan.list(Resources.events, { namespace: issued.namespace })).items.find(
          (e) => e.reason === "OfferWithdrawalTimeout",
        ),
      T,
    );
    expect(event.message).toContain("still reported Created");
    await waitFor("the offer gone from rome", async () => !(await offerOn(rome, localNs)), T);
    clockSkewMs = 0;
  });

  test("deleting the request removes the offer on both sides, the provider's copy, and revokes the consumer's identity", async () => {
    await rome.mergePatch(ResourceRequestResource, requestName(), localNs, { spec: { withdrawalTimestamp: null } });
    await waitFor("an offer on rome again", () => offerOn(rome, localNs), T);
    await rome.delete(ResourceRequestResource, requestName(), localNs);
    // The provider deletes the offer before it revokes, so the consumer's replicator still sees it go.
    await waitFor("the offer's copy gone from rome", async () => !(await offerOn(rome, localNs)), T);
    await waitFor(
      "the request gone from milan",
      async () => {
        try {
          return !(await milan.find(ResourceRequestResource, requestName(), issued.namespace));
        } catch (err) {
          return err instanceof KubeApiError && err.notFound;
        }
      },
      T,
    );
    await waitFor(
      "the peer identity refused",
      async () =>
        [401, 403].includes(await status(peer.list(ResourceRequestResource, { namespace: issued.namespace }))),
      T,
    );
    const ns = await milan.find(Resources.namespaces, issued.namespace);
    expect(!ns || !!ns.metadata.deletionTimestamp).toBe(true);
  });
});
