// A peer's API server black-holed: rome's virtual kubelet for milan runs in a network namespace
// whose only way to either API server is a forwarder on the host end of a veth; nft rules in the
// namespace drop every packet to and from milan's forwarder (nothing refused, nothing reset).
// The virtual node must go NotReady, the watches on milan must be abandoned while the path is
// still dark (not a quarter of an hour later when TCP gives up), and once the rules are deleted,
// offloading and reflection resume with nothing duplicated or re-created.
// Detection times are printed, never asserted; every wait has a generous deadline.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ShadowPodResource } from "../../core/apis/index.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { VirtualNodeObject } from "../../core/virtualkubelet/node/forge.ts";
import { startOffloadingRig, virtualKubeletArgs, type ClusterInfo, type OffloadingRig } from "../e2e/offloading-rig.ts";
import { freePort } from "../rig/ports.ts";
import { isAlive, spawnDetached, tailFile } from "../rig/process.ts";
import { addRigProcess } from "../rig/rig.ts";
import { waitFor } from "../support/wait.ts";
import { createLab, type Lab } from "./lab.ts";
import { createPartitionPath, type PartitionPath } from "./partition-path.ts";

// biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters, asserted on a few fields
type Pod = KubeObject & { spec: Record<string, any>; status?: Record<string, any> };
const NamespaceOffloading = {
  group: "offloading.liqo.io",
  version: "v1alpha1",
  kind: "NamespaceOffloading",
  plural: "namespaceoffloadings",
  namespaced: true,
};
const NS = "partition";
// LIQO_PARTITION_WATCH_IDLE=0 runs the virtual kubelet without watch liveness, to see this test fail.
const WATCH_IDLE = process.env.LIQO_PARTITION_WATCH_IDLE ?? "30";

let r: OffloadingRig;
let rome: ClusterInfo, milan: ClusterInfo;
let lab: Lab;
let path: PartitionPath;
let milanPort = 0;
let vkLog = "";
let vkPid = 0;

beforeAll(async () => {
  r = await startOffloadingRig(
    [
      { name: "rome", region: "north" },
      { name: "milan", region: "south" },
    ],
    { virtualKubelets: false },
  );
  rome = r.consumer;
  milan = r.providers[0]!;
  lab = await createLab();
  path = await createPartitionPath(lab, "vk");
  const dir = join(r.rig.dir, "partition");
  mkdirSync(dir, { recursive: true });
  const local = path.kubeconfigVia(rome.kubeconfig, join(dir, "rome-via-veth.kubeconfig"));
  const remote = path.kubeconfigVia(milan.kubeconfig, join(dir, "milan-via-veth.kubeconfig"));
  milanPort = remote.port;
  const args = [
    ...virtualKubeletArgs(r, milan, await freePort(), {
      kubeconfig: local.file,
      remoteKubeconfig: remote.file,
      kubeletHost: path.nsIp,
    }),
    `--remote-watch-idle=${WATCH_IDLE}`,
    `--admin-address=127.0.0.1:${await freePort()}`,
  ];
  vkLog = join(r.rig.dir, "logs", "rome-virtual-kubelet-milan-netns.log");
  mkdirSync(join(r.rig.dir, "logs"), { recursive: true });
  vkPid = spawnDetached(
    "ip",
    ["netns", "exec", path.ns, process.execPath, join(import.meta.dir, "../../cli/liqo.ts"), ...args],
    vkLog,
  );
  addRigProcess(r.rig.dir, { name: "rome/virtual-kubelet-milan", pid: vkPid, log: vkLog });
  await waitFor(
    "the virtual node liqo-milan Ready",
    async () => {
      if (!isAlive(vkPid)) throw new Error(`the virtual kubelet exited:\n${tailFile(vkLog)}`);
      return readyOf(await rome.client.find<VirtualNodeObject>(Resources.nodes, "liqo-milan"))?.status === "True";
    },
    { timeoutMs: 120_000, describe: () => tailFile(vkLog) },
  );
}, 600_000);

afterAll(async () => {
  await lab?.cleanup(); // kills the virtual kubelet with its namespace
  path?.close();
  await r?.rig.down();
}, 120_000);

const readyOf = (n?: VirtualNodeObject) => n?.status?.conditions?.find((c) => c.type === "Ready");
const nodeReady = async () => readyOf(await rome.client.find<VirtualNodeObject>(Resources.nodes, "liqo-milan"));
const logLines = () => (existsSync(vkLog) ? readFileSync(vkLog, "utf8").split("\n").filter(Boolean) : []);
const since = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1)} s`;

/** What milan holds for rome, by name: pods (with UIDs), ShadowPods and reflected ConfigMaps, in every namespace. */
async function milanState() {
  const origin = `liqo.io/origin-cluster-id=${rome.clusterID}`;
  const pods = (await milan.client.list<Pod>(Resources.pods, { labelSelector: origin })).items;
  const shadows = (await milan.client.list(ShadowPodResource)).items;
  const twins = new Set(shadows.map((s) => s.metadata.namespace));
  const cms = (await milan.client.list(Resources.configMaps)).items.filter(
    (c) => twins.has(c.metadata.namespace) && c.metadata.name !== "kube-root-ca.crt",
  );
  const names = (items: KubeObject[]) => items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`).sort();
  return {
    pods: names(pods),
    podUids: Object.fromEntries(pods.map((p) => [p.metadata.name, p.metadata.uid])),
    shadows: names(shadows),
    configMaps: names(cms),
    data: Object.fromEntries(
      cms.map((c) => [c.metadata.name, (c as KubeObject & { data?: Record<string, string> }).data]),
    ),
  };
}

const localRunning = async (names: string[]) => {
  const pods = (await rome.client.list<Pod>(Resources.pods, { namespace: NS })).items;
  return names.every((n) =>
    pods.some((p) => p.metadata.name === n && p.status?.phase === "Running" && p.status?.podIP),
  );
};

test("a black-holed peer API server is detected, and everything resumes with nothing duplicated when the path returns", async () => {
  await rome.client.create(Resources.namespaces, { metadata: { name: NS } });
  const offload = await r.liqoctl("offload", "namespace", NS, "--pod-offloading-strategy=Remote");
  expect(offload.code).toBe(0);
  await waitFor(
    "the offloading Ready",
    async () =>
      // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters, asserted on a few fields
      (await rome.client.find<any>(NamespaceOffloading, "offloading", NS))?.status?.offloadingPhase === "Ready",
    { timeoutMs: 120_000 },
  );
  const pod = (name: string) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS },
    spec: { containers: [{ name: "app", image: "nginx" }] },
  });
  for (const name of ["p-0", "p-1", "p-2"]) await rome.client.create(Resources.pods, pod(name));
  for (const name of ["cm-0", "cm-1"])
    await rome.client.create(Resources.configMaps, { metadata: { name, namespace: NS }, data: { v: "1" } });
  await waitFor("p-0..p-2 Running in rome with milan's status", () => localRunning(["p-0", "p-1", "p-2"]), {
    timeoutMs: 180_000,
  });
  const before = await waitFor(
    "cm-0 and cm-1 reflected to milan",
    async () => {
      const s = await milanState();
      return s.configMaps.length === 2 && s.pods.length === 3 ? s : undefined;
    },
    { timeoutMs: 120_000, describe: milanState },
  );
  expect(before.shadows.length).toBe(3);

  // Dark: every packet between the virtual kubelet and milan's API server is dropped.
  const linesBefore = logLines().length;
  const t0 = Date.now();
  await path.blackhole(milanPort);
  let healed = false;
  try {
    const notReady = await waitFor(
      "liqo-milan NotReady",
      async () => {
        const c = await nodeReady();
        return c?.status === "False" ? c : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    console.log(`[partition] virtual node NotReady ${since(t0)} after the black-hole (${notReady.reason})`);
    expect(notReady.reason).toBe("RemoteClusterUnreachable");

    // The watches on milan are given up while milan is still dark.
    const abandoned = await waitFor(
      "a watch on milan abandoned for silence",
      () =>
        logLines()
          .slice(linesBefore)
          .find((l) => l.includes("did not answer a ping")),
      { timeoutMs: 150_000, intervalMs: 250 },
    );
    console.log(
      `[partition] first watch on milan abandoned ${since(t0)} after the black-hole: ${JSON.parse(abandoned).err?.message ?? abandoned}`,
    );
    const silent = logLines()
      .slice(linesBefore)
      .filter((l) => l.includes("did not answer a ping"));
    console.log(`[partition] ${silent.length} watch(es) abandoned for silence while dark`);

    // Work queued while dark: a pod, a ConfigMap, a changed ConfigMap.
    await rome.client.create(Resources.pods, pod("p-3"));
    await rome.client.create(Resources.configMaps, { metadata: { name: "cm-2", namespace: NS }, data: { v: "1" } });
    await rome.client.mergePatch(Resources.configMaps, "cm-0", NS, { data: { v: "2" } });
    expect((await milanState()).configMaps.length).toBe(2);
  } finally {
    await path.heal(milanPort);
    healed = true;
  }
  const t1 = Date.now();
  expect(healed).toBe(true);
  await waitFor("liqo-milan Ready again", async () => (await nodeReady())?.status === "True", {
    timeoutMs: 120_000,
    intervalMs: 250,
  });
  console.log(`[partition] virtual node Ready ${since(t1)} after the path returned`);

  const after = await waitFor(
    "the queued work in milan",
    async () => {
      const s = await milanState();
      return s.pods.length >= 4 && s.configMaps.length >= 3 && s.data["cm-0"]?.v === "2" ? s : undefined;
    },
    { timeoutMs: 180_000, describe: milanState },
  );
  await waitFor("p-3 Running in rome with milan's status", () => localRunning(["p-0", "p-1", "p-2", "p-3"]), {
    timeoutMs: 180_000,
  });
  console.log(`[partition] offloading and reflection caught up ${since(t1)} after the path returned`);

  // Nothing duplicated, nothing re-created: one more of each, the old pods the same pods.
  const settled = await milanState();
  expect(settled.pods).toEqual([...before.pods, `${before.pods[0]!.split("/")[0]}/p-3`].sort());
  expect(settled.shadows).toEqual(settled.pods);
  expect(settled.configMaps).toEqual([...before.configMaps, `${before.configMaps[0]!.split("/")[0]}/cm-2`].sort());
  for (const name of ["p-0", "p-1", "p-2"]) expect(settled.podUids[name]).toBe(before.podUids[name]);
  expect(after.pods).toEqual(settled.pods);
  expect((await rome.client.list(Resources.pods, { namespace: NS })).items.length).toBe(4);
}, 900_000);
