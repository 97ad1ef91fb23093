// Upgrading in place, as docs/upgrade.md tells users: the previous release (CHANGELOG.md's, built
// here from its commit: its chart, its liqoctl, its image) installed in-cluster on rome and milan with
// real nodes, peered, liqo-demo offloaded with pods, a ConfigMap and a Secret reflected, and traffic
// from a pod in rome to a pod in milan through the gateways. Then this checkout's liqoctl install
// runs on milan, then on rome, while the virtual node, both peering conditions and the traffic are
// sampled. Required: the same offloaded pods, remote pods and ShadowPods (UIDs) with the same restart
// counts, the same reflected objects (UIDs, nothing lost or duplicated), the virtual node Ready and
// the peering Established in every sample, the CRDs applied by liqoctl. The traffic outage is
// counted and printed. Last, the way back: helm rollback on both returns to the previous release
// with the same pods, the virtual node Ready throughout, and traffic flows.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { ForeignClusterResource, ShadowPodResource } from "../../core/apis/index.ts";
import { findHelm } from "../../cli/install/helm.ts";
import { chartCrds } from "../../cli/install/crd-upgrade.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { Service } from "../../core/kube/types.ts";
import { runInClusterQuickstart, virtualNodeAffinity, type InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { liqoctl, run } from "../quickstart/install.ts";
import { ensurePreviousRelease, type PreviousRelease } from "../rig/previous-release.ts";
import { reapOrphanRigs, rigDown } from "../rig/rig.ts";
import { checkoutVersion, rigImageRefs } from "../rig/images.ts";
import { testRigRoot } from "../rig/testing.ts";
import { kubectlOn } from "../support/kubectl.ts";
import { waitFor } from "../support/wait.ts";

type Pod = KubeObject & {
  spec: { nodeName?: string; containers: { image: string }[] };
  status?: { phase?: string; podIP?: string; containerStatuses?: { restartCount: number; ready: boolean }[] };
};
type Condition = { type: string; status: string };

let dir: string;
let q: InClusterQuickstart;
let prev: PreviousRelease;
const NS = "liqo-demo";
const say = (m: string) => console.error(`${new Date().toISOString().slice(11, 19)} upgrade: ${m}`);
const kubectl = (cluster: string, ...args: string[]) => kubectlOn(q, cluster, ...args);
const cluster = (name: string) => q.rig.clusters.find((c) => c.name === name)!;

beforeAll(async () => {
  mkdirSync(testRigRoot, { recursive: true });
  await reapOrphanRigs(testRigRoot);
  dir = mkdtempSync(join(testRigRoot, "upgrade-"));
  prev = await ensurePreviousRelease(say);
  say(`installing liqo ${prev.version} (commit ${prev.commit.slice(0, 12)}) with its own liqoctl on rome and milan`);
  q = await runInClusterQuickstart({
    dir,
    owner: process.pid,
    liqoctl: prev.liqoctl,
    extraImages: [prev.image],
    progress: say,
  });
  // More to keep across the upgrade: offloaded replicas, a ConfigMap and a Secret reflected to milan,
  // and a pod in rome that asks nginx-remote (in milan, through the gateways) four times a second.
  await q.rome.create(Resources.deployments, webDeployment());
  await q.rome.create(Resources.configMaps, { metadata: { name: "settings", namespace: NS }, data: { mode: "blue" } });
  await q.rome.create(Resources.secrets, {
    metadata: { name: "token", namespace: NS },
    stringData: { token: "s3cr3t" },
  } as KubeObject);
  const remote = await q.rome.get<Pod>(Resources.pods, "nginx-remote", NS);
  await q.rome.create(Resources.pods, trafficPod(remote.status!.podIP!));
  await waitFor(
    "the web replicas offloaded and Running, the traffic pod answered from milan",
    async () => {
      const pods = (await q.rome.list<Pod>(Resources.pods, { namespace: NS })).items;
      const web = pods.filter((p) => p.metadata.name!.startsWith("web-"));
      const ready = web.length === 3 && web.every((p) => p.status?.phase === "Running" && ready1(p));
      return ready && (await trafficLog()).some((l) => l.ok) ? true : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 2000 },
  );
  await waitFor("the ConfigMap, the Secret and the Service reflected into milan", async () => {
    const s = await snapshot();
    return s.reflected.some((r) => r.startsWith("ConfigMap/settings")) &&
      s.reflected.some((r) => r.startsWith("Secret/token")) &&
      s.reflected.some((r) => r.startsWith("Service/liqo-demo"))
      ? true
      : undefined;
  });
}, 1_200_000);

afterAll(async () => {
  if (dir) await rigDown(dir);
});

const ready1 = (p: Pod) => !!p.status?.containerStatuses?.length && p.status.containerStatuses.every((c) => c.ready);

function webDeployment(): KubeObject {
  return {
    metadata: { name: "web", namespace: NS },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          containers: [{ name: "nginx", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent" }],
          affinity: virtualNodeAffinity("In"),
        },
      },
    },
  };
}

/** One line per request, `<unix seconds> ok|fail`, on its log. */
function trafficPod(ip: string): KubeObject {
  const loop = `while true; do t=$(date +%s.%N); if curl -s -o /dev/null -m 2 http://${ip}/; then echo "$t ok"; else echo "$t fail"; fi; sleep 0.25; done`;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "traffic", namespace: NS },
    spec: {
      containers: [
        { name: "curl", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent", command: ["sh", "-c", loop] },
      ],
      affinity: virtualNodeAffinity("NotIn"),
    },
  } as KubeObject;
}

async function trafficLog(): Promise<{ t: number; ok: boolean }[]> {
  const r = await kubectl("rome", "logs", "-n", NS, "traffic");
  return r.out
    .split("\n")
    .map((l) => l.trim().split(" "))
    .filter((w) => w.length === 2)
    .map(([t, s]) => ({ t: Number(t), ok: s === "ok" }));
}

/** The failed requests between two instants, and the longest stretch without an answer. */
function outage(log: { t: number; ok: boolean }[], from: number, to: number) {
  const window = log.filter((l) => l.t >= from && l.t <= to);
  let longest = 0;
  let since: number | undefined;
  for (const l of window) {
    if (!l.ok && since === undefined) since = l.t;
    if (l.ok && since !== undefined) {
      longest = Math.max(longest, l.t - since);
      since = undefined;
    }
  }
  if (since !== undefined) longest = Math.max(longest, to - since);
  return { requests: window.length, failed: window.filter((l) => !l.ok).length, longestSeconds: longest };
}

/** What must survive: pods on both sides and ShadowPods with UIDs and restarts, reflected objects with UIDs. */
async function snapshot() {
  const restarts = (p: Pod) => (p.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0);
  const offloaded = (await q.rome.list<Pod>(Resources.pods, { namespace: NS })).items
    .filter((p) => p.spec.nodeName === "liqo-milan")
    .map((p) => `${p.metadata.name} ${p.metadata.uid} restarts=${restarts(p)}`)
    .sort();
  const shadows = (await q.milan.list(ShadowPodResource)).items.filter((s) =>
    s.metadata.namespace!.startsWith(`${NS}-`),
  );
  const twin = shadows[0]?.metadata.namespace;
  const remote = twin
    ? (await q.milan.list<Pod>(Resources.pods, { namespace: twin })).items
        .map((p) => `${p.metadata.name} ${p.metadata.uid} restarts=${restarts(p)}`)
        .sort()
    : [];
  const reflected: string[] = [];
  if (twin)
    for (const res of [Resources.services, Resources.configMaps, Resources.secrets, Resources.endpointSlices]) {
      const items = (await q.milan.list(res, { namespace: twin, labelSelector: "liqo.io/managed-by=reflection" }))
        .items;
      reflected.push(...items.map((o) => `${res.kind}/${o.metadata.name} ${o.metadata.uid}`));
    }
  // 0.1.0's chart fixed the gateway's node port; this one leaves it to Kubernetes, which keeps the
  // allocated port when an update leaves it out: the tunnel's endpoint does not move.
  const gatewayNodePorts = await Promise.all(
    [q.rome, q.milan].map(
      async (c) => (await c.get<Service>(Resources.services, "liqo-gateway", "liqo")).spec?.ports?.[0]?.nodePort,
    ),
  );
  return {
    gatewayNodePorts,
    offloaded,
    shadowPods: shadows.map((s) => `${s.metadata.name} ${s.metadata.uid}`).sort(),
    remote,
    reflected: reflected.sort(),
  };
}

interface Sample {
  t: number;
  virtualNodeReady: string;
  outgoing: string;
  incoming: string;
}

async function sample(): Promise<Sample> {
  const status = async (client: typeof q.rome, type: string) => {
    const fcs = (
      await client.list<KubeObject & { status?: { peeringConditions?: Condition[] } }>(ForeignClusterResource)
    ).items;
    return fcs[0]?.status?.peeringConditions?.find((c) => c.type === type)?.status ?? "missing";
  };
  const node = await q.rome.get<KubeObject & { status?: { conditions?: Condition[] } }>(Resources.nodes, "liqo-milan");
  return {
    t: Date.now() / 1000,
    virtualNodeReady: node.status?.conditions?.find((c) => c.type === "Ready")?.status ?? "missing",
    outgoing: await status(q.rome, "OutgoingPeering"),
    incoming: await status(q.milan, "IncomingPeering"),
  };
}

/** Samples every second until stopped; a failed read is a sample too. */
function sampler() {
  const samples: (Sample | { t: number; error: string })[] = [];
  let on = true;
  const done = (async () => {
    while (on) {
      try {
        samples.push(await sample());
      } catch (err) {
        samples.push({ t: Date.now() / 1000, error: (err as Error).message });
      }
      await Bun.sleep(1000);
    }
  })();
  return {
    samples,
    stop: async () => {
      on = false;
      await done;
    },
  };
}

/** "Service 1, ConfigMap 2, ..." for `Kind/name uid` lines. */
const kinds = (lines: string[]) =>
  Object.entries(Object.groupBy(lines, (l) => l.split("/")[0]!))
    .map(([k, v]) => `${k} ${v!.length}`)
    .join(", ");

/**
 * Runs a change (an upgrade, a rollback) while sampling, then waits until traffic answered 8 times
 * in a row and the snapshot equals `before`; prints the counts and returns the samples that were
 * not all well, the outage and the settled snapshot.
 */
async function whileSampled(what: string, change: () => Promise<void>) {
  const watch = sampler();
  const started = Date.now() / 1000;
  await change();
  const changed = Date.now() / 1000;
  await waitFor(
    `8 answers in a row from milan after ${what}`,
    async () => {
      const after = (await trafficLog()).filter((l) => l.t > changed);
      return after.length >= 8 && after.slice(-8).every((l) => l.ok) ? true : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 2000 },
  );
  let after = await snapshot();
  await waitFor(
    `the same pods and reflected objects as before ${what}`,
    async () => {
      after = await snapshot();
      return JSON.stringify(after) === JSON.stringify(before) ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 2000, describe: () => ({ before, after }) },
  );
  await watch.stop();
  const o = outage(await trafficLog(), started, Date.now() / 1000);
  console.log(
    `${what}: ${watch.samples.length} samples of the virtual node and both peering conditions; ` +
      `${after.offloaded.length} offloaded pods, ${after.remote.length} remote pods, ${after.shadowPods.length} ShadowPods, ` +
      `${after.reflected.length} reflected objects kept (${kinds(after.reflected)}); traffic: ${o.requests} requests, ${o.failed} failed, ` +
      `longest outage ${o.longestSeconds.toFixed(1)}s`,
  );
  const notWell = watch.samples.filter(
    (s) =>
      "error" in s || s.virtualNodeReady !== "True" || s.outgoing !== "Established" || s.incoming !== "Established",
  );
  return { samples: watch.samples, notWell, after };
}

async function liqoImages(client: typeof q.rome): Promise<string[]> {
  const pods = (await client.list<Pod>(Resources.pods, { namespace: "liqo" })).items;
  return [...new Set(pods.flatMap((p) => p.spec.containers.map((c) => c.image)))].sort();
}

/** Every liqo pod on both clusters runs `version` (Helm's --wait does not wait for the old pods to go). */
async function installed(version: string) {
  const want = [`ghcr.io/liqo-bun/liqo:${version}`];
  const images = async () => ({ rome: await liqoImages(q.rome), milan: await liqoImages(q.milan) });
  await waitFor(
    `every liqo pod running ${want[0]}`,
    async () => {
      const now = await images();
      return Bun.deepEquals(now, { rome: want, milan: want }) ? true : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 1000, describe: images },
  );
}

test("the previous release runs on both clusters: its image, peered, traffic answered from milan", async () => {
  await installed(prev.version);
  const s = await sample();
  expect(s).toMatchObject({ virtualNodeReady: "True", outgoing: "Established", incoming: "Established" });
  expect((await trafficLog()).filter((l) => l.ok).length).toBeGreaterThan(0);
});

let before: Awaited<ReturnType<typeof snapshot>>;

test("liqoctl install upgrades milan then rome in place: same pods, UIDs and restarts, same reflected objects, the virtual node Ready and the peering Established throughout", async () => {
  before = await snapshot();
  expect(before.offloaded).toHaveLength(4);
  expect(before.remote).toHaveLength(4);
  expect(before.shadowPods).toHaveLength(4);
  const output: Record<string, string> = {};
  const took: Record<string, number> = {};
  const { samples, notWell, after } = await whileSampled(
    `the upgrade ${prev.version} → ${checkoutVersion()}`,
    async () => {
      for (const name of ["milan", "rome"]) {
        const t0 = performance.now();
        say(`$ liqoctl install generic --kubeconfig ${name}.kubeconfig   (${checkoutVersion()})`);
        output[name] = await run(
          [...liqoctl, "install", "generic", `--kubeconfig=${cluster(name).kubeconfig}`, "--timeout=10m"],
          `liqoctl install generic (${name}, the upgrade)`,
        );
        took[name] = (performance.now() - t0) / 1000;
      }
      await installed(checkoutVersion());
    },
  );
  console.log(`liqoctl install took ${took.milan!.toFixed(0)}s on milan, ${took.rome!.toFixed(0)}s on rome`);
  for (const name of ["milan", "rome"]) {
    expect(output[name]).toContain("liqo is installed in namespace liqo: its values stay");
    expect(output[name]).toMatch(/CRDs applied and Established/);
    expect(output[name]).toContain("liqo upgraded in namespace liqo");
  }
  expect(samples.length).toBeGreaterThan(10);
  expect(notWell).toEqual([]);
  expect(after).toEqual(before);
  // Every CRD of this chart is served as the chart has it, applied by liqoctl (Helm leaves crds/ alone).
  for (const c of [q.rome, q.milan])
    for (const crd of chartCrds(join(import.meta.dir, "../../chart"))) {
      const live = await c.get<KubeObject & { spec: unknown }>(Resources.customResourceDefinitions, crd.metadata.name);
      expect(JSON.stringify(live.metadata.managedFields)).toContain('"manager":"liqoctl"');
      expect((live.spec as { versions: { name: string }[] }).versions.map((v) => v.name)).toEqual(
        crd.spec.versions.map((v) => v.name),
      );
    }
  const version = await run(
    [...liqoctl, "version", `--kubeconfig=${cluster("rome").kubeconfig}`],
    "liqoctl version (rome)",
  );
  expect(version).toContain(`Server version: ${checkoutVersion()} (cluster rome`);
  // liqoctl info says the same to a script: the installed version, healthy, the peering with milan.
  const info = (...a: string[]) =>
    run([...liqoctl, "info", ...a, `--kubeconfig=${cluster("rome").kubeconfig}`], `liqoctl info ${a.join(" ")}`);
  expect(await info("--get", "installation.version")).toBe(`${checkoutVersion()}\n`);
  expect(await info("--get", "installation.healthy")).toBe("true\n");
  expect(await info("peer", "milan", "--get", "peerings.0.outgoing")).toBe("Established\n");
}, 1_200_000);

test("the way back: helm rollback on both clusters returns to the previous release, pods and peering kept", async () => {
  const helm = findHelm();
  // rome first this time: meanwhile the clusters run mixed versions the other way round.
  const { samples, notWell, after } = await whileSampled(`the rollback to ${prev.version}`, async () => {
    for (const name of ["rome", "milan"]) {
      say(`$ helm rollback liqo -n liqo --wait   (${name})`);
      await run(
        [
          helm,
          "rollback",
          "liqo",
          "-n",
          "liqo",
          "--wait",
          "--timeout",
          "10m",
          `--kubeconfig=${cluster(name).kubeconfig}`,
        ],
        `helm rollback liqo (${name})`,
      );
    }
    await installed(prev.version);
  });
  expect(samples.length).toBeGreaterThan(5);
  // 0.1.0's controller manager, started by the rollback, writes OutgoingPeering Pending for a few
  // seconds while it starts its virtual kubelet (0.2.0 keeps it Established): counted, not required.
  const pending = notWell.filter((s) => !("error" in s) && s.outgoing !== "Established");
  console.log(
    `the rollback: ${pending.length} of ${samples.length} samples with rome's OutgoingPeering not Established`,
  );
  expect(notWell.filter((s) => "error" in s || s.virtualNodeReady !== "True" || s.incoming !== "Established")).toEqual(
    [],
  );
  expect(await sample()).toMatchObject({ virtualNodeReady: "True", outgoing: "Established", incoming: "Established" });
  expect(after).toEqual(before);
}, 1_200_000);
