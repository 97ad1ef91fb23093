// Several virtual nodes per peering (VirtualNode, as in Liqo 1.x) on a real rig: rome peers with
// milan as users do (liqoctl), then VirtualNodes take shares of milan's offer. Checked: each runs
// as its own Node with its own Lease, labels and taints, and the peering's node keeps the rest;
// pods scheduled on it run in milan with its nodeSelector; a node asking for more than is left, a
// taken name, an unknown provider and a bad spec are refused with a reason and nothing else
// changes; deleting one drains it (its pods rescheduled elsewhere) before its Node goes; all of a
// peering's nodes share one virtual kubelet, so reflection happens once.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  ForeignClusterResource,
  ShadowPodResource,
  VirtualNodeResource,
  type VirtualNodeCr,
} from "../../core/apis/index.ts";
import { parseQuantity } from "../../core/kube/quantity.ts";
import { NamespaceMappingStrategy } from "../../core/apis/index.ts";
import { remoteNamespaceName, tenantNamespaceName } from "../../core/offloading/names.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { watchWrites } from "../support/watch-writes.ts";
import { generatedPeerCommand, liqoctl, startLiqoSide, type LiqoSide } from "./peering-rig.ts";

let rig: TestRig;
let rome: LiqoSide;
let milan: LiqoSide;
let tenant: string;
let remoteNs: string;
let offer: Record<string, string>;
const T = { timeoutMs: 120_000, intervalMs: 250 };

type Node = KubeObject & {
  spec?: { taints?: { key: string; value?: string; effect: string }[]; unschedulable?: boolean };
  status?: { capacity?: Record<string, string>; conditions?: { type: string; status: string }[] };
};
// biome-ignore lint/suspicious/noExplicitAny: pod specs read back from the clusters, asserted on a few fields
type Pod = KubeObject & { spec: Record<string, any>; status?: Record<string, any> };
type Vn = VirtualNodeCr & KubeObject;

const node = (name: string) => rome.client.find<Node>(Resources.nodes, name);
const vnReady = (v: Vn | undefined) => v?.status?.conditions?.find((c) => c.type === "Ready");
const half = (q: string, what: string) => String(parseQuantity(q, what) / 2000n);
const milli = (q: string | undefined): bigint => (q === undefined ? -1n : parseQuantity(q));

function virtualNode(name: string, spec: Record<string, unknown>, namespace = tenant): KubeObject {
  return {
    apiVersion: "virtualkubelet.liqo.io/v1alpha1",
    kind: "VirtualNode",
    metadata: { name, namespace },
    spec: { clusterID: milan.identity.clusterId, ...spec },
  };
}

/** Waits for the VirtualNode's Ready condition to have `reason`, and returns it. */
const condition = (name: string, reason: string, namespace = tenant) =>
  waitFor(
    `VirtualNode ${namespace}/${name} to say ${reason}`,
    async () => {
      const c = vnReady(await rome.client.find<Vn>(VirtualNodeResource, name, namespace));
      return c?.reason === reason ? c : undefined;
    },
    { ...T, describe: async () => rome.client.find(VirtualNodeResource, name, namespace) },
  );

const pod = (name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "vn-demo", labels: { app: name } },
  spec: {
    containers: [{ name: "c", image: "nginx", resources: { requests: { cpu: "100m" } } }],
    tolerations: [
      { key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" },
      { key: "pool", operator: "Exists", effect: "NoSchedule" },
    ],
    ...spec,
  },
});

/** A Deployment of `replicas` pods like pod() makes, with `spec` added to their spec. */
const deployment = (name: string, replicas: number, spec: Record<string, unknown>): KubeObject =>
  ({
    metadata: { name, namespace: "vn-demo" },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { ...(pod(name, {}) as Pod).spec, ...spec } },
    },
  }) as KubeObject;

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  [rome, milan] = await Promise.all([startLiqoSide(rig, "rome"), startLiqoSide(rig, "milan")]);
  // milan's node joins pool blue: a VirtualNode's nodeSelector sends its pods there.
  const [milanNode] = (await milan.client.list<Node>(Resources.nodes)).items;
  await milan.client.mergePatch(Resources.nodes, milanNode!.metadata.name!, undefined, {
    metadata: { labels: { pool: "blue" } },
  });
  const r = await liqoctl(rome, ...(await generatedPeerCommand(milan)), "--timeout=180s");
  expect(r.code).toBe(0);
  const own = await waitFor("liqo-milan Ready with the offer", async () => {
    const n = await node("liqo-milan");
    return n?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? n : undefined;
  });
  offer = { ...own.status!.capacity! };
  tenant = tenantNamespaceName({ clusterID: milan.identity.clusterId, clusterName: "milan" });
  remoteNs = remoteNamespaceName("vn-demo", NamespaceMappingStrategy.DefaultName, {
    clusterID: rome.identity.clusterId,
    clusterName: "rome",
  });
  await rome.client.create(Resources.namespaces, { metadata: { name: "vn-demo" } });
  const off = await liqoctl(rome, "offload", "namespace", "vn-demo", "--timeout=120s");
  expect(off.code).toBe(0);
}, 600_000);

afterAll(async () => {
  await rome?.stop();
  await milan?.stop();
  await rig?.down();
});

describe("VirtualNodes of one peering", () => {
  test("a VirtualNode runs as its own Node with its share, labels, taints and Lease; the peering's node keeps the rest", async () => {
    const cpu = half(offer.cpu!, "cpu");
    await rome.client.create(
      VirtualNodeResource,
      virtualNode("milan-blue", {
        resourceQuota: { hard: { cpu, pods: "10" } },
        labels: { pool: "blue" },
        taints: [{ key: "pool", value: "blue", effect: "NoSchedule" }],
        offloadingPatch: { nodeSelector: { pool: "blue" } },
      }),
    );
    const c = await condition("milan-blue", "NodeReady");
    expect(c.status).toBe("True");
    expect(c.message).toContain(`node milan-blue is Ready with cpu=${cpu},pods=10 of milan's offer`);
    // The node lifecycle controller lifts its not-ready taint a moment after the node turns Ready.
    const n = await waitFor("milan-blue without the not-ready taint", async () => {
      const got = await node("milan-blue");
      return got && !got.spec?.taints?.some((t) => t.key === "node.kubernetes.io/not-ready") ? got : undefined;
    });
    expect(n.metadata.labels).toMatchObject({
      pool: "blue",
      "liqo.io/type": "virtual-node",
      "liqo.io/remote-cluster-id": milan.identity.clusterId,
    });
    expect(n.spec?.taints?.map((t) => `${t.key}=${t.value}:${t.effect}`).sort()).toEqual([
      "pool=blue:NoSchedule",
      "virtual-node.liqo.io/not-allowed=true:NoExecute",
    ]);
    expect(milli(n.status?.capacity?.cpu)).toBe(milli(cpu));
    expect(n.status?.capacity?.pods).toBe("10");
    await waitFor("milan-blue's own Lease", () => rome.client.find(Resources.leases, "milan-blue", "kube-node-lease"));
    const own = await waitFor("liqo-milan to keep the rest of the offer", async () => {
      const o = await node("liqo-milan");
      return milli(o?.status?.capacity?.cpu) === milli(offer.cpu!) - milli(cpu)! ? o : undefined;
    });
    expect(milli(own.status?.capacity?.pods)).toBe(milli(offer.pods!) - 10_000n);
    // One virtual kubelet for the peering: both nodes are its nodes.
    const [peer] = rome.fc.peers();
    expect(peer?.node).toBe("liqo-milan");
    expect(peer?.extraNodes?.map((x) => x.name)).toEqual(["milan-blue"]);
  }, 180_000);

  test("a pod scheduled on it runs in milan with the node's nodeSelector, and its status comes back", async () => {
    await rome.client.create(Resources.pods, pod("on-blue", { nodeSelector: { pool: "blue" } }));
    const local = await waitFor("on-blue Running", async () => {
      const p = await rome.client.find<Pod>(Resources.pods, "on-blue", "vn-demo");
      return p?.status?.phase === "Running" ? p : undefined;
    });
    expect(local.spec.nodeName).toBe("milan-blue");
    // biome-ignore lint/suspicious/noExplicitAny: pod specs read back from the clusters, asserted on a few fields
    const shadow = (await milan.client.find<KubeObject & { spec: { pod: Record<string, any> } }>(
      ShadowPodResource,
      "on-blue",
      remoteNs,
    ))!;
    expect(shadow.spec.pod.nodeSelector).toEqual({ pool: "blue" });
    const remote = (await milan.client.find<Pod>(Resources.pods, "on-blue", remoteNs))!;
    expect(remote.spec.nodeSelector).toEqual({ pool: "blue" });
    // The peering's own node offloads too, without the patch.
    await rome.client.create(Resources.pods, pod("on-own", { nodeName: "liqo-milan" }));
    await waitFor("on-own Running", async () => {
      const p = await rome.client.find<Pod>(Resources.pods, "on-own", "vn-demo");
      return p?.status?.phase === "Running" ? p : undefined;
    });
    expect((await milan.client.find<Pod>(Resources.pods, "on-own", remoteNs))!.spec.nodeSelector).toBeUndefined();
  }, 180_000);

  test("pods spread across the peering's virtual nodes all run in milan's one twin namespace", async () => {
    await rome.client.create(
      Resources.deployments,
      deployment("spread", 4, {
        topologySpreadConstraints: [
          {
            maxSkew: 1,
            topologyKey: "kubernetes.io/hostname",
            whenUnsatisfiable: "DoNotSchedule",
            labelSelector: { matchLabels: { app: "spread" } },
          },
        ],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                {
                  matchExpressions: [
                    { key: "liqo.io/remote-cluster-id", operator: "In", values: [milan.identity.clusterId] },
                  ],
                },
              ],
            },
          },
        },
      }),
    );
    const pods = await waitFor(
      "4 spread pods Running",
      async () => {
        const items = (
          await rome.client.list<Pod>(Resources.pods, { namespace: "vn-demo", labelSelector: "app=spread" })
        ).items;
        return items.length === 4 && items.every((p) => p.status?.phase === "Running") ? items : undefined;
      },
      T,
    );
    const perNode = new Map<string, number>();
    for (const p of pods) perNode.set(p.spec.nodeName, (perNode.get(p.spec.nodeName) ?? 0) + 1);
    expect(Object.fromEntries(perNode)).toEqual({ "liqo-milan": 2, "milan-blue": 2 });
    const remote = (await milan.client.list<Pod>(Resources.pods, { labelSelector: "app=spread" })).items;
    expect(remote.map((p) => p.metadata.namespace)).toEqual([remoteNs, remoteNs, remoteNs, remoteNs]);
    await rome.client.delete(Resources.deployments, "spread", "vn-demo");
    await waitFor(
      "the spread pods gone in milan",
      async () => (await milan.client.list(Resources.pods, { labelSelector: "app=spread" })).items.length === 0,
      T,
    );
  }, 180_000);

  test("the controller manager restarted: the VirtualNode's pods keep running untouched; a VirtualNode removed meanwhile without its finalizer is drained then", async () => {
    const shadowUid = (await milan.client.find(ShadowPodResource, "on-blue", remoteNs))?.metadata.uid;
    const remoteUid = (await milan.client.find(Resources.pods, "on-blue", remoteNs))?.metadata.uid;
    expect({ shadowUid, remoteUid }).toEqual({ shadowUid: expect.any(String), remoteUid: expect.any(String) });
    await rome.client.create(
      VirtualNodeResource,
      virtualNode("milan-gone", { resourceQuota: { hard: { cpu: "100m", pods: "5" } }, labels: { pool: "gone" } }),
    );
    await condition("milan-gone", "NodeReady");
    await rome.client.create(Resources.pods, pod("on-gone", { nodeSelector: { pool: "gone" } }));
    await waitFor("on-gone Running", async () => {
      const p = await rome.client.find<Pod>(Resources.pods, "on-gone", "vn-demo");
      return p?.spec.nodeName === "milan-gone" && p.status?.phase === "Running" ? p : undefined;
    });
    // The peering stays Established in every write while the controller restarts (a restarted one
    // used to write Pending, StartingVirtualKubelet then WaitingForVirtualNode, until its first probe).
    const writes = await watchWrites(rome.client, ForeignClusterResource, (fc) => {
      const c = (
        fc.status as { peeringConditions?: { type: string; status: string; reason?: string }[] } | undefined
      )?.peeringConditions?.find((x) => x.type === "OutgoingPeering");
      return `${c?.status} ${c?.reason}`;
    });
    await rome.restartConsumer(async () => {
      // While nothing runs: milan-gone's VirtualNode goes without its drain (finalizer removed by hand).
      await rome.client.mergePatch(VirtualNodeResource, "milan-gone", tenant, { metadata: { finalizers: null } });
      await rome.client.delete(VirtualNodeResource, "milan-gone", tenant);
    });
    await waitFor(
      "milan-gone drained and deleted, on-gone and its remote copy gone",
      async () =>
        !(await node("milan-gone")) &&
        !(await rome.client.find(Resources.pods, "on-gone", "vn-demo")) &&
        !(await milan.client.find(ShadowPodResource, "on-gone", remoteNs)),
      T,
    );
    // The new controller runs milan-blue again (its status alone could still be the old one's).
    await waitFor("the restarted controller to run milan-blue", () =>
      rome.fc.peers()[0]?.extraNodes?.some((n) => n.name === "milan-blue" && n.ready),
    );
    expect((await condition("milan-blue", "NodeReady")).status).toBe("True");
    expect((await writes.stop()).filter((w) => !w.startsWith("Established "))).toEqual([]);
    // on-blue was adopted, not re-created, and still reports Running.
    const after = {
      shadow: (await milan.client.find(ShadowPodResource, "on-blue", remoteNs))?.metadata.uid,
      remote: (await milan.client.find(Resources.pods, "on-blue", remoteNs))?.metadata.uid,
      phase: (await rome.client.find<Pod>(Resources.pods, "on-blue", "vn-demo"))?.status?.phase,
    };
    expect(after).toEqual({ shadow: shadowUid, remote: remoteUid, phase: "Running" });
  }, 240_000);

  test("refusals: more than is left, a taken name, an unknown provider, no resources; nothing else changes", async () => {
    const before = (await node("liqo-milan"))!.status!.capacity!;
    await rome.client.create(VirtualNodeResource, virtualNode("milan-huge", { resourceQuota: { hard: offer } }));
    const huge = await condition("milan-huge", "OfferExceeded");
    expect(huge.status).toBe("False");
    expect(huge.message).toContain(`milan-huge asks cpu=${offer.cpu}`);
    expect(huge.message).toContain("is left of the offer of milan");
    await rome.client.create(
      VirtualNodeResource,
      virtualNode("liqo-milan", { resourceQuota: { hard: { cpu: "100m" } } }),
    );
    expect((await condition("liqo-milan", "NameTaken")).message).toContain("is the peering's own virtual node");
    await rome.client.create(Resources.namespaces, { metadata: { name: "vn-elsewhere" } });
    await rome.client.create(
      VirtualNodeResource,
      virtualNode("milan-blue", { resourceQuota: { hard: { cpu: "100m" } } }, "vn-elsewhere"),
    );
    expect((await condition("milan-blue", "NameTaken", "vn-elsewhere")).message).toContain(
      "an older VirtualNode in another namespace is already called milan-blue",
    );
    await rome.client.create(VirtualNodeResource, {
      ...virtualNode("nowhere", { resourceQuota: { hard: { cpu: "1" } } }),
      spec: { clusterID: "no-such-cluster", resourceQuota: { hard: { cpu: "1" } } },
    });
    expect((await condition("nowhere", "NoPeering")).message).toContain(
      "no established outgoing peering with cluster no-such-cluster",
    );
    await rome.client.create(VirtualNodeResource, virtualNode("milan-empty", { resourceQuota: { hard: {} } }));
    expect((await condition("milan-empty", "InvalidSpec")).message).toContain("names no resource");
    // A malformed quantity never reaches the controller: the CRD refuses it.
    await expect(
      rome.client.create(VirtualNodeResource, virtualNode("milan-bad", { resourceQuota: { hard: { cpu: "lots" } } })),
    ).rejects.toThrow();
    for (const name of ["milan-huge", "milan-empty", "nowhere"]) expect(await node(name)).toBeUndefined();
    expect((await node("liqo-milan"))!.metadata.labels?.["liqo.io/remote-cluster-id"]).toBe(milan.identity.clusterId);
    expect((await node("liqo-milan"))!.status!.capacity).toEqual(before);
    for (const [name, ns] of [
      ["milan-huge", tenant],
      ["liqo-milan", tenant],
      ["milan-blue", "vn-elsewhere"],
      ["nowhere", tenant],
      ["milan-empty", tenant],
    ] as const)
      await rome.client.delete(VirtualNodeResource, name, ns);
    await waitFor(
      "the refused VirtualNodes gone",
      async () => {
        const left = (await rome.client.list<Vn>(VirtualNodeResource)).items.map((v) => v.metadata.name);
        return left.length === 1 && left[0] === "milan-blue";
      },
      T,
    );
    // Deleting a refused one named like the peering's node left that node alone.
    expect((await node("liqo-milan"))?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")).toBe(
      true,
    );
  }, 240_000);

  test("a node may take all that is left: the peering's node keeps 0 and its running pod stays", async () => {
    const left = `${milli(offer.cpu!)! - milli(half(offer.cpu!, "cpu"))!}m`;
    await rome.client.create(
      VirtualNodeResource,
      virtualNode("milan-rest", { resourceQuota: { hard: { cpu: left } } }),
    );
    expect((await condition("milan-rest", "NodeReady")).status).toBe("True");
    await waitFor("liqo-milan down to 0 cpu", async () => (await node("liqo-milan"))?.status?.capacity?.cpu === "0", T);
    const own = (await rome.client.find<Pod>(Resources.pods, "on-own", "vn-demo"))!;
    expect(own.status?.phase).toBe("Running");
    await rome.client.delete(VirtualNodeResource, "milan-rest", tenant);
    await waitFor("milan-rest's Node gone", async () => !(await node("milan-rest")), T);
  }, 180_000);

  test("deleting a VirtualNode drains it: cordoned, its pods rescheduled elsewhere, then its Node goes", async () => {
    // A Deployment that prefers pool blue: its pod lands on milan-blue, and after the drain elsewhere.
    await rome.client.create(
      Resources.deployments,
      deployment("web", 1, {
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 100,
                preference: { matchExpressions: [{ key: "pool", operator: "In", values: ["blue"] }] },
              },
            ],
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: "liqo.io/type", operator: "In", values: ["virtual-node"] }] },
              ],
            },
          },
        },
      }),
    );
    const first = await waitFor("web's pod Running on milan-blue", async () => {
      const [p] = (await rome.client.list<Pod>(Resources.pods, { namespace: "vn-demo", labelSelector: "app=web" }))
        .items;
      return p?.spec.nodeName === "milan-blue" && p.status?.phase === "Running" ? p : undefined;
    });
    await rome.client.delete(VirtualNodeResource, "milan-blue", tenant);
    // The drain may be over before a poll sees the cordon: cordoned or already gone. The
    // replacement pod landing on liqo-milan although it prefers pool blue shows the cordon held.
    await waitFor(
      "milan-blue cordoned",
      async () => {
        const n = await node("milan-blue");
        return !n || n.spec?.unschedulable === true;
      },
      T,
    );
    const moved = await waitFor(
      "web's pod Running again, on liqo-milan",
      async () => {
        const pods = (await rome.client.list<Pod>(Resources.pods, { namespace: "vn-demo", labelSelector: "app=web" }))
          .items;
        const p = pods.find((x) => x.metadata.uid !== first.metadata.uid);
        return p?.spec.nodeName === "liqo-milan" && p.status?.phase === "Running" ? p : undefined;
      },
      T,
    );
    expect(moved.metadata.name).not.toBe(first.metadata.name);
    await waitFor(
      "the VirtualNode, its Node and the drained pods' remote copies gone",
      async () =>
        !(await rome.client.find(VirtualNodeResource, "milan-blue", tenant)) &&
        !(await node("milan-blue")) &&
        !(await rome.client.find(Resources.pods, "on-blue", "vn-demo")) &&
        !(await milan.client.find(ShadowPodResource, "on-blue", remoteNs)) &&
        !(await milan.client.find(ShadowPodResource, first.metadata.name!, remoteNs)),
      T,
    );
    // Its share is back with the peering's node.
    await waitFor("liqo-milan back to the whole offer", async () => {
      const o = await node("liqo-milan");
      return milli(o?.status?.capacity?.cpu) === milli(offer.cpu!) ? o : undefined;
    });
  }, 240_000);

  test("unpeering removes every virtual node of the peering; the VirtualNodes stay and say so", async () => {
    await rome.client.create(
      VirtualNodeResource,
      virtualNode("milan-again", { resourceQuota: { hard: { cpu: "100m" } } }),
    );
    await condition("milan-again", "NodeReady");
    const r = await liqoctl(rome, "unpeer", "milan", "--timeout=120s");
    expect(r.code).toBe(0);
    await waitFor(
      "no virtual node of milan left",
      async () => !(await node("milan-again")) && !(await node("liqo-milan")),
      T,
    );
    const c = await condition("milan-again", "NoPeering");
    expect(c.status).toBe("False");
  }, 240_000);
});
