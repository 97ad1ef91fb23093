// Topologies users build, on real nodes with liqo installed by the chart: three clusters (rome,
// milan, turin; one real node each), each peered with both others (a full mesh: every cluster is a
// consumer and a provider at once, six peerings). What must hold there and not only in the
// one-way quick start:
// - no chained offloading: a pod that arrives through a peering runs on the provider's physical
//   nodes, never on its virtual nodes (30 pods each way between two clusters peered both ways;
//   a pod tolerating the virtual-node taint itself; a peer writing a ShadowPod bound to a
//   virtual node with its own identity);
// - a registry that is down: the offloaded pod's pull error, naming the registry, on the local pod;
// - traffic across every pair (pod → pod, pod → Service), a cluster selector choosing one of two
//   providers, and `liqoctl test network` per pair.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import {
  type ForeignCluster,
  ForeignClusterResource,
  ResourceOfferResource,
  ShadowPodResource,
} from "../../core/apis/index.ts";
import { REMOTE_CLUSTER_ID_LABEL, REPLICATION_DESTINATION_LABEL } from "../../core/apis/labels.ts";
import { formatQuantity, parseQuantity } from "../../core/kube/quantity.ts";
import { podRequests } from "../../core/peering/sharing/offer.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { Node, Pod } from "../../core/kube/types.ts";
import { readIdentity, peerClient } from "../../core/peering/foreigncluster/secrets.ts";
import { readClusterIdentity } from "../../core/peering/identity.ts";
import { installInCluster } from "../quickstart/in-cluster.ts";
import { liqoctl, peerOutOfBand, run } from "../quickstart/install.ts";
import { rigImageRefs } from "../rig/images.ts";
import { killRigNow, reapOrphanRigs, rigDown, rigUp, startRigRegistry, stopRigRegistry, type Rig } from "../rig/rig.ts";
import { testRigRoot } from "../rig/testing.ts";
import { appDeployment } from "../support/deployment.ts";
import { pullError } from "../support/pull-error.ts";
import { kubectlOn } from "../support/kubectl.ts";
import { waitFor } from "../support/wait.ts";

type RigCluster = Rig["clusters"][number];

const NAMES = ["rome", "milan", "turin"] as const;
type Name = (typeof NAMES)[number];
const REGION: Record<Name, string> = { rome: "center", milan: "north", turin: "south" };
const VIRTUAL_TAINT = "virtual-node.liqo.io/not-allowed";
/** Pods of each Deployment offloaded each way between two clusters peered both ways (the issue's count). */
const EACH_WAY = 30;

let rig: Rig;
const c = {} as Record<Name, RigCluster>;
const client = {} as Record<Name, KubeClient>;
const clusterId = {} as Record<Name, string>;
const say = process.env.RIG_VERBOSE ? (m: string) => console.error(`[topologies] ${m}`) : () => {};
const others = (x: Name) => NAMES.filter((y) => y !== x);
const next = (x: Name) => NAMES[(NAMES.indexOf(x) + 1) % NAMES.length]!;
const kubectl = (cluster: Name, ...args: string[]) =>
  kubectlOn({ kubectl: join(rig.bin, "kubectl"), kubeconfig: (n) => c[n as Name].kubeconfig }, cluster, ...args);

beforeAll(async () => {
  await reapOrphanRigs(testRigRoot);
  const dir = mkdtempSync(join(testRigRoot, "topologies-"));
  process.on("exit", () => {
    if (rig) killRigNow(rig);
  });
  const started = performance.now();
  const lap = () => `${((performance.now() - started) / 1000).toFixed(0)}s`;
  rig = await rigUp({ clusters: 3, names: [...NAMES], realNodes: 1, dir, owner: process.pid, progress: say });
  const up = lap();
  for (const [i, name] of NAMES.entries()) {
    c[name] = rig.clusters[i]!;
    client[name] = createKubeClient({ kubeconfig: c[name].kubeconfig });
  }
  // A larger share than Liqo's default 30%, so one provider node's pods (110) leave room for 30 of a peer's.
  await Promise.all(
    NAMES.map((n) => installInCluster(rig, c[n], `topology.liqo.io/region=${REGION[n]}`, { sharingPercentage: 50 })),
  );
  const installed = lap();
  for (const n of NAMES) clusterId[n] = (await readClusterIdentity(client[n], "liqo"))!.clusterId;
  // Every cluster peers with both others; one consumer's peerings one after the other.
  await Promise.all(
    NAMES.map(async (consumer) => {
      for (const provider of others(consumer)) await peerOutOfBand(c[consumer], c[provider], say);
    }),
  );
  for (const n of NAMES) {
    await waitFor(
      `${n}'s two virtual nodes Ready`,
      async () => {
        const nodes = (await client[n].list<Node>(Resources.nodes, { labelSelector: "liqo.io/type=virtual-node" }))
          .items;
        return (
          nodes.length === 2 &&
          nodes.every((x) => x.status?.conditions?.some((k) => k.type === "Ready" && k.status === "True"))
        );
      },
      { timeoutMs: 180_000 },
    );
  }
  console.log(`full mesh of 3 clusters: up ${up}, installed ${installed}, 6 peerings established ${lap()}`);
}, 1_500_000);

afterAll(async () => {
  if (rig) await rigDown(rig.dir).catch(() => killRigNow(rig));
}, 120_000);

async function offload(cluster: Name, namespace: string, ...flags: string[]) {
  await client[cluster].create(Resources.namespaces, { metadata: { name: namespace } });
  await run(
    [...liqoctl, "offload", "namespace", namespace, `--kubeconfig=${c[cluster].kubeconfig}`, ...flags],
    `liqoctl offload namespace ${namespace} (${cluster})`,
  );
}

const hello = {
  name: "hello",
  image: rigImageRefs.hello,
  imagePullPolicy: "IfNotPresent",
  ports: [{ containerPort: 80 }],
};

const deployment = (name: string, namespace: string, replicas: number) =>
  appDeployment({ name, namespace, replicas, podSpec: { containers: [hello] } });

/** Node names by kind in a cluster: its physical nodes and its virtual nodes. */
async function nodeKinds(cluster: Name): Promise<{ physical: Set<string>; virtual: Set<string> }> {
  const nodes = (await client[cluster].list<KubeObject>(Resources.nodes)).items;
  const isVirtual = (n: KubeObject) => n.metadata.labels?.["liqo.io/type"] === "virtual-node";
  return {
    physical: new Set(nodes.filter((n) => !isVirtual(n)).map((n) => n.metadata.name!)),
    virtual: new Set(nodes.filter(isVirtual).map((n) => n.metadata.name!)),
  };
}

const runningOn = (pods: Pod[]) => {
  const out: Record<string, number> = {};
  for (const p of pods) {
    const where = `${p.status?.phase ?? "?"}@${p.spec?.nodeName ?? "-"}`;
    out[where] = (out[where] ?? 0) + 1;
  }
  return out;
};

/**
 * Waits until `count` pods labelled app=`app` run in the consumer on virtual node `liqo-<provider>`
 * and their `count` copies run in the provider on its physical nodes; returns the copies.
 */
async function offloadedAndRunning(consumer: Name, provider: Name, namespace: string, app: string, count: number) {
  const { physical } = await nodeKinds(provider);
  const local = () => client[consumer].list<Pod>(Resources.pods, { namespace, labelSelector: `app=${app}` });
  const remote = () =>
    client[provider].list<Pod>(Resources.pods, { labelSelector: `app=${app},liqo.io/managed-by=shadowpod` });
  await waitFor(
    `${count} pods of ${consumer}'s ${namespace}/${app} Running on liqo-${provider}`,
    async () => {
      const pods = (await local()).items;
      return (
        pods.length === count &&
        pods.every((p) => p.status?.phase === "Running" && p.spec?.nodeName === `liqo-${provider}`)
      );
    },
    { timeoutMs: 600_000, intervalMs: 2000, describe: async () => runningOn((await local()).items) },
  );
  return waitFor(
    `their ${count} copies Running in ${provider} on physical nodes`,
    async () => {
      const pods = (await remote()).items;
      return pods.length === count &&
        pods.every((p) => p.status?.phase === "Running" && physical.has(p.spec?.nodeName ?? ""))
        ? pods
        : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 2000, describe: async () => runningOn((await remote()).items) },
  );
}

/** True when a pod spec can never be placed on a virtual node: liqo.io/type NotIn [virtual-node] in every required term. */
function excludesVirtualNodes(p: Pod): boolean {
  const terms = p.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  return (
    terms.length > 0 &&
    terms.every((t) =>
      t.matchExpressions?.some(
        (r) => r.key === "liqo.io/type" && r.operator === "NotIn" && r.values?.includes("virtual-node"),
      ),
    )
  );
}

describe("bidirectional peering: rome ↔ milan", () => {
  test(`${EACH_WAY} pods offloaded each way all run on physical nodes of the other cluster, none on a virtual node`, async () => {
    // Each namespace goes only to the other cluster of the pair (Remote: every pod offloaded).
    await Promise.all([
      offload(
        "rome",
        "bidir-rome",
        "--pod-offloading-strategy=Remote",
        `--selector=topology.liqo.io/region=${REGION.milan}`,
      ),
      offload(
        "milan",
        "bidir-milan",
        "--pod-offloading-strategy=Remote",
        `--selector=topology.liqo.io/region=${REGION.rome}`,
      ),
    ]);
    await client.rome.create(Resources.deployments, deployment("from-rome", "bidir-rome", EACH_WAY));
    await client.milan.create(Resources.deployments, deployment("from-milan", "bidir-milan", EACH_WAY));
    const [inMilan, inRome] = await Promise.all([
      offloadedAndRunning("rome", "milan", "bidir-rome", "from-rome", EACH_WAY),
      offloadedAndRunning("milan", "rome", "bidir-milan", "from-milan", EACH_WAY),
    ]);
    const virtual = new Set([...(await nodeKinds("milan")).virtual, ...(await nodeKinds("rome")).virtual]);
    const onVirtual = [...inMilan, ...inRome].filter((p) => virtual.has(p.spec?.nodeName ?? ""));
    console.log(
      `bidirectional: rome → milan ${inMilan.length}/${EACH_WAY} Running in milan ${JSON.stringify(runningOn(inMilan))}; ` +
        `milan → rome ${inRome.length}/${EACH_WAY} Running in rome ${JSON.stringify(runningOn(inRome))}; on a virtual node: ${onVirtual.length}`,
    );
    expect(onVirtual).toEqual([]);
    expect(inMilan.length + inRome.length).toBe(2 * EACH_WAY);
    // The copies carry no toleration for virtual nodes, and their placement excludes them.
    for (const p of [...inMilan, ...inRome]) {
      expect((p.spec?.tolerations ?? []).filter((t) => t.key === VIRTUAL_TAINT)).toEqual([]);
      expect(excludesVirtualNodes(p)).toBe(true);
    }
    // No pod is left waiting to be offloaded anywhere (a chained copy shows as OffloadingBackOff).
    for (const n of NAMES) {
      const pods = (await client[n].list<Pod>(Resources.pods)).items;
      expect(pods.filter((p) => p.status?.phase !== "Running" && p.metadata.labels?.app?.startsWith("from-"))).toEqual(
        [],
      );
    }
  }, 900_000);

  test("a pod that tolerates every taint itself still runs on the provider's physical node, not on its virtual nodes", async () => {
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "tolerates-all", namespace: "bidir-rome", labels: { app: "tolerates-all" } },
      spec: {
        containers: [hello],
        // Every taint tolerated (the virtual-node one by name too), and virtual nodes preferred.
        tolerations: [{ operator: "Exists" }, { key: VIRTUAL_TAINT, operator: "Exists" }],
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 100,
                preference: { matchExpressions: [{ key: "liqo.io/type", operator: "In", values: ["virtual-node"] }] },
              },
            ],
          },
        },
      },
    } as KubeObject;
    await client.rome.create(Resources.pods, pod);
    const [copy] = await offloadedAndRunning("rome", "milan", "bidir-rome", "tolerates-all", 1);
    expect((await nodeKinds("milan")).physical.has(copy!.spec!.nodeName!)).toBe(true);
    expect(copy!.spec!.tolerations?.filter((t) => t.key === VIRTUAL_TAINT)).toEqual([]);
    expect(copy!.spec!.tolerations).toContainEqual({ operator: "Exists" });
    expect(excludesVirtualNodes(copy!)).toBe(true);
    await client.rome.delete(Resources.pods, "tolerates-all", "bidir-rome");
  }, 300_000);

  test("a ShadowPod rome writes with its own identity, bound to milan's virtual node for turin, runs on milan's physical node", async () => {
    // The kubeconfig milan issued to rome, as rome keeps it (a hostile consumer has exactly this).
    const fc = await client.rome.get<ForeignCluster>(ForeignClusterResource, "milan");
    const identity = (await readIdentity(client.rome, fc.status!.tenantNamespace!.local!, clusterId.milan))!;
    const asRome = peerClient(identity.kubeconfig);
    const twin = (
      await client.milan.list<Pod>(Resources.pods, { labelSelector: "app=from-rome,liqo.io/managed-by=shadowpod" })
    ).items[0]!.metadata.namespace!;
    const toTurin = `liqo-turin`;
    expect((await nodeKinds("milan")).virtual.has(toTurin)).toBe(true);
    /** A ShadowPod bound to liqo-turin and tolerating virtual nodes, written as rome's identity may. */
    const boundToTurin = (name: string, extra: Record<string, unknown> = {}) =>
      asRome.create(ShadowPodResource, {
        apiVersion: "virtualkubelet.liqo.io/v1alpha1",
        kind: "ShadowPod",
        metadata: { name, namespace: twin, labels: { app: name } },
        spec: {
          pod: {
            containers: [hello],
            nodeName: toTurin,
            tolerations: [{ key: VIRTUAL_TAINT, operator: "Exists", effect: "NoExecute" }],
            ...extra,
          },
        },
      });
    await boundToTurin("chained", { nodeSelector: { "liqo.io/type": "virtual-node" } });
    // The nodeSelector asks for a virtual node and the rule forbids them: the pod can run nowhere,
    // so it waits Pending, unscheduled; it never reaches turin.
    const pending = await waitFor(
      "milan's pod for the hostile ShadowPod, unschedulable",
      async () => {
        const p = await client.milan.find<Pod>(Resources.pods, "chained", twin);
        return p?.status?.conditions?.some((k) => k.type === "PodScheduled" && k.reason === "Unschedulable")
          ? p
          : undefined;
      },
      { timeoutMs: 120_000 },
    );
    expect(pending.spec?.nodeName).toBeUndefined();
    expect(excludesVirtualNodes(pending)).toBe(true);
    // Without the virtual-node selector, the same hostile ShadowPod runs on milan's physical node.
    await boundToTurin("bound");
    const bound = await waitFor(
      "milan's pod for the ShadowPod bound to liqo-turin, Running",
      async () => {
        const p = await client.milan.find<Pod>(Resources.pods, "bound", twin);
        return p?.status?.phase === "Running" ? p : undefined;
      },
      { timeoutMs: 180_000 },
    );
    expect((await nodeKinds("milan")).physical.has(bound.spec!.nodeName!)).toBe(true);
    // turin never saw either: no ShadowPod from milan there.
    const inTurin = (await client.turin.list(ShadowPodResource)).items.map((s) => s.metadata.name);
    expect(inTurin).not.toContain("chained");
    expect(inTurin).not.toContain("bound");
    for (const name of ["chained", "bound"]) await asRome.delete(ShadowPodResource, name, twin);
  }, 300_000);

  test("with the registry down, an offloaded pod's pull error names the registry on the local pod; back up, it runs", async () => {
    const address = rig.registry!.address;
    const local = () => client.rome.find<Pod>(Resources.pods, "pull-always", "bidir-rome");
    await stopRigRegistry(rig);
    try {
      // image: nginx, no tag: pull policy Always, as most manifests in the wild.
      await client.rome.create(Resources.pods, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "pull-always", namespace: "bidir-rome", labels: { app: "pull-always" } },
        spec: { containers: [{ name: "web", image: "nginx" }] },
      } as KubeObject);
      const waiting = await waitFor(
        "rome's pod showing milan's pull error, naming the registry",
        async () => pullError(await local(), address),
        { timeoutMs: 180_000, describe: async () => (await local())?.status },
      );
      console.log(`registry down: rome's pod shows ${waiting.reason}: ${waiting.message?.slice(0, 200)}`);
    } finally {
      await startRigRegistry(rig);
    }
    await offloadedAndRunning("rome", "milan", "bidir-rome", "pull-always", 1);
    await client.rome.delete(Resources.pods, "pull-always", "bidir-rome");
  }, 600_000);

  test("clean-up: the Deployments removed, every copy goes from the providers", async () => {
    await client.rome.delete(Resources.deployments, "from-rome", "bidir-rome");
    await client.milan.delete(Resources.deployments, "from-milan", "bidir-milan");
    for (const [n, app] of [
      ["milan", "from-rome"],
      ["rome", "from-milan"],
    ] as const) {
      await waitFor(
        `the copies of ${app} gone from ${n}`,
        async () => (await client[n].list(Resources.pods, { labelSelector: `app=${app}` })).items.length === 0,
        { timeoutMs: 300_000, intervalMs: 2000 },
      );
    }
  }, 600_000);
});

describe("a provider bounds its consumer (the chart's default: hard quota)", () => {
  test("rome's identity writes ShadowPods past rome's offer at milan: the ones past it get no pod and wait; liqoctl status on milan counts them; one deleted, one admitted; cordoned, drained, uncordoned", async () => {
    const fc = await client.rome.get<ForeignCluster>(ForeignClusterResource, "milan");
    const identity = (await readIdentity(client.rome, fc.status!.tenantNamespace!.local!, clusterId.milan))!;
    const asRome = peerClient(identity.kubeconfig);
    // A namespace of rome's offloaded to milan only: its twin there is where rome's identity writes.
    await offload("rome", "bounded", `--selector=topology.liqo.io/region=${REGION.milan}`);
    const twins = (
      await client.milan.list(Resources.namespaces, { labelSelector: `${REMOTE_CLUSTER_ID_LABEL}=${clusterId.rome}` })
    ).items.map((n) => n.metadata.name!);
    const twin = twins.find((n) => n.startsWith("bounded"))!;
    expect(twin).toBeDefined();
    const offers = await client.milan.list<
      KubeObject & { spec: { resourceQuota?: { hard?: Record<string, string> } } }
    >(ResourceOfferResource, { labelSelector: `${REPLICATION_DESTINATION_LABEL}=${clusterId.rome},!liqo.io/originID` });
    const offered = parseQuantity(offers.items[0]!.spec.resourceQuota!.hard!.cpu!);
    const used = (await client.milan.list<Pod>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" })).items
      .filter((p) => twins.includes(p.metadata.namespace!))
      .reduce((n, p) => n + podRequests(p).cpu, 0n);
    // Room for exactly 3; 6 written at once.
    const each = (offered - used) / 3n;
    expect(each).toBeGreaterThan(0n);
    const names = Array.from({ length: 6 }, (_, i) => `over-${i}`);
    await Promise.all(
      names.map((name) =>
        asRome.create(ShadowPodResource, {
          apiVersion: "virtualkubelet.liqo.io/v1alpha1",
          kind: "ShadowPod",
          metadata: { name, namespace: twin },
          spec: { pod: { containers: [{ ...hello, resources: { requests: { cpu: `${each}m` } } }] } },
        }),
      ),
    );
    type Shadow = KubeObject & { status?: { quota?: { phase?: string; message?: string } } };
    const decided = () =>
      waitFor(
        "a pod Running or a refusal for each of rome's ShadowPods",
        async () => {
          const running: string[] = [];
          const refused: Shadow[] = [];
          for (const name of names) {
            const shadow = await client.milan.find<Shadow>(ShadowPodResource, name, twin);
            if (!shadow) continue;
            const pod = await client.milan.find<Pod>(Resources.pods, name, twin);
            if (pod?.metadata.deletionTimestamp) return undefined; // going: decided once it is gone
            if (pod?.status?.phase === "Running") running.push(name);
            else if (!pod && shadow.status?.quota?.phase === "Refused") refused.push(shadow);
            else return undefined;
          }
          return { running, refused };
        },
        { timeoutMs: 180_000, intervalMs: 1000 },
      );
    const first = await decided();
    expect(first.running.length).toBe(3);
    expect(first.refused.length).toBe(3);
    expect(first.refused[0]!.status!.quota!.message).toContain(
      `the offer to cluster ${clusterId.rome} is used up (hard quota): cpu: asks ${formatQuantity(each, "cpu")} with`,
    );
    // The chart's controller manager says what it enforces, and liqoctl status counts the waiting.
    const status = await run([...liqoctl, "status", `--kubeconfig=${c.milan.kubeconfig}`], "liqoctl status (milan)");
    expect(status).toMatch(/^rome\s+incoming\s+hard\s+\S+\s+\S+\s+\S+\s+3$/m);
    // One running deleted: one waiting takes its place, no more.
    await asRome.delete(ShadowPodResource, first.running[0]!, twin);
    const then = await waitFor(
      "one waiting admitted in its place",
      async () => {
        const d = await decided();
        return d.running.length === 3 && d.refused.length === 2 ? d : undefined;
      },
      { timeoutMs: 180_000 },
    );
    expect(then.running).not.toContain(first.running[0]);
    // Cordoned (by the ForeignCluster's name): one running deleted, no waiting one takes its place.
    const tenant = (verb: string, ...flags: string[]) =>
      run(
        [...liqoctl, verb, "tenant", "rome", `--kubeconfig=${c.milan.kubeconfig}`, ...flags],
        `liqoctl ${verb} tenant rome`,
      );
    await tenant("cordon");
    await asRome.delete(ShadowPodResource, then.running[0]!, twin);
    const cordoned = await waitFor("two running, the waiting ones now waiting for the cordon", async () => {
      const d = await decided();
      return d.running.length === 2 && d.refused.every((x) => x.status?.quota?.message?.includes("is cordoned here"))
        ? d
        : undefined;
    });
    expect(cordoned.refused.length).toBe(2);
    // Drained: the two running pods evicted, not re-created.
    expect(await tenant("drain", "--timeout=60s")).toContain("drained: 2 pod(s) evicted");
    const drained = await decided();
    expect(drained.running).toEqual([]);
    // Uncordoned: back within the offer (3 fit of the 4 there are).
    await tenant("uncordon");
    const back = await waitFor(
      "three running again, one waiting for room",
      async () => {
        const d = await decided();
        return d.running.length === 3 && d.refused.length === 1 ? d : undefined;
      },
      { timeoutMs: 180_000 },
    );
    expect(back.refused[0]!.status!.quota!.message).toContain("used up (hard quota)");
    for (const name of names) await asRome.delete(ShadowPodResource, name, twin).catch(() => false);
    await run(
      [...liqoctl, "unoffload", "namespace", "bounded", "--yes", `--kubeconfig=${c.rome.kubeconfig}`],
      "liqoctl unoffload namespace bounded",
    );
  }, 600_000);

  test("an extended resource end to end: milan's real node given 2 example.com/dongle, rome's virtual node advertises milan's share, a pod asking for one lands on it and runs on that node in milan; one asking for more than the share waits in rome's scheduler", async () => {
    const DONGLE = "example.com/dongle";
    const [real] = [...(await nodeKinds("milan")).physical];
    const patch = (op: "add" | "remove") =>
      kubectl(
        "milan",
        "patch",
        "node",
        real!,
        "--subresource=status",
        "--type=json",
        "-p",
        JSON.stringify([{ op, path: "/status/capacity/example.com~1dongle", ...(op === "add" ? { value: "2" } : {}) }]),
      );
    expect((await patch("add")).code).toBe(0);
    try {
      // The kubelet copies it into allocatable; milan offers 50% of it to each consumer: 1.
      const advertised = await waitFor(
        "rome's virtual node for milan advertising a dongle",
        async () => {
          const n = await client.rome.find<Node>(Resources.nodes, "liqo-milan");
          const a = n?.status?.allocatable?.[DONGLE];
          return a !== undefined && parseQuantity(a) > 0n ? a : undefined;
        },
        { timeoutMs: 180_000 },
      );
      expect(advertised).toBe("1");
      await offload(
        "rome",
        "dongles",
        "--pod-offloading-strategy=Remote",
        `--selector=topology.liqo.io/region=${REGION.milan}`,
      );
      const withDongles = (name: string, n: number) => ({
        metadata: { name, namespace: "dongles" },
        spec: { containers: [{ ...hello, resources: { limits: { [DONGLE]: String(n) } } }] },
      });
      await client.rome.create(Resources.pods, withDongles("one-dongle", 1));
      await client.rome.create(Resources.pods, withDongles("two-dongles", 2));
      const local = await waitFor(
        "the pod asking for a dongle Running on rome's virtual node for milan",
        async () => {
          const p = await client.rome.find<Pod>(Resources.pods, "one-dongle", "dongles");
          return p?.status?.phase === "Running" ? p : undefined;
        },
        { timeoutMs: 300_000, intervalMs: 2000 },
      );
      expect(local.spec!.nodeName).toBe("liqo-milan");
      const copy = await waitFor(
        "its copy Running in milan",
        async () => {
          const pods = (
            await client.milan.list<Pod>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" })
          ).items.filter((p) => p.metadata.name === "one-dongle");
          return pods[0]?.status?.phase === "Running" ? pods[0] : undefined;
        },
        { timeoutMs: 180_000 },
      );
      expect(copy.spec!.nodeName).toBe(real!);
      expect(podRequests(copy)[DONGLE]).toBe(1000n);
      // Two is more than milan's share to rome: rome's scheduler says so, and nothing reaches milan.
      const refusal = await waitFor("rome's scheduler refusing the pod asking for two", async () => {
        const events = await client.rome.list<KubeObject & { reason?: string; message?: string }>(Resources.events, {
          namespace: "dongles",
          fieldSelector: "involvedObject.name=two-dongles",
        });
        return events.items.find(
          (e) => e.reason === "FailedScheduling" && e.message?.includes(`Insufficient ${DONGLE}`),
        );
      });
      expect(refusal.message).toContain(`Insufficient ${DONGLE}`);
      expect((await client.rome.find<Pod>(Resources.pods, "two-dongles", "dongles"))!.spec?.nodeName).toBeUndefined();
      await run(
        [...liqoctl, "unoffload", "namespace", "dongles", "--yes", `--kubeconfig=${c.rome.kubeconfig}`],
        "liqoctl unoffload namespace dongles",
      );
      await client.rome.delete(Resources.namespaces, "dongles");
    } finally {
      await patch("remove");
    }
  }, 600_000);
});

describe("full mesh of three clusters", () => {
  /** Pod IPs as each cluster sees its own mesh pods (remapped where the provider's CIDR is translated). */
  const podIp = {} as Record<Name, Record<string, string>>;

  test("a namespace offloaded from each cluster to both others: a pod in each peer, all Running", async () => {
    await Promise.all(NAMES.map((x) => offload(x, `mesh-${x}`)));
    await Promise.all(
      NAMES.map(async (x) => {
        const ns = `mesh-${x}`;
        await client[x].create(Resources.pods, {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "client", namespace: ns },
          spec: {
            containers: [hello],
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [
                    { matchExpressions: [{ key: "liqo.io/type", operator: "NotIn", values: ["virtual-node"] }] },
                  ],
                },
              },
            },
          },
        } as KubeObject);
        for (const y of others(x)) {
          await client[x].create(Resources.pods, {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: `to-${y}`, namespace: ns, labels: { app: `to-${y}` } },
            spec: { containers: [hello], nodeSelector: { "liqo.io/remote-cluster-id": clusterId[y] } },
          } as KubeObject);
          await client[x].create(Resources.services, {
            apiVersion: "v1",
            kind: "Service",
            metadata: { name: `to-${y}`, namespace: ns },
            spec: { selector: { app: `to-${y}` }, ports: [{ port: 80, targetPort: 80 }] },
          } as KubeObject);
        }
      }),
    );
    for (const x of NAMES) {
      const pods = await waitFor(
        `mesh-${x}'s client and its pods in ${others(x).join(" and ")} Running`,
        async () => {
          const items = (await client[x].list<Pod>(Resources.pods, { namespace: `mesh-${x}` })).items;
          return items.length === 3 && items.every((p) => p.status?.phase === "Running" && p.status.podIP)
            ? items
            : undefined;
        },
        {
          timeoutMs: 300_000,
          intervalMs: 2000,
          describe: async () =>
            runningOn((await client[x].list<Pod>(Resources.pods, { namespace: `mesh-${x}` })).items),
        },
      );
      podIp[x] = Object.fromEntries(pods.map((p) => [p.metadata.name!, p.status!.podIP!]));
      for (const y of others(x))
        expect(pods.find((p) => p.metadata.name === `to-${y}`)!.spec!.nodeName).toBe(`liqo-${y}`);
    }
    // Each remote pod runs in the cluster its virtual node stands for, on a physical node there.
    for (const x of NAMES)
      for (const y of others(x)) {
        const copies = (
          await client[y].list<Pod>(Resources.pods, { labelSelector: `app=to-${y},liqo.io/managed-by=shadowpod` })
        ).items;
        const mine = copies.filter((p) => p.metadata.namespace!.startsWith(`mesh-${x}-`));
        expect(mine.length).toBe(1);
        expect((await nodeKinds(y)).physical.has(mine[0]!.spec!.nodeName!)).toBe(true);
      }
  }, 600_000);

  test("pod → pod and pod → Service across every ordered pair, answered by the pod in the other cluster", async () => {
    const curl = (x: Name, url: string, expectName: string) => {
      let last = "";
      return waitFor(
        `${x}'s client: curl ${url} answered by ${expectName}`,
        async () => {
          const r = await kubectl(x, "exec", "-n", `mesh-${x}`, "client", "--", "curl", "-sS", "--max-time", "5", url);
          last = (r.out + r.err).trim();
          return r.code === 0 && r.out.includes(`Server name: ${expectName}`);
        },
        { timeoutMs: 120_000, intervalMs: 1000, describe: () => last },
      );
    };
    const answered: string[] = [];
    for (const x of NAMES) {
      await Promise.all(
        others(x).map(async (y) => {
          await curl(x, `http://${podIp[x]![`to-${y}`]}/`, `to-${y}`);
          await curl(x, `http://to-${y}.mesh-${x}.svc.cluster.local/`, `to-${y}`);
          answered.push(`${x}→${y}`);
        }),
      );
    }
    console.log(
      `mesh traffic: pod → pod and pod → Service answered for ${answered.length} ordered pairs: ${answered.join(", ")}`,
    );
    expect(answered.sort()).toEqual(NAMES.flatMap((x) => others(x).map((y) => `${x}→${y}`)).sort());
  }, 600_000);

  test("a cluster selector choosing one of the two peers: the twin namespace and every pod go there only", async () => {
    await Promise.all(
      NAMES.map((x) =>
        offload(
          x,
          `pick-${x}`,
          "--pod-offloading-strategy=Remote",
          `--selector=topology.liqo.io/region=${REGION[next(x)]}`,
        ),
      ),
    );
    await Promise.all(
      NAMES.map((x) => client[x].create(Resources.deployments, deployment(`pick-${x}`, `pick-${x}`, 2))),
    );
    const placed = await Promise.all(NAMES.map((x) => offloadedAndRunning(x, next(x), `pick-${x}`, `pick-${x}`, 2)));
    for (const [i, x] of NAMES.entries()) {
      expect(placed[i]!.length).toBe(2);
      const skipped = others(x).find((y) => y !== next(x))! as Name;
      const twins = (await client[skipped].list(Resources.namespaces)).items.filter((n) =>
        n.metadata.name!.startsWith(`pick-${x}-`),
      );
      expect(twins).toEqual([]);
      const chosen = (await client[next(x)].list(Resources.namespaces)).items.filter((n) =>
        n.metadata.name!.startsWith(`pick-${x}-`),
      );
      expect(chosen.length).toBe(1);
    }
  }, 600_000);

  test("liqoctl test network passes for every pair", async () => {
    // From rome: its peerings with milan and turin; from milan: the one with turin.
    const runs: [Name, string[]][] = [
      ["rome", []],
      ["milan", ["turin"]],
    ];
    for (const [from, args] of runs) {
      const proc = Bun.spawn([...liqoctl, "test", "network", ...args, `--kubeconfig=${c[from].kubeconfig}`], {
        stdout: "pipe",
        stderr: "pipe",
      });
      const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      const code = await proc.exited;
      console.log(
        `liqoctl test network ${args.join(" ")} (${from}): exit ${code}\n${out.trim().split("\n").slice(-6).join("\n")}`,
      );
      if (code !== 0) throw new Error(`liqoctl test network (${from}) failed:\n${out}\n${err}`);
    }
  }, 900_000);
});
