// Chaos: liqo's roles killed with SIGKILL at random moments while 1,000 pods are offloaded (and
// ConfigMaps written) and again while they are deleted, on the process rig with a kwok provider.
// Every role is killed at least once per phase and some several times; each comes back at once, as
// its Deployment would restart it. Afterwards the damage is counted: local pods without exactly one
// remote pod (lost), remote pods beyond one per local pod (duplicated), remote pods and ShadowPods
// with no local pod or no owner (orphans, left behind), ConfigMaps that differ from their sources.
// The virtual node's Ready condition is sampled all along against milan's own answers, and its
// untruths counted (see watchVirtualNode).
// The tests assert on those counts only; the times printed are for docs/reliability.md.
// LIQO_CHAOS_SEED replays the kill schedule of a run (the seed is printed).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { NamespaceOffloadingResource, ShadowPodResource } from "../../core/apis/index.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { RECREATIONS_ANNOTATION } from "../../core/apis/labels.ts";
import { startOffloadingRig, type ClusterInfo, type OffloadingRig } from "../e2e/offloading-rig.ts";
import { startAndWait, stopComponent } from "../rig/cluster.ts";
import { waitFor } from "../support/wait.ts";
import { seeded } from "./random.ts";
import { type Truth, truthCell, watchTruth } from "./truth.ts";

// biome-ignore lint/suspicious/noExplicitAny: pods and statuses read back from the cluster, asserted on a few fields
type Pod = KubeObject & { spec: Record<string, any>; status?: Record<string, any> };
type ConfigMap = KubeObject & { data?: Record<string, string> };

const PODS = Number(process.env.LIQO_CHAOS_PODS ?? 1000);
const CONFIGMAPS = 60;
const NS = "chaos";
const VIRTUAL_NODE = "liqo-milan";
const seed = Number(process.env.LIQO_CHAOS_SEED ?? Date.now() % 1_000_000);

let r: OffloadingRig;
let rome: ClusterInfo, milan: ClusterInfo;
let twin = "";
const table: string[] = [];
let portClashes = 0;

const rand = seeded(seed);

/**
 * Injects faults until `done` resolves: each one once in a shuffled order, then random ones, each
 * after a random pause of 0.3–2 s. Returns how often each was injected.
 */
async function faultsWhile(
  done: Promise<unknown>,
  faults: Record<string, () => Promise<void>>,
): Promise<Record<string, number>> {
  let finished = false;
  void done.finally(() => {
    finished = true;
  });
  const names = Object.keys(faults);
  const order = [...names].sort(() => rand() - 0.5);
  const count: Record<string, number> = Object.fromEntries(names.map((x) => [x, 0]));
  for (let i = 0; !finished || i < order.length; i++) {
    await Bun.sleep(300 + rand() * 1700);
    const name = i < order.length ? order[i]! : names[Math.floor(rand() * names.length)]!;
    await faults[name]!();
    count[name]!++;
  }
  return count;
}

/** SIGKILL of each liqo role, restarted at once. */
const roleKills = () => Object.fromEntries(r.roles().map((role) => [role, () => r.killAndRestart(role)]));

/** Stops a control-plane component, keeps it down `downMs`, starts it again in place and waits for its API server. */
async function restart(c: (typeof r.rig.clusters)[number], component: "kube-apiserver" | "etcd", downMs = 0) {
  await stopComponent(c, component);
  await Bun.sleep(downMs);
  // Its ports are in the kernel's ephemeral range: while it was down, a client's outgoing
  // connection may have been given one of them. Started again once that one is closed.
  for (let attempt = 1; ; attempt++) {
    try {
      // An API server restarted over 1,000 pods and their ShadowPods refills its watch caches
      // first; with the other test shard busy on the same two cores that took over 90 s once.
      await startAndWait(c, component, r.rig.bin, 300_000);
      break;
    } catch (err) {
      if (attempt === 30 || !/address already in use/.test(String(err))) throw err;
      portClashes++;
      await Bun.sleep(2000);
    }
  }
  // After etcd, the API server (still running) is ready again once it has reconnected.
  await waitFor(`${c.name}'s API server to answer`, () => r.rig.client(c.name).list(Resources.namespaces), {
    timeoutMs: 120_000,
  });
}

/** Long enough for the virtual node to notice (3 failed probes 5 s apart), so its NotReady is checked too. */
const LONG_OUTAGE_MS = 40_000;

/**
 * Each cluster's API server and etcd stopped and started again in place; and once per phase,
 * milan's API server kept down for LONG_OUTAGE_MS (later draws of that fault are plain restarts).
 */
const controlPlaneRestarts = () => {
  const milanCluster = r.rig.clusters.find((c) => c.name === milan.name)!;
  let longOutageDone = false;
  return {
    ...Object.fromEntries(
      r.rig.clusters.flatMap((c) =>
        (["kube-apiserver", "etcd"] as const).map((component) => [
          `${c.name}/${component}`,
          () => restart(c, component),
        ]),
      ),
    ),
    [`${milan.name}/kube-apiserver down ${LONG_OUTAGE_MS / 1000} s`]: () => {
      const downMs = longOutageDone ? 0 : LONG_OUTAGE_MS;
      longOutageDone = true;
      return restart(milanCluster, "kube-apiserver", downMs);
    },
  };
};

/** rome's virtual node for milan, sampled against milan's answers (tests/chaos/truth.ts). */
const watchVirtualNode = () => watchTruth(rome.client, VIRTUAL_NODE, milan.client);

/**
 * Runs `write` until it succeeds; calls refused while the webhook is down are retried and counted.
 * One refused for a minute fails the test with its last error.
 */
async function retried(write: () => Promise<unknown>, refusals: { n: number }) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await write();
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 409) return; // an earlier attempt got through
      if (Date.now() > deadline) throw err;
      refusals.n++;
      await Bun.sleep(200);
    }
  }
}

async function inParallel<T>(items: T[], width: number, work: (item: T) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

interface Damage {
  lost: string[];
  duplicated: number;
  orphans: string[];
  unowned: string[];
  recreated: number;
  configMapsDiffering: string[];
}

/** Compares the two clusters: what is missing, doubled or left over. */
async function damage(): Promise<Damage> {
  const local = (await rome.client.list<Pod>(Resources.pods, { namespace: NS })).items;
  const remote = (await milan.client.list<Pod>(Resources.pods, { namespace: twin })).items;
  const shadows = (await milan.client.list<KubeObject>(ShadowPodResource, { namespace: twin })).items;
  const allShadows = (await milan.client.list<KubeObject>(ShadowPodResource)).items;
  const localNames = new Set(local.map((p) => p.metadata.name));
  const shadowUids = new Set(shadows.map((s) => s.metadata.uid));
  const remoteByName = new Map<string, Pod[]>();
  for (const p of remote) remoteByName.set(p.metadata.name!, [...(remoteByName.get(p.metadata.name!) ?? []), p]);
  const lost = local
    .filter((p) => {
      const twins = remoteByName.get(p.metadata.name!) ?? [];
      return p.status?.phase !== "Running" || twins.length !== 1 || twins[0]!.status?.phase !== "Running";
    })
    .map(
      (p) => `${p.metadata.name} (local ${p.status?.phase}, remote ${remoteByName.get(p.metadata.name!)?.length ?? 0})`,
    );
  const localCms = (await rome.client.list<ConfigMap>(Resources.configMaps, { namespace: NS })).items.filter(
    (c) => c.metadata.name !== "kube-root-ca.crt",
  );
  const remoteCms = (await milan.client.list<ConfigMap>(Resources.configMaps, { namespace: twin })).items.filter(
    (c) => c.metadata.name !== "kube-root-ca.crt",
  );
  const remoteCm = new Map(remoteCms.map((c) => [c.metadata.name, c]));
  const configMapsDiffering = [
    ...localCms
      .filter((c) => JSON.stringify(remoteCm.get(c.metadata.name)?.data ?? null) !== JSON.stringify(c.data ?? {}))
      .map((c) => `${c.metadata.name} (differs or missing)`),
    ...remoteCms
      .filter((c) => !localCms.some((l) => l.metadata.name === c.metadata.name))
      .map((c) => `${c.metadata.name} (no source)`),
  ];
  return {
    lost,
    duplicated: remote.length - new Set(remote.map((p) => p.metadata.name)).size + (allShadows.length - shadows.length),
    orphans: [
      ...remote.filter((p) => !localNames.has(p.metadata.name)).map((p) => `pod ${p.metadata.name}`),
      ...shadows.filter((s) => !localNames.has(s.metadata.name)).map((s) => `ShadowPod ${s.metadata.name}`),
    ],
    unowned: remote
      .filter((p) => !p.metadata.ownerReferences?.some((o) => o.kind === "ShadowPod" && shadowUids.has(o.uid)))
      .map((p) => `pod ${p.metadata.name}`),
    recreated: shadows.reduce((n, s) => n + Number(s.metadata.annotations?.[RECREATIONS_ANNOTATION] ?? 0), 0),
    configMapsDiffering,
  };
}

const clean = (d: Damage) =>
  d.lost.length === 0 &&
  d.duplicated === 0 &&
  d.orphans.length === 0 &&
  d.unowned.length === 0 &&
  d.configMapsDiffering.length === 0;

/** Waits for the clusters to agree, then returns the counts and how long that took after the faults. */
async function converge(what: string, expectedPods: number): Promise<{ d: Damage; seconds: number }> {
  const from = Date.now();
  let last: Damage | undefined;
  await waitFor(
    what,
    async () => {
      last = await damage();
      const local = (await rome.client.list<Pod>(Resources.pods, { namespace: NS })).items.length;
      return local === expectedPods && clean(last);
    },
    {
      timeoutMs: 300_000,
      intervalMs: 2000,
      describe: () =>
        JSON.stringify(last, (_k, v) => (Array.isArray(v) && v.length > 10 ? [...v.slice(0, 10), "…"] : v)),
    },
  ).catch(() => undefined);
  return { d: last ?? (await damage()), seconds: (Date.now() - from) / 1000 };
}

const pod = (i: number): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: `burst-${i}`, namespace: NS, labels: { app: "burst" } },
  spec: { containers: [{ name: "app", image: "nginx" }], terminationGracePeriodSeconds: 0 },
});

beforeAll(async () => {
  r = await startOffloadingRig(
    [
      { name: "rome", region: "north" },
      { name: "milan", region: "south" },
    ],
    { nodes: Math.ceil(PODS / 100) },
  );
  rome = r.consumer;
  milan = r.providers[0]!;
  await rome.client.create(Resources.namespaces, { metadata: { name: NS } });
  await rome.client.create(NamespaceOffloadingResource, {
    apiVersion: "offloading.liqo.io/v1alpha1",
    kind: "NamespaceOffloading",
    metadata: { name: "offloading", namespace: NS },
    spec: { podOffloadingStrategy: "Remote" },
  } as KubeObject);
  twin = await waitFor(
    "the chaos namespace offloaded",
    async () => {
      // biome-ignore lint/suspicious/noExplicitAny: pods and statuses read back from the cluster, asserted on a few fields
      const o = await rome.client.find<KubeObject & { status?: Record<string, any> }>(
        NamespaceOffloadingResource,
        "offloading",
        NS,
      );
      return o?.status?.offloadingPhase === "Ready" ? (o.status.remoteNamespaceName as string) : undefined;
    },
    { timeoutMs: 120_000 },
  );
  console.log(`chaos seed ${seed} (LIQO_CHAOS_SEED=${seed} replays the kill schedule); ${PODS} pods`);
}, 600_000);

afterAll(async () => {
  if (table.length)
    console.log(["fault | phase | lost | duplicated | left behind | converged | virtual node", ...table].join("\n"));
  await r?.rig.down();
}, 120_000);

const everyPod = () => Array.from({ length: PODS }, (_, i) => i);
const createPods = (refusals: { n: number }) =>
  inParallel(everyPod(), 16, (i) => retried(() => rome.client.create(Resources.pods, pod(i)), refusals));
const deletePods = (refusals: { n: number }) =>
  inParallel(everyPod(), 16, (i) =>
    retried(() => rome.client.delete(Resources.pods, `burst-${i}`, NS).catch(ignoreGone), refusals),
  );
const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

/** What the provider still holds in the twin namespace. */
async function leftInMilan() {
  return {
    remotePods: (await milan.client.list(Resources.pods, { namespace: twin })).items.length,
    shadowPods: (await milan.client.list(ShadowPodResource, { namespace: twin })).items.length,
  };
}

function expectNoDamage(d: Damage) {
  expect({ lost: d.lost.slice(0, 10), count: d.lost.length }).toEqual({ lost: [], count: 0 });
  expect(d.duplicated).toBe(0);
  expect(d.orphans.slice(0, 10)).toEqual([]);
  expect(d.unowned.slice(0, 10)).toEqual([]);
  expect(d.configMapsDiffering.slice(0, 10)).toEqual([]);
}

/** The virtual node never said NotReady while milan answered, nor Ready while it did not; and it was read. */
function expectTruth(t: Truth) {
  expect(t.samples).toBeGreaterThan(0);
  expect({ falseNotReady: t.falseNotReady, falseReady: t.falseReady }).toEqual({ falseNotReady: 0, falseReady: 0 });
}

/** ConfigMaps: created, half of them changed (a key removed, one added), a quarter deleted. */
async function writeConfigMaps(refusals: { n: number }) {
  const cms = Array.from({ length: CONFIGMAPS }, (_, i) => `cm-${i}`);
  const write = (data: Record<string, string>, replace: boolean) => (name: string) =>
    retried(() => {
      const cm = { metadata: { name, namespace: NS }, data: { kept: name, ...data } };
      return replace ? rome.client.replace(Resources.configMaps, cm) : rome.client.create(Resources.configMaps, cm);
    }, refusals);
  await inParallel(cms, 8, write({ dropped: "x" }, false));
  await inParallel(cms.slice(0, CONFIGMAPS / 2), 8, write({ added: "y" }, true));
  await inParallel(cms.slice(CONFIGMAPS / 2, (CONFIGMAPS * 3) / 4), 8, (name) =>
    retried(() => rome.client.delete(Resources.configMaps, name, NS).catch(ignoreGone), refusals),
  );
}

test("roles killed at random while 1,000 pods are offloaded and ConfigMaps written: none lost, none doubled, no orphan", async () => {
  const refusals = { n: 0 };
  const truth = watchVirtualNode();
  const burst = (async () => {
    await createPods(refusals);
    await writeConfigMaps(refusals);
  })();
  const kills = await faultsWhile(burst, roleKills());
  await burst;
  const { d, seconds } = await converge("every offloaded pod to run once in milan, ConfigMaps equal", PODS);
  const t = await truth.stop();
  console.log(
    `kills during the burst: ${JSON.stringify(kills)}; writes refused and retried (webhook down): ${refusals.n}; ShadowPod re-creations: ${d.recreated}`,
  );
  table.push(
    `SIGKILL of every role, ${total(kills)} kills | ${PODS} pods offloaded | ${d.lost.length} | ${d.duplicated} | ${d.orphans.length + d.unowned.length} | ${seconds.toFixed(0)} s | ${truthCell(t)}`,
  );
  for (const n of Object.values(kills)) expect(n).toBeGreaterThan(0);
  expectNoDamage(d);
  expectTruth(t);
  // The counter itself: a stray pod in milan (no local pod, no ShadowPod) is seen as damage.
  await milan.client.create(Resources.pods, { ...pod(PODS), metadata: { name: "stray", namespace: twin } });
  const seen = await damage();
  expect(seen.orphans).toContain("pod stray");
  expect(seen.unowned).toContain("pod stray");
  await milan.client.delete(Resources.pods, "stray", twin, { gracePeriodSeconds: 0 });
}, 900_000);

test("roles killed at random while the 1,000 pods are deleted: nothing left behind in milan", async () => {
  const truth = watchVirtualNode();
  const deletions = deletePods({ n: 0 });
  const kills = await faultsWhile(deletions, roleKills());
  await deletions;
  const { d, seconds } = await converge("every remote pod and ShadowPod gone", 0);
  const t = await truth.stop();
  const left = await leftInMilan();
  table.push(
    `SIGKILL of every role, ${total(kills)} kills | ${PODS} pods deleted | 0 | ${d.duplicated} | ${left.remotePods + left.shadowPods} | ${seconds.toFixed(0)} s | ${truthCell(t)}`,
  );
  for (const n of Object.values(kills)) expect(n).toBeGreaterThan(0);
  expect(left).toEqual({ remotePods: 0, shadowPods: 0 });
  expectNoDamage(d);
  expectTruth(t);
}, 900_000);

test("API servers and etcds of both clusters restarted at random while 1,000 pods are offloaded, then deleted: none lost, none doubled, nothing left", async () => {
  const refusals = { n: 0 };
  let truth = watchVirtualNode();
  const burst = createPods(refusals);
  const restarts = await faultsWhile(burst, controlPlaneRestarts());
  await burst;
  const up = await converge("every offloaded pod to run once in milan after the restarts", PODS);
  const upTruth = await truth.stop();
  table.push(
    `API server and etcd restarts, ${total(restarts)} | ${PODS} pods offloaded | ${up.d.lost.length} | ${up.d.duplicated} | ${up.d.orphans.length + up.d.unowned.length} | ${up.seconds.toFixed(0)} s | ${truthCell(upTruth)}`,
  );
  console.log(
    `restarts during the burst: ${JSON.stringify(restarts)}; writes refused and retried: ${refusals.n}; restarts delayed by a port in use: ${portClashes}`,
  );
  for (const n of Object.values(restarts)) expect(n).toBeGreaterThan(0);
  expectNoDamage(up.d);
  expectTruth(upTruth);

  truth = watchVirtualNode();
  const deletions = deletePods(refusals);
  const more = await faultsWhile(deletions, controlPlaneRestarts());
  await deletions;
  const down = await converge("every remote pod and ShadowPod gone after the restarts", 0);
  const downTruth = await truth.stop();
  const left = await leftInMilan();
  table.push(
    `API server and etcd restarts, ${total(more)} | ${PODS} pods deleted | 0 | ${down.d.duplicated} | ${left.remotePods + left.shadowPods} | ${down.seconds.toFixed(0)} s | ${truthCell(downTruth)}`,
  );
  expect(left).toEqual({ remotePods: 0, shadowPods: 0 });
  expectNoDamage(down.d);
  expectTruth(downTruth);
}, 1_200_000);

function ignoreGone(err: unknown) {
  if (err instanceof KubeApiError && err.status === 404) return;
  throw err;
}
