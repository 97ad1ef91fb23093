// What the plugin host's one optional layer, the decision memo (core/reflection/memo.ts), buys a
// user, measured against the rig's real API servers: the engine reflects a namespace of ConfigMaps
// and Services (with the EndpointSlices rome's controller makes) from rome to milan, once per
// configuration: built-ins (main thread, live wire) and the same plugins loaded as drop-ins (a
// worker, JSON wire), each with the memo on and off (the defaults: off for built-ins, on for
// drop-ins). Drop-ins can be quarantined on a saturated machine (their 100 ms budget per call is
// enforced): a phase then gives up after 3 minutes and says so. Per phase: objects reflected per second, CPU
// per reflected object (the whole process: the engine and the watches counting arrivals), mean
// plugin call as the engine times it, and the JS heap the phase left behind. The configurations
// run in a rotated order in every repetition, so the machine's drifting load falls on all of
// them; ratios are to "builtin" of the same repetition, and the spread of "builtin" against
// itself is the noise. Prints, asserts nothing.
//
// Until the hot path was cut down to this (issue 22), the same bench switched six more layers
// (generated replays, view trees, generated finishers, generated edit lists, a last-answer
// shortcut, answer caches): docs/reflection.md has that run's numbers.
//
// Usage: bun tests/bench/reflection-layers.ts   (BENCH_REPS, default 3; BENCH_SCALE, default 1:
// 500 ConfigMaps and 100 Services per phase; BENCH_WORKERS, default 16; BENCH_ONLY=builtin,builtin-memo;
// BENCH_CALL_RUNS, runs of 32 calls per configuration in the per-call table, default 600;
// BENCH_BEFORE=<checkout>: that checkout's engine as one more configuration, "before")
import { createKubeClient } from "../../core/kube/client.ts";
import { Resources } from "../../core/kube/resources.ts";
import type { KubeObject as PluginObject, ReflectionContext } from "../../core/reflection/abi.ts";
import { createReflectionEngine } from "../../core/reflection/engine/engine.ts";
import type { ReflectorPlugin, Trust } from "../../core/reflection/host.ts";
import { type BuiltinName, builtinWasm, loadBuiltin } from "../../reflectors/index.ts";
import * as fixtures from "../../reflectors/samples.ts";
import { startTestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { type Batch, createArrivals, writeAll } from "./arrivals.ts";
import { heading } from "./stats.ts";

const reps = Math.max(1, Number(process.env.BENCH_REPS ?? 3));
const scale = Number(process.env.BENCH_SCALE ?? 1);
const workers = Math.max(1, Number(process.env.BENCH_WORKERS ?? 16));
const configMaps = Math.round(500 * scale);
const services = Math.round(100 * scale);

interface Config {
  name: string;
  trust: Trust;
  memoEntries: number | undefined;
  /** Another checkout's engine (BENCH_BEFORE): the code before a change, in the same run. */
  engine?: typeof createReflectionEngine;
  load?: typeof loadBuiltin;
}
const configs: Config[] = [
  { name: "builtin", trust: "builtin" as const, memoEntries: undefined },
  { name: "builtin-memo", trust: "builtin" as const, memoEntries: 8192 },
  { name: "dropin", trust: "dropin" as const, memoEntries: undefined },
  { name: "dropin-no-memo", trust: "dropin" as const, memoEntries: 0 },
].filter((c) => !process.env.BENCH_ONLY || process.env.BENCH_ONLY.split(",").includes(c.name));
// BENCH_BEFORE=<a checkout of older code, e.g. from git archive>: its engine with built-ins, as one more configuration.
if (process.env.BENCH_BEFORE) {
  const mod = await import(`${process.env.BENCH_BEFORE}/core/reflection/engine/engine.ts`);
  const reflectors = await import(`${process.env.BENCH_BEFORE}/reflectors/index.ts`);
  configs.push({
    name: "before",
    trust: "builtin",
    memoEntries: undefined,
    engine: mod.createReflectionEngine,
    load: reflectors.loadBuiltin,
  });
}
const BASE = "builtin";

const rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
const local = rig.client("rome");
const remote = rig.client("milan");

function objects(namespace: string): Batch {
  const cms = Array.from({ length: configMaps }, (_, i) => ({
    metadata: { name: `cm-${i}`, namespace, labels: { app: "bench" } },
    data: { payload: "x".repeat(256), i: String(i) },
  }));
  const svcs = Array.from({ length: services }, (_, i) => ({
    metadata: { name: `svc-${i}`, namespace },
    spec: { selector: { app: `a${i}` }, ports: [{ port: 80 }] },
  }));
  return [
    [Resources.configMaps, cms],
    [Resources.services, svcs],
  ];
}

// Arrivals in milan, counted by the watch handlers (no polling).
const arrivals = createArrivals(remote, [Resources.configMaps, Resources.services, Resources.endpointSlices]);
const counters = arrivals.informers;
const arrival = (keys: string[]) => arrivals.arrival(keys, 3 * 60_000);

/** milan's EndpointSlice controller makes a slice per reflected Service: a phase starts once it has caught up. */
const settled = () =>
  waitFor(
    "milan's EndpointSlice controller to catch up",
    () => {
      const svcs = counters[1]!.list().filter((o) => o.metadata.namespace?.startsWith("layers-")).length;
      const made = counters[2]!
        .list()
        .filter(
          (o) =>
            o.metadata.labels?.["endpointslice.kubernetes.io/managed-by"] === "endpointslice-controller.k8s.io" &&
            o.metadata.namespace?.startsWith("layers-"),
        ).length;
      return made >= svcs;
    },
    { timeoutMs: 600_000, intervalMs: 250 },
  );

/** Sum and count of a histogram over every label set, from the engine's own registry. */
function histogram(text: string, name: string): { sum: number; count: number } {
  let sum = 0;
  let count = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(`${name}_sum`)) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
    else if (line.startsWith(`${name}_count`)) count += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return { sum, count };
}

interface Sample {
  rate: number;
  cpuUs: number;
  callUs: number;
  heapMiB: number;
  runs: number;
  memoHits: number;
}
const samples = new Map<string, Sample[]>(configs.map((c) => [c.name, []]));
const wasm = {
  configmaps: await builtinWasm("configmaps"),
  services: await builtinWasm("services"),
  endpointslices: await builtinWasm("endpointslices"),
};

async function phase(rep: number, config: Config): Promise<void> {
  const ns = `layers-${rep < 0 ? "warmup" : rep}-${config.name.toLowerCase()}`;
  await local.create(Resources.namespaces, { metadata: { name: ns } });
  await remote.create(Resources.namespaces, { metadata: { name: `${ns}-rome` } });
  const batch = objects(ns);
  await writeAll(local, batch, workers);
  const slices = async () => (await local.list(Resources.endpointSlices, { namespace: ns })).items;
  await waitFor(`${services} EndpointSlices in ${ns}`, async () => (await slices()).length >= services, {
    timeoutMs: 600_000,
    intervalMs: 500,
  });
  const expected = [
    ...batch.flatMap(([res, items]) => items.map((o) => `${ns}-rome/${res.kind}/${o.metadata.name}`)),
    ...(await slices()).map((x) => `${ns}-rome/EndpointSlice/${x.metadata.name}`),
  ];
  // A fresh engine with its own clients and registry per phase: nothing carries over between configurations.
  const engine = (config.engine ?? createReflectionEngine)({
    local: createKubeClient({ kubeconfig: rig.clusters[0]!.kubeconfig }),
    remote: createKubeClient({ kubeconfig: rig.clusters[1]!.kubeconfig }),
    localClusterId: "rome-id",
    remoteClusterId: "milan-id",
    workers,
    memoEntries: config.memoEntries,
  });
  for (const [name, bytes] of Object.entries(wasm))
    await engine.addPlugin(bytes, { trust: config.trust, source: name });
  await settled();
  Bun.gc(true);
  const heap0 = process.memoryUsage().heapUsed;
  const cpu0 = process.cpuUsage();
  const t = performance.now();
  await engine.addNamespacePair({ localNamespace: ns, remoteNamespace: `${ns}-rome` });
  const done = await arrival(expected);
  const sec = (performance.now() - t) / 1000;
  const cpu = process.cpuUsage(cpu0);
  Bun.gc(true);
  const heap = process.memoryUsage().heapUsed - heap0;
  const call = histogram(await engine.registry.expose(), "liqo_reflection_plugin_call_seconds");
  const plugins = engine.plugins();
  const sample: Sample = {
    rate: done / sec,
    cpuUs: (cpu.user + cpu.system) / done,
    callUs: (call.sum / Math.max(1, call.count)) * 1e6,
    heapMiB: heap / 2 ** 20,
    runs: plugins.reduce((n, p) => n + p.calls, 0),
    memoHits: plugins.reduce((n, p) => n + p.memoHits, 0),
  };
  if (rep >= 0) samples.get(config.name)!.push(sample);
  if (done < expected.length) console.log(`  !! ${config.name}: only ${done}/${expected.length} objects arrived`);
  console.log(
    `  ${rep < 0 ? "warm-up" : `rep ${rep + 1}`} ${config.name.padEnd(14)} ${sample.rate.toFixed(0).padStart(6)} objects/s ${sample.cpuUs.toFixed(0).padStart(6)} µs CPU/object ${sample.callUs.toFixed(1).padStart(6)} µs/plugin call  heap +${sample.heapMiB.toFixed(1)} MiB  runs ${sample.runs} memo ${sample.memoHits}`,
  );
  await engine.stop();
}

const median = (xs: number[]) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const spread = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;

/**
 * One plugin call alone, per configuration, on the sample objects (reflectors/samples.ts), each
 * call with a new version (an annotation and the resourceVersion changed), as informers deliver
 * them; the decision's JSON body included. Runs of 32 calls per configuration, rotated, p50 of
 * the per-call means of the runs.
 */
async function perCall(): Promise<void> {
  const ctx: ReflectionContext = { ...fixtures.ctx, remoteRestarts: 1 };
  const lookup = (req: { kind: string; name: string }) =>
    req.kind === "ServiceAccount" && req.name === "builder" ? fixtures.serviceAccount : null;
  const cases: Array<{
    label: string;
    plugin: BuiltinName;
    backward: boolean;
    source: PluginObject;
    target: PluginObject | null;
  }> = [
    { label: "configmaps forward", plugin: "configmaps", backward: false, source: fixtures.configMap, target: null },
    { label: "services forward", plugin: "services", backward: false, source: fixtures.service, target: null },
    {
      label: "endpointslices forward",
      plugin: "endpointslices",
      backward: false,
      source: fixtures.endpointSlice,
      target: null,
    },
    { label: "pods forward (4 KB)", plugin: "pods", backward: false, source: fixtures.pod, target: null },
    {
      label: "pods backward (status)",
      plugin: "pods",
      backward: true,
      source: fixtures.remotePod,
      target: fixtures.pod,
    },
  ];
  const RUN = 32;
  const runs = Math.max(50, Number(process.env.BENCH_CALL_RUNS ?? 600));
  heading(
    `one plugin call, µs (p50 of runs of ${RUN} calls; JSON body included). changed: each call a new version with an annotation changed (what the engine mostly gets); same: only the resourceVersion changed`,
  );
  // Built-ins only: a drop-in's call is a worker round trip, measured by the phases above.
  const called = configs.filter((cfg) => cfg.trust === "builtin");
  console.log(`  ${"case".padEnd(34)} ${called.map((c) => c.name.padStart(16)).join(" ")}`);
  for (const c of cases)
    for (const changed of [true, false]) {
      const loaded: ReflectorPlugin[] = [];
      for (const cfg of called)
        loaded.push(await (cfg.load ?? loadBuiltin)(c.plugin, { lookup, memoEntries: cfg.memoEntries }));
      let n = 0;
      const next = (): PluginObject => {
        n++;
        const m = c.source.metadata ?? {};
        const annotations = changed ? { ...m.annotations, "bench/rev": String(n) } : m.annotations;
        return { ...c.source, metadata: { ...m, resourceVersion: `b-${n}`, annotations } };
      };
      const times: number[][] = called.map(() => []);
      const objs: PluginObject[] = new Array(RUN);
      for (let r = -runs; r < runs; r++) {
        // The first half warms every configuration up (the engine's JIT tiers).
        for (let k = 0; k < called.length; k++) {
          const i = (k + r + runs) % called.length;
          const p = loaded[i]!;
          for (let j = 0; j < RUN; j++) objs[j] = next();
          const t0 = performance.now();
          for (let j = 0; j < RUN; j++) {
            const d = c.backward ? p.backwardSync(objs[j]!, c.target, ctx) : p.forwardSync(objs[j]!, c.target, ctx);
            if (d.decision === "apply") JSON.stringify(d.object);
          }
          if (r >= 0) times[i]!.push(((performance.now() - t0) * 1000) / RUN);
        }
      }
      const label = `${c.label} (${changed ? "changed" : "same"})`;
      console.log(`  ${label.padEnd(34)} ${times.map((t) => median(t).toFixed(2).padStart(16)).join(" ")}`);
      for (const p of loaded) await p.close();
    }
}

try {
  await Promise.all(counters.map((c) => c.waitForSync()));
  heading(
    `${reps} repetitions × ${configs.length} configurations, each ${configMaps} ConfigMaps + ${services} Services (+ slices); ${workers} workers per reflector`,
  );
  // One unrecorded phase first: the process's own warm-up (the client, the informers, the engine's code) is nobody's.
  await phase(-1, configs[0]!);
  for (let r = 0; r < reps; r++) {
    // Rotated order: each configuration runs early in one repetition and late in another.
    for (let i = 0; i < configs.length; i++) await phase(r, configs[(i + r) % configs.length]!);
  }
  heading(`medians over repetitions; ratio = configuration ÷ ${BASE} of the same repetition (median, min–max)`);
  const base = samples.get(BASE);
  console.log(
    `  ${"config".padEnd(14)} ${"objects/s".padStart(9)} ${"ratio".padStart(6)} ${"spread".padStart(11)} | ${"CPU µs/obj".padStart(10)} ${"ratio".padStart(6)} ${"spread".padStart(11)} | ${"µs/call".padStart(7)} | ${"heap MiB".padStart(8)}`,
  );
  for (const c of configs) {
    const xs = samples.get(c.name)!;
    const ratio = (f: (s: Sample) => number) =>
      base ? xs.map((s, i) => f(s) / f(base[i]!)) : xs.map(() => Number.NaN);
    const rr = ratio((s) => s.rate);
    const cr = ratio((s) => s.cpuUs);
    console.log(
      `  ${c.name.padEnd(14)} ${median(xs.map((s) => s.rate))
        .toFixed(0)
        .padStart(9)} ${median(rr).toFixed(2).padStart(6)} ${spread(rr).padStart(11)} | ${median(xs.map((s) => s.cpuUs))
        .toFixed(0)
        .padStart(10)} ${median(cr).toFixed(2).padStart(6)} ${spread(cr).padStart(11)} | ${median(
        xs.map((s) => s.callUs),
      )
        .toFixed(1)
        .padStart(7)} | ${median(xs.map((s) => s.heapMiB))
        .toFixed(1)
        .padStart(8)}`,
    );
  }
  if (base && base.length > 1) {
    // The noise: the base configuration against its own median, repetition by repetition.
    const m = median(base.map((s) => s.rate));
    const mc = median(base.map((s) => s.cpuUs));
    console.log(
      `  noise (${BASE} ÷ its median): objects/s ${spread(base.map((s) => s.rate / m))}, CPU/object ${spread(base.map((s) => s.cpuUs / mc))}`,
    );
  }
  await Promise.all(counters.map((c) => c.stop()));
  await perCall();
} finally {
  await rig.down();
}
