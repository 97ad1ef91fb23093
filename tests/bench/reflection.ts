// Reflection throughput against the physical floor, in one run on one rig: how fast the engine
// reflects 5,000 ConfigMaps and 1,000 Services with their EndpointSlices, against how fast Bun
// writes the same objects straight to milan's API server; with the engine's peak RSS and CPU-seconds.
// Like for like: the raw writer writes the same three kinds at once with as many requests in flight
// per kind as the engine has workers per reflector, and both phases end when a watch on milan has
// seen every object. The machine is shared, so its load drifts (one phase measured 75 objects/s and
// the next 240 on the same code): the objects are split into rounds and the phases alternate (raw,
// reflect, reflect, raw…), so each reflection round has a raw round next to it; the per-round
// ratios and their median are printed with the totals. Set-up is untimed and done before both
// phases of a round, and each phase starts when milan's controllers have caught up. Arrivals are
// counted by the watch handlers themselves (no polling): the bench's bookkeeping costs next to nothing.
import { Resources } from "../../core/kube/resources.ts";
import { createKubeClient } from "../../core/kube/client.ts";
import { createReflectionEngine } from "../../core/reflection/engine/engine.ts";
import { builtinWasm } from "../../reflectors/index.ts";
import { startTestRig } from "../rig/testing.ts";
import { type Batch, createArrivals, writeAll } from "./arrivals.ts";
import { heading, row } from "./stats.ts";
import { waitFor } from "../support/wait.ts";

const scale = Number(process.env.BENCH_SCALE ?? 1);
const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 4));
const workers = Math.max(1, Number(process.env.BENCH_WORKERS ?? 16));
const configMaps = Math.round((5000 * scale) / rounds);
const services = Math.round((1000 * scale) / rounds);

const rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
const local = rig.client("rome");
const remote = rig.client("milan");
// The engine's own clients (rig.client caches one per cluster), so their request counts are the engine's alone.
const engineLocal = createKubeClient({ kubeconfig: rig.clusters[0]!.kubeconfig });
const engineRemote = createKubeClient({ kubeconfig: rig.clusters[1]!.kubeconfig });

function objects(namespace: string, withSlices: boolean): Batch {
  const cms = Array.from({ length: configMaps }, (_, i) => ({
    metadata: { name: `cm-${i}`, namespace },
    data: { payload: "x".repeat(256), i: String(i) },
  }));
  const svcs = Array.from({ length: services }, (_, i) => ({
    metadata: { name: `svc-${i}`, namespace },
    spec: { selector: { app: `a${i}` }, ports: [{ port: 80 }] },
  }));
  // What the reflector writes for a Service's slice while it has no pods: labels, no endpoints.
  const slices = Array.from({ length: withSlices ? services : 0 }, (_, i) => ({
    metadata: {
      name: `svc-${i}-raw`,
      namespace,
      labels: {
        "kubernetes.io/service-name": `svc-${i}`,
        "endpointslice.kubernetes.io/managed-by": "endpointslice.reflection.liqo.io",
      },
    },
    addressType: "IPv4",
    ports: [{ name: "", port: 80, protocol: "TCP" }],
    endpoints: [],
  }));
  return [
    [Resources.configMaps, cms],
    [Resources.services, svcs],
    [Resources.endpointSlices, slices],
  ];
}

const arrivals = createArrivals(remote, [Resources.configMaps, Resources.services, Resources.endpointSlices]);
const counters = arrivals.informers;
const arrival = (keys: string[]) => arrivals.arrival(keys, 15 * 60_000);

const keysOf = (ns: string, batch: Batch) =>
  batch.flatMap(([res, items]) => items.map((o) => `${ns}/${res.kind}/${o.metadata.name}`));

try {
  await Promise.all(counters.map((c) => c.waitForSync()));
  const engine = createReflectionEngine({
    local: engineLocal,
    remote: engineRemote,
    localClusterId: "rome-id",
    remoteClusterId: "milan-id",
    workers,
  });
  for (const b of ["configmaps", "services", "endpointslices"] as const)
    await engine.addPlugin(await builtinWasm(b), { trust: "builtin", source: b });

  const raw = { objects: 0, seconds: 0 };
  const refl = { objects: 0, seconds: 0, cpu: 0, requests: 0, expected: 0 };
  let peakRss = process.memoryUsage.rss();
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, 250);
  const pairRatios: number[] = [];
  heading(
    `${rounds} rounds of ${configMaps} ConfigMaps + ${services} Services (+ their EndpointSlices); ${workers} in flight per kind`,
  );
  // milan's EndpointSlice controller makes a slice for every Service written there, and keeps at it
  // after a phase has counted its own objects: each phase starts once that backlog is gone, so no
  // phase pays for the one before it.
  const settled = () =>
    waitFor(
      "milan's EndpointSlice controller to catch up",
      () => {
        const svcs = counters[1]!.list().filter((o) => /^(raw|bench)-/.test(o.metadata.namespace ?? "")).length;
        const made = counters[2]!
          .list()
          .filter(
            (o) =>
              o.metadata.labels?.["endpointslice.kubernetes.io/managed-by"] === "endpointslice-controller.k8s.io" &&
              /^(raw|bench)-/.test(o.metadata.namespace ?? ""),
          ).length;
        return made >= svcs;
      },
      { timeoutMs: 600_000, intervalMs: 250 },
    );

  const rawPhase = async (r: number): Promise<number> => {
    const rawNs = `raw-${r}`;
    const rawBatch = objects(rawNs, true);
    await settled();
    const t = performance.now();
    await writeAll(remote, rawBatch, workers);
    const rawDone = await arrival(keysOf(rawNs, rawBatch));
    const rawSec = (performance.now() - t) / 1000;
    raw.objects += rawDone;
    raw.seconds += rawSec;
    row(`round ${r + 1}: raw API writes`, rawDone / rawSec, "objects/s");
    return rawDone / rawSec;
  };

  const reflectPhase = async (r: number, ns: string, expected: string[]): Promise<number> => {
    await settled();
    const cpu0 = process.cpuUsage();
    const req0 = engineRemote.stats.requests + engineLocal.stats.requests;
    const t = performance.now();
    await engine.addNamespacePair({ localNamespace: ns, remoteNamespace: `${ns}-rome` });
    const done = await arrival(expected);
    const sec = (performance.now() - t) / 1000;
    const cpu = process.cpuUsage(cpu0);
    refl.objects += done;
    refl.seconds += sec;
    refl.expected += expected.length;
    refl.cpu += (cpu.user + cpu.system) / 1e6;
    refl.requests += engineRemote.stats.requests + engineLocal.stats.requests - req0;
    row(`round ${r + 1}: reflection`, done / sec, "objects/s");
    return done / sec;
  };

  for (let r = 0; r < rounds; r++) {
    // Untimed set-up of both phases first: the namespaces (a fresh namespace keeps the controllers
    // busy for a moment) and the objects to reflect, made locally; rome's controller adds one
    // slice per Service.
    const ns = `bench-${r}`;
    await remote.create(Resources.namespaces, { metadata: { name: `raw-${r}` } });
    await local.create(Resources.namespaces, { metadata: { name: ns } });
    await remote.create(Resources.namespaces, { metadata: { name: `${ns}-rome` } });
    const batch = objects(ns, false);
    await writeAll(local, batch, workers);
    const slices = async () => (await local.list(Resources.endpointSlices, { namespace: ns })).items;
    await waitFor(`${services} EndpointSlices in ${ns}`, async () => (await slices()).length >= services, {
      timeoutMs: 600_000,
      intervalMs: 500,
    });
    const expected = [
      ...keysOf(`${ns}-rome`, batch),
      ...(await slices()).map((x) => `${ns}-rome/EndpointSlice/${x.metadata.name}`),
    ];

    // The order alternates, so neither phase is always the one after the other's leftovers.
    let rawRate: number, reflRate: number;
    if (r % 2 === 0) {
      rawRate = await rawPhase(r);
      reflRate = await reflectPhase(r, ns, expected);
    } else {
      reflRate = await reflectPhase(r, ns, expected);
      rawRate = await rawPhase(r);
    }
    pairRatios.push(reflRate / rawRate);
  }
  clearInterval(sampler);

  heading("totals");
  const rawRate = raw.objects / raw.seconds;
  const reflRate = refl.objects / refl.seconds;
  row("raw write throughput", rawRate, "objects/s");
  row("objects reflected", `${refl.objects}/${refl.expected}`);
  row("reflection throughput", reflRate, "objects/s");
  row("ratio to raw API writes (target >= 0.8)", reflRate / rawRate, "x");
  const sorted = pairRatios.slice().sort((a, b) => a - b);
  const median =
    sorted.length % 2 ? sorted[sorted.length >> 1]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  row("per-round ratios (reflection / raw of the same round)", pairRatios.map((x) => x.toFixed(2)).join(" "));
  row("median per-round ratio", median, "x");
  row("engine API requests per reflected object", refl.requests / Math.max(1, refl.objects), "req");
  row("bench process peak RSS (engine + counters)", peakRss / 2 ** 20, "MiB");
  row("CPU-seconds (user+system) while reflecting", refl.cpu, "s");
  for (const p of engine.plugins())
    row(`plugin ${p.name}: runs / memo answers / recycles`, `${p.calls} / ${p.memoHits} / ${p.recycles}`);
  for (const x of engine.reflectors()) row(`reflector ${x.name}: handled / failed`, `${x.handled} / ${x.failed}`);
  // Outcomes say where requests went: apply = a write, unchanged = a write avoided.
  for (const line of (await engine.registry.expose()).split("\n"))
    if (line.startsWith("liqo_reflection_reconciles_total{")) process.stdout.write(`  ${line}\n`);
  await Promise.all(counters.map((c) => c.stop()));
  await engine.stop();
} finally {
  await rig.down();
}
