// Pod offloading against the physical floor, in one run on one rig with liqo's roles as processes:
// the time until every pod of a Deployment is Running locally when it is offloaded (virtual node
// liqo-milan, ShadowPods, milan's kwok) versus the same Deployment on a kwok physical node of rome;
// peak RSS and CPU-seconds of the virtual kubelet and the controller managers at 100 and 1,000
// offloaded pods (10,000 when the machine can); status propagation latency (remote pod Running →
// local pod Running) as p50/p99.
import { readFileSync, existsSync } from "node:fs";
import { createInformer } from "../../core/kube/informer.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { ShadowPodResource } from "../../core/apis/index.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { startOffloadingRig } from "../e2e/offloading-rig.ts";
import { loadRig } from "../rig/rig.ts";
import { heading, row, summarize } from "./stats.ts";
import { waitFor } from "../support/wait.ts";

const Deployments: ResourceRef = { group: "apps", version: "v1", kind: "Deployment", plural: "deployments", namespaced: true };
const scale = Number(process.env.BENCH_SCALE ?? 1);
const SMALL = Math.round(100 * scale);
const LARGE = Math.round(1000 * scale);
const HUGE = Math.round(10000 * scale);
/** How long the 10,000 run may take, projected from the 1,000 one, before it is skipped. */
const HUGE_BUDGET_S = Number(process.env.BENCH_HUGE_BUDGET_S ?? 900);
type Pod = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } };

const r = await startOffloadingRig([{ name: "rome", region: "north" }, { name: "milan", region: "south" }]);
const rome = r.consumer.client;
const milan = r.providers[0]!.client;

/** A kwok node big enough for the largest run, so capacity never decides the timings. */
async function bigNode(client: KubeClient, name: string) {
  await client.create(Resources.nodes, {
    apiVersion: "v1", kind: "Node",
    metadata: { name, annotations: { "kwok.x-k8s.io/node": "fake" }, labels: { "kubernetes.io/hostname": name, type: "kwok", bench: "big" } },
    spec: {},
    status: {
      capacity: { cpu: "2000", memory: "8Ti", pods: "20000" }, allocatable: { cpu: "2000", memory: "8Ti", pods: "20000" },
      nodeInfo: { architecture: "amd64", operatingSystem: "linux", kubeletVersion: "fake", kubeProxyVersion: "fake", containerRuntimeVersion: "kwok" },
    },
  } as KubeObject);
}

function procOf(name: string): number {
  const rig = loadRig(r.rig.dir)!;
  const p = rig.extras?.find((x) => x.name === name);
  if (!p) throw new Error(`no process ${name} in the rig`);
  return p.pid;
}
function usage(pid: number) {
  if (!existsSync(`/proc/${pid}/stat`)) return { cpuS: NaN, peakMiB: NaN };
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime (fields 14, 15 of stat)
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return { cpuS: ticks / 100, peakMiB: hwm ? Number(hwm[1]) / 1024 : NaN };
}

// When this process first saw each pod pass each stage, by pod name: where offloading spends time.
const stages = ["local created", "local bound", "ShadowPod", "remote created", "remote Running", "local Running"] as const;
type Stage = (typeof stages)[number];
const seen = new Map<Stage, Map<string, number>>(stages.map((s) => [s, new Map()]));
const mark = (stage: Stage, name: string) => { const m = seen.get(stage)!; if (!m.has(name)) m.set(name, performance.now()); };
const remoteRunning = seen.get("remote Running")!;
const localRunning = seen.get("local Running")!;
const watch = (client: KubeClient, resource: ResourceRef, namespace: string, onObject: (o: Pod) => void) => {
  const inf = createInformer<Pod>({ client, resource, namespace });
  inf.on({ add: onObject, update: (_o, n) => onObject(n) });
  inf.start();
  return inf;
};

/** For one Deployment: when the last pod reached each stage, from the Deployment's creation. */
function stageReport(prefix: string, started: number) {
  heading(`offloading stages of ${prefix}*: when the last pod got there (s after the Deployment was created); median step`);
  let previous: Map<string, number> | undefined;
  for (const stage of stages) {
    const times = [...seen.get(stage)!].filter(([n]) => n.startsWith(prefix));
    const last = Math.max(...times.map(([, t]) => t));
    const steps = previous ? times.flatMap(([n, t]) => (previous!.has(n) ? [t - previous!.get(n)!] : [])) : [];
    row(`${stage} (${times.length} pods)`, (last - started) / 1000, previous ? `s; step p50 ${summarize(steps).p50.toFixed(0)} ms` : "s");
    previous = new Map(times);
  }
}

async function deploy(namespace: string, name: string, replicas: number, nodeSelector?: Record<string, string>) {
  await rome.create(Deployments, {
    apiVersion: "apps/v1", kind: "Deployment", metadata: { name, namespace },
    spec: {
      replicas, selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { nodeSelector, containers: [{ name: "app", image: "nginx" }] } },
    },
  });
}

/** Seconds from the Deployment's creation until all its pods are Running locally. */
async function timeToRunning(namespace: string, name: string, replicas: number, nodeSelector?: Record<string, string>) {
  const started = performance.now();
  await deploy(namespace, name, replicas, nodeSelector);
  const deadline = started + 3_600_000;
  let last = 0;
  while (performance.now() < deadline) {
    const pods = (await rome.list<Pod>(Resources.pods, { namespace, labelSelector: `app=${name}` })).items;
    last = pods.filter((p) => p.status?.phase === "Running").length;
    if (last >= replicas) return (performance.now() - started) / 1000;
    await Bun.sleep(1000);
  }
  throw new Error(`${namespace}/${name}: only ${last}/${replicas} pods Running after an hour`);
}

function report(pods: number) {
  heading(`resources at ${pods} offloaded pods (peak RSS since start; CPU-seconds cumulative)`);
  for (const [who, name] of [["virtual kubelet (rome)", "rome/virtual-kubelet-milan"], ["controller-manager (rome)", "rome/controller-manager"], ["controller-manager (milan, ShadowPods)", "milan/controller-manager"]]) {
    const u = usage(procOf(name!));
    row(`${who}: peak RSS`, u.peakMiB, "MiB");
    row(`${who}: CPU`, u.cpuS, "CPU-s");
  }
}

try {
  await bigNode(rome, "rome-big");
  await bigNode(milan, "milan-big");
  await rome.create(Resources.namespaces, { metadata: { name: "phys" } });
  await rome.create(Resources.namespaces, { metadata: { name: "off" } });
  const off = await r.liqoctl("offload", "namespace", "off", "--pod-offloading-strategy=Remote");
  if (off.code !== 0) throw new Error(`liqoctl offload failed: ${off.err}`);
  const twin: string = await waitFor("namespace off to be offloaded (Ready)", async () => {
    const o = await rome.find<any>({ group: "offloading.liqo.io", version: "v1alpha1", kind: "NamespaceOffloading", plural: "namespaceoffloadings", namespaced: true }, "offloading", "off");
    return o?.status?.offloadingPhase === "Ready" ? o.status.remoteNamespaceName : undefined;
  }, { timeoutMs: 180_000, intervalMs: 500 });
  // Remote objects carry the local pod's name; local pods are named after their Deployment.
  const informers = [
    watch(rome, Resources.pods, "off", (p) => {
      mark("local created", p.metadata.name!);
      if (p.spec?.nodeName) mark("local bound", p.metadata.name!);
      if (p.status?.phase === "Running") mark("local Running", p.metadata.name!);
    }),
    watch(milan, ShadowPodResource, twin, (p) => mark("ShadowPod", p.metadata.name!)),
    watch(milan, Resources.pods, twin, (p) => {
      mark("remote created", p.metadata.name!);
      if (p.status?.phase === "Running") mark("remote Running", p.metadata.name!);
    }),
  ];
  await Promise.all(informers.map((i) => i.waitForSync()));

  heading(`${SMALL} offloaded pods (warm-up and first resource sample)`);
  row(`Deployment of ${SMALL} offloaded: all Running`, await timeToRunning("off", "small", SMALL), "s");
  report(SMALL);

  heading(`Deployment of ${LARGE} replicas: physical kwok node vs offloaded`);
  const phys = await timeToRunning("phys", "large", LARGE, { "kubernetes.io/hostname": "rome-big" });
  row(`physical (rome-big): all ${LARGE} Running`, phys, "s");
  const largeStarted = performance.now();
  const offloaded = await timeToRunning("off", "large", LARGE);
  row(`offloaded (liqo-milan): all ${LARGE} Running`, offloaded, "s");
  row("ratio offloaded / physical (target ≤ 1.2)", offloaded / phys, "×");
  report(SMALL + LARGE);
  stageReport("large-", largeStarted);
  // Pod creations the ReplicaSet controller had to retry (e.g. the webhook timing out) slow "local created".
  for (const ns of ["phys", "off"]) {
    const failed = (await rome.list<any>(Resources.events, { namespace: ns, fieldSelector: "reason=FailedCreate" })).items;
    row(`FailedCreate Events in ${ns}`, failed.reduce((n, e) => n + (e.count ?? 1), 0), failed[0] ? `e.g. ${String(failed[0].message).slice(0, 160)}` : "");
  }

  const latencies = [...localRunning].flatMap(([name, t]) => (remoteRunning.has(name) ? [t - remoteRunning.get(name)!] : []));
  const s = summarize(latencies);
  heading("status propagation: remote pod Running → local pod Running");
  row("samples", s.n);
  row("p50", s.p50, "ms");
  row("p99", s.p99, "ms");
  row("max", s.max, "ms");

  const projected = (phys + offloaded) * (HUGE / LARGE);
  heading(`Deployment of ${HUGE} replicas`);
  if (projected > HUGE_BUDGET_S && !process.env.BENCH_HUGE) {
    console.log(`  skipped: projected from the ${LARGE} run it needs ~${projected.toFixed(0)}s (budget ${HUGE_BUDGET_S}s, BENCH_HUGE_BUDGET_S) on this machine;` +
      ` the largest size that ran is ${LARGE} (+${SMALL}). Set BENCH_HUGE=1 to run it anyway.`);
  } else {
    const physHuge = await timeToRunning("phys", "huge", HUGE, { "kubernetes.io/hostname": "rome-big" });
    row(`physical: all ${HUGE} Running`, physHuge, "s");
    const offHuge = await timeToRunning("off", "huge", HUGE);
    row(`offloaded: all ${HUGE} Running`, offHuge, "s");
    row("ratio offloaded / physical (target ≤ 1.5)", offHuge / physHuge, "×");
    report(SMALL + LARGE + HUGE);
  }
  await Promise.all(informers.map((i) => i.stop()));
} finally {
  await r.rig.down();
}
process.exit(0);
