// Soak (a benchmark, never a test): LIQO_SOAK_MINUTES (default 60) of churn on the in-cluster quick
// start (two real-node clusters, liqo installed by the chart in each, peered with networking, liqo-demo
// offloaded). Each cycle:
//   1. LIQO_SOAK_PODS (default 10) pods created on the virtual node, Running in milan, then deleted;
//   2. a fresh namespace offloaded with liqoctl, a ConfigMap reflected into it, then unoffloaded and deleted;
//   3. every LIQO_SOAK_PEERING_EVERY-th cycle (default 5): liqoctl unpeer out-of-band milan, then the
//      printed peer command again, and the virtual node Ready once more.
// After each cycle every liqo pod of both clusters is sampled from the host: RSS, open file
// descriptors, sockets, threads (its processes' /proc, found through the pod's cgroup) and CPU time.
// Bun 1.4 gives no count of live timers from outside (process.getActiveResourcesInfo() is empty),
// so timers show as CPU: a timer left running per cycle makes the CPU spent per cycle grow.
// A leak is a growth that does not level off (stats.ts `trend`). Only named runs start it:
// `bun run bench soak` (it is left out of a plain `bun run bench`).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NamespaceOffloadingResource } from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { liqoctl, peerOutOfBand, run } from "../quickstart/install.ts";
import { runInClusterQuickstart, type InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { rigImageRefs } from "../rig/images.ts";
import { podProcesses } from "../rig/pod-memory.ts";
import { killRigNow, rigDown } from "../rig/rig.ts";
import { waitFor } from "../support/wait.ts";
import { heading, trend, type Trend } from "./stats.ts";

const minutes = Number(process.env.LIQO_SOAK_MINUTES ?? 60);
const podsPerCycle = Number(process.env.LIQO_SOAK_PODS ?? 10);
const peeringEvery = Number(process.env.LIQO_SOAK_PEERING_EVERY ?? 5);
const NS = "liqo-demo";
const say = (m: string) => console.error(`[soak] ${m}`);

type Pod = KubeObject & {
  spec?: { nodeName?: string };
  status?: { phase?: string };
};

/** What a pod's processes hold, summed over them (pause excluded). */
interface Holding {
  rssMiB: number;
  fds: number;
  sockets: number;
  threads: number;
  cpuSeconds: number;
}

function holdingOf(procs: { pid: number; status: string }[]): Holding {
  const h: Holding = { rssMiB: 0, fds: 0, sockets: 0, threads: 0, cpuSeconds: 0 };
  const ticks = 100; // USER_HZ on Linux
  for (const { pid, status } of procs) {
    h.rssMiB += Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? 0) / 1024;
    h.threads += Number(/^Threads:\s+(\d+)$/m.exec(status)?.[1] ?? 0);
    try {
      // Fields after the command (which may hold spaces): utime and stime are the 12th and 13th.
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      h.cpuSeconds += (Number(rest[11]) + Number(rest[12])) / ticks;
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        h.fds++;
        try {
          if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith("socket:")) h.sockets++;
        } catch {
          /* closed meanwhile */
        }
      }
    } catch {
      /* exited meanwhile */
    }
  }
  return h;
}

/** Samples of one liqo pod, by cycle; a pod replaced (a new UID) starts a new series. */
interface Series {
  cluster: string;
  role: string;
  pod: string;
  samples: Holding[];
}

const series = new Map<string, Series>();

async function sampleLiqoPods(q: InClusterQuickstart) {
  for (const c of q.rig.clusters) {
    const client = c.name === "rome" ? q.rome : q.milan;
    const netns = c.realNodeStates!.map((n) => n.netns);
    // Every liqo role runs in the liqo namespace, the virtual kubelets included.
    const pods = (await client.list<Pod>(Resources.pods, { namespace: "liqo" })).items;
    for (const p of pods) {
      if (p.status?.phase !== "Running") continue;
      const procs = podProcesses(p.metadata.uid!, netns);
      if (!procs?.length) continue;
      const uid = p.metadata.uid!;
      let s = series.get(uid);
      if (!s) {
        const labels = p.metadata.labels ?? {};
        const role = labels["app.kubernetes.io/name"] ?? p.metadata.name!;
        s = { cluster: c.name, role, pod: p.metadata.name!, samples: [] };
        series.set(uid, s);
      }
      s.samples.push(holdingOf(procs));
    }
  }
}

const onVirtualNode = {
  nodeSelector: { "liqo.io/type": "virtual-node" },
  tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists" }],
};

async function podsUpAndDown(q: InClusterQuickstart, cycle: number) {
  const names = Array.from({ length: podsPerCycle }, (_, i) => `soak-${cycle}-${i}`);
  await Promise.all(
    names.map((name) =>
      q.rome.create(Resources.pods, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace: NS, labels: { soak: "churn" } },
        spec: {
          ...onVirtualNode,
          terminationGracePeriodSeconds: 1,
          containers: [{ name: "c", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent" }],
        },
      } as KubeObject),
    ),
  );
  await waitFor(
    `cycle ${cycle}: ${podsPerCycle} offloaded pods Running`,
    async () => {
      const pods = (await q.rome.list<Pod>(Resources.pods, { namespace: NS, labelSelector: "soak=churn" })).items;
      return pods.filter((p) => p.status?.phase === "Running").length === podsPerCycle;
    },
    { timeoutMs: 300_000, intervalMs: 1000 },
  );
  await Promise.all(names.map((name) => q.rome.delete(Resources.pods, name, NS)));
  await waitFor(
    `cycle ${cycle}: the offloaded pods gone from both clusters`,
    async () =>
      (await q.rome.list(Resources.pods, { namespace: NS, labelSelector: "soak=churn" })).items.length === 0 &&
      (await q.milan.list(Resources.pods, { labelSelector: "soak=churn" })).items.length === 0,
    { timeoutMs: 300_000, intervalMs: 1000 },
  );
}

async function offloadAndBack(q: InClusterQuickstart, cycle: number) {
  const ns = `soak-${cycle}`;
  const rome = q.rig.clusters[0]!;
  await q.rome.create(Resources.namespaces, { metadata: { name: ns } });
  await run([...liqoctl, "offload", "namespace", ns, `--kubeconfig=${rome.kubeconfig}`], `liqoctl offload ${ns}`);
  await q.rome.create(Resources.configMaps, {
    metadata: { name: "churn", namespace: ns },
    data: { cycle: `${cycle}` },
  });
  await waitFor(
    `cycle ${cycle}: the ConfigMap reflected into ${ns}'s twin`,
    async () => {
      const o = await q.rome.find<KubeObject & { status?: { remoteNamespaceName?: string } }>(
        NamespaceOffloadingResource,
        "offloading",
        ns,
      );
      const twin = o?.status?.remoteNamespaceName;
      return twin ? q.milan.find(Resources.configMaps, "churn", twin) : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 1000 },
  );
  await run([...liqoctl, "unoffload", "namespace", ns, `--kubeconfig=${rome.kubeconfig}`], `liqoctl unoffload ${ns}`);
  await q.rome.delete(Resources.namespaces, ns);
}

async function virtualNodeReady(client: KubeClient, what: string) {
  await waitFor(
    what,
    async () => {
      const n = await client.find<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
        Resources.nodes,
        "liqo-milan",
      );
      return n?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    },
    { timeoutMs: 300_000, intervalMs: 1000 },
  );
}

async function peeringDownAndUp(q: InClusterQuickstart, cycle: number) {
  const [rome, milan] = q.rig.clusters as [(typeof q.rig.clusters)[0], (typeof q.rig.clusters)[0]];
  await run(
    [...liqoctl, "unpeer", "out-of-band", "milan", "--timeout=300s", `--kubeconfig=${rome.kubeconfig}`],
    "liqoctl unpeer",
  );
  await peerOutOfBand(rome, milan, () => {});
  await virtualNodeReady(q.rome, `cycle ${cycle}: liqo-milan Ready after peering again`);
}

const fmt = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(1));

function report(cycles: number, seconds: number) {
  heading(`soak: ${cycles} cycles in ${(seconds / 60).toFixed(1)} min (${podsPerCycle} pods per cycle)`);
  console.log(
    "  series: first → last (min..max), trend; CPU is per cycle. A trend needs 6 samples; a pod replaced (peering cycled) starts a new series.",
  );
  const metrics: { key: keyof Holding; unit: string; floor: number }[] = [
    { key: "rssMiB", unit: "MiB", floor: 8 },
    { key: "fds", unit: "fds", floor: 8 },
    { key: "sockets", unit: "sockets", floor: 4 },
    { key: "threads", unit: "threads", floor: 2 },
    { key: "cpuSeconds", unit: "CPU s/cycle", floor: 0.5 },
  ];
  const verdicts: Trend[] = [];
  for (const s of [...series.values()].sort((a, b) => `${a.cluster}${a.role}`.localeCompare(`${b.cluster}${b.role}`))) {
    const cells = metrics.map(({ key, unit, floor }) => {
      let xs = s.samples.map((h) => h[key]);
      if (key === "cpuSeconds") xs = xs.slice(1).map((x, i) => x - xs[i]!);
      const t = trend(xs, floor);
      if (t) verdicts.push(t);
      if (xs.length === 0) return `${unit} -`;
      return `${unit} ${fmt(xs[0]!)}→${fmt(xs[xs.length - 1]!)} (${fmt(Math.min(...xs))}..${fmt(Math.max(...xs))}) ${t ?? "n/a"}`;
    });
    console.log(`  ${`${s.cluster}/${s.role} ${s.pod}`.padEnd(60)} ${s.samples.length} samples`);
    for (const c of cells) console.log(`      ${c}`);
  }
  const grows = verdicts.filter((v) => v === "grows").length;
  console.log(
    `\n  verdicts: ${verdicts.length} series judged, ${grows} grow, ${verdicts.filter((v) => v === "levels off").length} level off, ${verdicts.filter((v) => v === "flat").length} flat`,
  );
}

let cycles = 0;
let started = performance.now();
const root = join(tmpdir(), "liqo-rig-bench");
mkdirSync(root, { recursive: true });
const q = await runInClusterQuickstart({
  dir: mkdtempSync(join(root, "soak-")),
  owner: process.pid,
  sharingPercentage: 100,
  progress: say,
});
process.on("exit", () => killRigNow(q.rig));
// Stopped early (Ctrl-C, a CI timeout): the rig goes, and what was measured still prints.
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => {
    report(cycles, (performance.now() - started) / 1000);
    killRigNow(q.rig);
    process.exit(130);
  });
started = performance.now();
try {
  await sampleLiqoPods(q);
  const end = Date.now() + minutes * 60_000;
  while (Date.now() < end) {
    cycles++;
    const t0 = performance.now();
    await podsUpAndDown(q, cycles);
    await offloadAndBack(q, cycles);
    if (peeringEvery > 0 && cycles % peeringEvery === 0) await peeringDownAndUp(q, cycles);
    await sampleLiqoPods(q);
    const live = [...series.values()].filter((x) => x.samples.length > 0);
    const rss = live.reduce((n, x) => n + x.samples.at(-1)!.rssMiB, 0);
    say(
      `cycle ${cycles} done in ${((performance.now() - t0) / 1000).toFixed(0)} s; ${live.length} liqo pod series, ${rss.toFixed(0)} MiB RSS in all`,
    );
  }
  report(cycles, (performance.now() - started) / 1000);
} catch (err) {
  // What was measured up to the failure still prints: a soak that stops early says why and where.
  report(cycles, (performance.now() - started) / 1000);
  throw err;
} finally {
  await rigDown(q.rig.dir).catch(() => killRigNow(q.rig));
}
