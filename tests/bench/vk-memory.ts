// The virtual kubelet's memory under a burst of offloaded pods, with the Bun flags the image runs
// the roles with (its ENTRYPOINT) against none, side by side in one run on one rig: each round
// restarts the virtual kubelet with one flag set (a fresh process, so its peak RSS is this round's),
// scales an offloaded Deployment from 0 to BENCH_PODS (default 2,000) on milan's kwok node, samples
// the virtual kubelet when every pod is Running locally, then scales back to 0 and waits until no
// pod is left on either side. The flag sets alternate over BENCH_ROUNDS rounds each (default 2), so
// a drift of the machine falls on both.
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { createInformer } from "../../core/kube/informer.ts";
import { startOffloadingRig } from "../e2e/offloading-rig.ts";
import { roleBunFlags } from "../quickstart/roles.ts";
import { loadRig } from "../rig/rig.ts";
import { appDeployment } from "../support/deployment.ts";
import { waitFor } from "../support/wait.ts";
import { bigNode } from "./kwok-node.ts";
import { processUsage, type ProcessUsage } from "./procstat.ts";
import { heading, row } from "./stats.ts";

const PODS = Number(process.env.BENCH_PODS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const Deployments: ResourceRef = {
  group: "apps",
  version: "v1",
  kind: "Deployment",
  plural: "deployments",
  namespaced: true,
};
const NamespaceOffloadings: ResourceRef = {
  group: "offloading.liqo.io",
  version: "v1alpha1",
  kind: "NamespaceOffloading",
  plural: "namespaceoffloadings",
  namespaced: true,
};
type Pod = KubeObject & { status?: { phase?: string } };

const imageFlags = roleBunFlags({});
const sets = [
  { label: `bun ${imageFlags.join(" ")} (the image's)`, flags: imageFlags.join(" ") },
  { label: "bun (no flags)", flags: "" },
];
const VK = "rome/virtual-kubelet-milan";

const r = await startOffloadingRig([
  { name: "rome", region: "north" },
  { name: "milan", region: "south" },
]);
const rome = r.consumer.client;
const milan = r.providers[0]!.client;
const vkPid = () => loadRig(r.rig.dir)!.extras!.find((x) => x.name === VK)!.pid;

try {
  await bigNode(milan, "milan-big");
  await rome.create(Resources.namespaces, { metadata: { name: "off" } });
  const off = await r.liqoctl("offload", "namespace", "off", "--pod-offloading-strategy=Remote");
  if (off.code !== 0) throw new Error(`liqoctl offload namespace off failed: ${off.err}`);
  const twin: string = await waitFor(
    "namespace off offloaded (NamespaceOffloading Ready)",
    async () => {
      const o = await rome.find<KubeObject & { status?: { offloadingPhase?: string; remoteNamespaceName?: string } }>(
        NamespaceOffloadings,
        "offloading",
        "off",
      );
      return o?.status?.offloadingPhase === "Ready" ? o.status.remoteNamespaceName : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 500 },
  );
  // Pods on each side, kept by watches: the bench never lists thousands of pods from a busy API server.
  const local = createInformer<Pod>({ client: rome, resource: Resources.pods, namespace: "off" });
  const remote = createInformer<Pod>({ client: milan, resource: Resources.pods, namespace: twin });
  local.start();
  remote.start();
  await Promise.all([local.waitForSync(), remote.waitForSync()]);
  const running = () => local.list().filter((p) => p.status?.phase === "Running" && !p.metadata.deletionTimestamp);
  await rome.create(
    Deployments,
    appDeployment({
      name: "burst",
      namespace: "off",
      replicas: 0,
      podSpec: { containers: [{ name: "app", image: "nginx" }] },
    }),
  );
  const scale = (replicas: number) => rome.mergePatch(Deployments, "burst", "off", { spec: { replicas } });

  const results = new Map<string, { usage: ProcessUsage; seconds: number }[]>(sets.map((s) => [s.label, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const set of round % 2 === 0 ? sets : [...sets].reverse()) {
      console.error(`round ${round + 1}/${ROUNDS}: ${set.label}, ${PODS} pods`);
      process.env.LIQO_ROLE_BUN_FLAGS = set.flags;
      await r.killAndRestart(VK);
      const started = performance.now();
      await scale(PODS);
      await waitFor(`${PODS} offloaded pods Running in rome`, () => running().length >= PODS, {
        timeoutMs: 1_800_000,
        intervalMs: 200,
        describe: () => `${running().length}/${PODS} Running`,
      });
      const seconds = (performance.now() - started) / 1000;
      results.get(set.label)!.push({ usage: processUsage(vkPid()), seconds });
      await scale(0);
      await waitFor(
        "no pod left in rome's off nor in milan's twin",
        () => local.list().length + remote.list().length === 0,
        {
          timeoutMs: 1_800_000,
          intervalMs: 500,
          describe: () => `${local.list().length} local, ${remote.list().length} remote`,
        },
      );
    }
  }
  local.stop();
  remote.stop();

  heading(`virtual kubelet, fresh process, ${PODS} offloaded pods in one burst (${ROUNDS} rounds each, alternating)`);
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const set of sets) {
    const rs = results.get(set.label)!;
    row(`${set.label}: peak RSS`, rs.map((x) => x.usage.peakMiB.toFixed(1)).join(" / "), "MiB");
    row(`${set.label}: CPU`, rs.map((x) => x.usage.cpuS.toFixed(1)).join(" / "), "CPU-s");
    row(`${set.label}: all Running`, rs.map((x) => x.seconds.toFixed(1)).join(" / "), "s");
  }
  const [a, b] = sets.map((s) => results.get(s.label)!);
  row(
    "peak RSS, image's flags ÷ none (medians)",
    median(a!.map((x) => x.usage.peakMiB)) / median(b!.map((x) => x.usage.peakMiB)),
    "×",
  );
  row(
    "CPU, image's flags ÷ none (medians)",
    median(a!.map((x) => x.usage.cpuS)) / median(b!.map((x) => x.usage.cpuS)),
    "×",
  );
} finally {
  await r.rig.down();
}
