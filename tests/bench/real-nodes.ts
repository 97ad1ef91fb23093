// Real nodes, measured side by side in one run (printed, never asserted), on the in-cluster quick
// start (two real-node clusters, liqo in-cluster, peered with networking):
//   1. TCP throughput and RTT: rome pod → milan pod through liqo's fabric, against rome pod → rome
//      pod on another node, and against a wireguard-go tunnel made by hand between the same two
//      node namespaces (the fabric's floor: the same wireguard-go build as the gateways, no liqo in the path).
//   2. Pod start latency with real containers, offloaded (virtual node) vs local: p50/p99 over N pods.
//   3. liqoctl install → all liqo pods Ready (from the quick start), and the memory of every liqo pod
//      idle and with M offloaded pods running.
// BENCH_PODS (default 50) and BENCH_OFFLOADED (default 100) scale 2 and 3. BENCH_PARTS (e.g.
// "start", default "throughput,start,memory") runs only some of them. Part 2 also prints where each
// offloaded pod's start went, step by step (pod-timeline.ts).
import { mkdtempSync, mkdirSync, readFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { dockerfileRuntime, wireguardGoBinary } from "../../scripts/build-image.ts";
import { runInClusterQuickstart, type InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { rigImageRefs } from "../rig/images.ts";
import { podMemory, podProcesses } from "../rig/pod-memory.ts";
import { killRigNow, rigDown } from "../rig/rig.ts";
import { waitFor } from "../support/wait.ts";
import { handMadeTunnel } from "./hand-made-tunnel.ts";
import { LOCAL_STEPS, OFFLOADED_STEPS, phases, recordTimeline, stampPod, type TimelineSource } from "./pod-timeline.ts";
import { percentile } from "./stats.ts";
import { ShadowPodResource } from "../../core/apis/virtualkubelet/shadowpod.ts";
import { kubectlOut } from "../support/kubectl.ts";

const podsPerSide = Number(process.env.BENCH_PODS ?? 50);
const offloadedPods = Number(process.env.BENCH_OFFLOADED ?? 100);
const parts = new Set((process.env.BENCH_PARTS ?? "throughput,start,memory").split(","));
type PodObject = KubeObject & {
  status?: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string; lastTransitionTime?: string }[];
  };
};

const kubectl = kubectlOut;

const onVirtual = {
  nodeSelector: { "liqo.io/type": "virtual-node" },
  tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists" }],
};

function pod(name: string, spec: Record<string, unknown>, command?: string[]): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "liqo-demo", labels: { bench: "real-nodes" } },
    spec: {
      ...spec,
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: "c", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent", ...(command ? { command } : {}) },
      ],
    },
  } as KubeObject;
}

async function running(q: InClusterQuickstart, name: string): Promise<PodObject> {
  return waitFor(
    `${name} Running`,
    async () => {
      const p = await q.rome.find<PodObject>(Resources.pods, name, "liqo-demo");
      return p?.status?.phase === "Running" && p.status.podIP ? p : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 250 },
  );
}

/** iperf3 for 10 s from rome's client pod; Gbit/s. And ping's average RTT in ms. */
async function measure(q: InClusterQuickstart, target: string): Promise<{ gbps: number; rttMs: number }> {
  const j = JSON.parse(
    await kubectl(q, "rome", "exec", "-n", "liqo-demo", "bench-client", "--", "iperf3", "-c", target, "-t", "10", "-J"),
  );
  const ping = await kubectl(
    q,
    "rome",
    "exec",
    "-n",
    "liqo-demo",
    "bench-client",
    "--",
    "ping",
    "-c",
    "20",
    "-i",
    "0.2",
    "-q",
    target,
  );
  return {
    gbps: j.end.sum_received.bits_per_second / 1e9,
    rttMs: Number(/= [\d.]+\/([\d.]+)\//.exec(ping)?.[1] ?? Number.NaN),
  };
}

/** Seconds from creation to the Ready condition, as the API server recorded them. */
async function startLatencies(
  q: InClusterQuickstart,
  prefix: string,
  n: number,
  spec: Record<string, unknown>,
  timeline?: "local" | "offloaded",
): Promise<number[]> {
  const consumer = { created: "created", scheduled: "scheduled", ready: "ready" } as const;
  const provider = { created: "remoteCreated", scheduled: "remoteScheduled", ready: "remoteReady" } as const;
  const sources: TimelineSource[] = [
    { client: q.rome, res: Resources.pods, namespace: "liqo-demo", stamp: (m, o, at) => stampPod(m, o, at, consumer) },
  ];
  if (timeline === "offloaded")
    sources.push(
      { client: q.milan, res: ShadowPodResource, stamp: (m, _o, at) => void (m.shadow ??= at) },
      { client: q.milan, res: Resources.pods, stamp: (m, o, at) => stampPod(m, o, at, provider) },
    );
  const recorder = timeline ? await recordTimeline(prefix, sources) : undefined;
  for (let i = 0; i < n; i++) await q.rome.create(Resources.pods, pod(`${prefix}-${i}`, spec, ["sleep", "infinity"]));
  const pods = await waitFor(
    `${n} ${prefix} pods Ready`,
    async () => {
      const all = (
        await q.rome.list<PodObject>(Resources.pods, { namespace: "liqo-demo", labelSelector: "bench=real-nodes" })
      ).items.filter((p) => p.metadata.name!.startsWith(`${prefix}-`));
      return all.length === n &&
        all.every((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"))
        ? all
        : undefined;
    },
    { timeoutMs: 900_000, intervalMs: 1000 },
  );
  if (recorder) {
    await recorder.stop();
    console.log(`  ${prefix}: where the time went, ms (p50 / p99 over the pods; watch events on the host's clock)`);
    for (const { step, ms } of phases(
      recorder.marks.values(),
      timeline === "offloaded" ? OFFLOADED_STEPS : LOCAL_STEPS,
    ))
      console.log(
        `    ${step.padEnd(46)} ${ms.length ? `${p(ms, 50).toFixed(0).padStart(6)} / ${p(ms, 99).toFixed(0).padStart(6)}` : "     —"}  (n=${ms.length})`,
      );
  }
  return pods.map(
    (p) =>
      (Date.parse(p.status!.conditions!.find((c) => c.type === "Ready")!.lastTransitionTime!) -
        Date.parse(p.metadata.creationTimestamp!)) /
      1000,
  );
}

/**
 * CPU seconds used so far by the whole machine (/proc/stat: all but idle and iowait) and by liqo's
 * pods in both clusters (their processes' utime + stime): read before and after a burst, they say
 * how much of the two cores the burst's own work took, and how much of that was liqo's.
 */
async function cpuSeconds(q: InClusterQuickstart): Promise<{ machine: number; liqo: number }> {
  const ticks = 100; // USER_HZ
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const machine = (f.reduce((a, b) => a + b, 0) - f[3]! - f[4]!) / ticks;
  let liqo = 0;
  for (const { pod, netns } of await liqoPods(q))
    for (const { pid } of podProcesses(pod.metadata.uid!, netns) ?? []) {
      try {
        // After the command's closing parenthesis: state is field 3, utime and stime fields 14 and 15.
        const rest = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
        liqo += (Number(rest[11]) + Number(rest[12])) / ticks;
      } catch {
        /* exited meanwhile */
      }
    }
  return { machine, liqo };
}

/** A burst's CPU: its wall time, the machine's busy share of two cores' worth, liqo's pods' share. */
async function measureCpu<T>(q: InClusterQuickstart, f: () => Promise<T>): Promise<[T, string]> {
  const cores = navigator.hardwareConcurrency;
  const before = await cpuSeconds(q);
  const t0 = performance.now();
  const out = await f();
  const wall = (performance.now() - t0) / 1000;
  const after = await cpuSeconds(q);
  const machine = after.machine - before.machine;
  const liqo = after.liqo - before.liqo;
  return [
    out,
    `${wall.toFixed(1)} s; the machine busy ${machine.toFixed(1)} of ${(wall * cores).toFixed(1)} CPU-s (${((100 * machine) / (wall * cores)).toFixed(0)}%), liqo's pods ${liqo.toFixed(1)} CPU-s (${((100 * liqo) / (wall * cores)).toFixed(0)}%)`,
  ];
}

/** Every liqo pod of both clusters, with the network namespaces of its cluster's real nodes. */
async function liqoPods(q: InClusterQuickstart): Promise<{ cluster: string; pod: PodObject; netns: string[] }[]> {
  const out: { cluster: string; pod: PodObject; netns: string[] }[] = [];
  for (const [cluster, client] of [
    ["rome", q.rome],
    ["milan", q.milan],
  ] as const) {
    const netns = q.rig.clusters.find((c) => c.name === cluster)!.realNodeStates!.map((n) => n.netns);
    for (const pod of (await client.list<PodObject>(Resources.pods, { namespace: "liqo" })).items)
      out.push({ cluster, pod, netns });
  }
  return out;
}

async function liqoMemory(q: InClusterQuickstart): Promise<string[]> {
  return (await liqoPods(q)).map(({ cluster, pod, netns }) => {
    const m = podMemory(pod.metadata.uid!, netns);
    return `  ${cluster.padEnd(6)} ${pod.metadata.name!.padEnd(44)} ${String(m?.rssMiB ?? "?").padStart(4)} MiB RSS  ${String(m?.cgroupRssMiB ?? "?").padStart(4)} MiB anon`;
  });
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const p = (xs: number[], at: number) => percentile(sorted(xs), at);
const fmt = (xs: number[]) => `p50 ${p(xs, 50).toFixed(2)}s  p99 ${p(xs, 99).toFixed(2)}s  (n=${xs.length})`;

const root = join(tmpdir(), "liqo-rig-bench");
mkdirSync(root, { recursive: true });
// milan offers all it has (Liqo's default 30% of two nodes' 220 pods is 66, fewer than the load).
const q = await runInClusterQuickstart({
  dir: mkdtempSync(join(root, "rig-")),
  owner: process.pid,
  sharingPercentage: 100,
  progress: (m) => console.error(`[bench] ${m}`),
});
process.on("exit", () => killRigNow(q.rig));
try {
  console.log(
    `in-cluster quick start: ${Object.entries(q.timings)
      .map(([k, v]) => `${k} ${v.toFixed(1)}s`)
      .join(", ")}`,
  );
  console.log(
    `liqoctl install → all liqo pods Ready (both clusters in parallel, helm --wait): ${q.timings.install!.toFixed(1)}s`,
  );
  console.log("liqo pods, idle:");
  for (const r of await liqoMemory(q)) console.log(r);

  // 1. Throughput and RTT.
  const notVirtual = {
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "liqo.io/type", operator: "NotIn", values: ["virtual-node"] }] },
          ],
        },
      },
    },
  };
  if (parts.has("throughput")) {
    const rome = q.rig.clusters[0]!.realNodeStates!;
    const milan = q.rig.clusters[1]!.realNodeStates!;
    await q.rome.create(Resources.pods, pod("bench-client", { nodeName: rome[0]!.name }, ["sleep", "infinity"]));
    await q.rome.create(Resources.pods, pod("bench-local-server", { nodeName: rome[1]!.name }, ["iperf3", "-s"]));
    await q.rome.create(Resources.pods, pod("bench-remote-server", onVirtual, ["iperf3", "-s"]));
    await running(q, "bench-client");
    const localServer = await running(q, "bench-local-server");
    const remoteServer = await running(q, "bench-remote-server");
    const sameCluster = await measure(q, localServer.status!.podIP!);
    const fabric = await measure(q, remoteServer.status!.podIP!);
    // The same wireguard-go build as the gateways (the image's, from its Go module).
    const wireguardGo = await wireguardGoBinary(
      join(homedir(), ".cache/liqo-bun/image"),
      dockerfileRuntime().wireguardGo,
      (m) => console.error(`[bench] ${m}`),
    );
    const byHand = await handMadeTunnel(
      { netns: rome[0]!.netns, ip: rome[0]!.ip },
      { netns: milan[0]!.netns, ip: milan[0]!.ip },
      wireguardGo,
    );
    console.log("TCP throughput (iperf3 10 s) and RTT (ping, 20 probes):");
    console.log(
      `  rome pod → rome pod, other node        ${sameCluster.gbps.toFixed(2).padStart(6)} Gbit/s  RTT ${sameCluster.rttMs.toFixed(3)} ms`,
    );
    console.log(
      `  rome pod → milan pod, liqo's fabric     ${fabric.gbps.toFixed(2).padStart(6)} Gbit/s  RTT ${fabric.rttMs.toFixed(3)} ms`,
    );
    console.log(
      `  rome node → milan node, wireguard-go    ${byHand.gbps.toFixed(2).padStart(6)} Gbit/s  RTT ${byHand.rttMs.toFixed(3)} ms`,
    );
    console.log(
      `  fabric ÷ same cluster: ${(fabric.gbps / sameCluster.gbps).toFixed(3)}   fabric ÷ hand-made tunnel: ${(fabric.gbps / byHand.gbps).toFixed(3)}`,
    );
  }

  // 2. Start latency.
  let started = 0;
  if (parts.has("start")) {
    const [local, localCpu] = await measureCpu(q, () =>
      startLatencies(q, "start-local", podsPerSide, notVirtual, "local"),
    );
    const [offloaded, offloadedCpu] = await measureCpu(q, () =>
      startLatencies(q, "start-offloaded", podsPerSide, onVirtual, "offloaded"),
    );
    console.log(`pod start (created → Ready), real containers: local ${fmt(local)}`);
    console.log(`                                         offloaded ${fmt(offloaded)}`);
    console.log(`  the local burst: ${localCpu}`);
    console.log(`  the offloaded burst: ${offloadedCpu}`);
    console.log(
      `  offloaded ÷ local: p50 ${(p(offloaded, 50) / p(local, 50)).toFixed(2)}×  p99 ${(p(offloaded, 99) / p(local, 99)).toFixed(2)}×`,
    );
    started = podsPerSide;
  }

  // 3. Memory with offloaded pods running.
  if (parts.has("memory")) {
    const more = Math.max(0, offloadedPods - started);
    await startLatencies(q, "load", more, onVirtual);
    // Counted, not inferred: which parts ran decides what else is running in liqo-demo.
    const virtual = new Set(
      (await q.rome.list(Resources.nodes, { labelSelector: "liqo.io/type=virtual-node" })).items.map(
        (n) => n.metadata.name,
      ),
    );
    const demo = (
      await q.rome.list<KubeObject & { spec?: { nodeName?: string } }>(Resources.pods, { namespace: "liqo-demo" })
    ).items;
    const offloadedNow = demo.filter((x) => virtual.has(x.spec?.nodeName ?? "")).length;
    console.log(`liqo pods with ${offloadedNow} offloaded pods running (and ${demo.length - offloadedNow} local):`);
    for (const r of await liqoMemory(q)) console.log(r);
  }
} finally {
  await rigDown(q.rig.dir).catch(() => killRigNow(q.rig));
}
process.exit(0);
