// Per-object cost of each built-in reflector through the wasm host, against its plain
// TypeScript twin, on the same objects in the same run; then the 1,000,000-call run that
// shows memory stays flat. Prints numbers, asserts nothing.
//
// What one "call" is, for both sides: from the cached object(s) to the JSON body the engine
// sends to the API server (create or server-side apply), i.e. transform + JSON.stringify of the
// result: the engine hands decision.object to the client, which stringifies it. The wasm side
// also includes everything the host does around the plugin: projection of the declared fields,
// their JSON, the bulk copy in, the call, the answer's JSON.parse, the checks (namespace,
// ownership, kind) and the edits. The transform-only numbers are printed too.
//
// Built-ins run live (docs/plugin-abi.md "Live calls"): the plugin reads the projection of the
// cached object by handle, and the decision memo answers a call equal in everything the plugin
// is shown to an earlier one of the same object. Columns, each side getting the same object:
//   new    — a new version whose content changed (an annotation and the resourceVersion): what
//            the engine gets from an informer; the plugin runs (the annotations are shown to it).
//   unread — only a new resourceVersion (a ConfigMap's data or a Service's status was updated):
//            the memo answers when the plugin is not shown what changed.
//   warm   — the same object again (a resync, a remote-side event, a retry).
//   run    — the "new" objects with the memo off: the plugin runs on every call (live wire).
//   json   — the same with the JSON wire (live: false), what drop-ins in workers use and what
//            built-ins used before the live wire.
//
// Usage: bun tests/bench/reflector-calls.ts [--calls 1000000] [--iterations 20000] [--warmup 5000] [--skip-memory] [--skip-breakdown]
import type { Decision, KubeObject, ReflectionContext } from "../../core/reflection/abi.ts";
import type { ReflectorPlugin } from "../../core/reflection/host.ts";
import { loadBuiltin, type BuiltinName } from "../../reflectors/index.ts";
import { remoteConfigMap } from "../../reflectors/configmaps/twin.ts";
import { remoteEndpointSlice } from "../../reflectors/endpointslices/twin.ts";
import { remoteIngress } from "../../reflectors/ingresses/twin.ts";
import { localPodStatus, remotePodWith } from "../../reflectors/pods/twin.ts";
import { remoteSecret } from "../../reflectors/secrets/twin.ts";
import { remoteService } from "../../reflectors/services/twin.ts";
import { remotePvc } from "../../reflectors/storage/twin.ts";
import type { Twin } from "../../reflectors/twin-helpers.ts";
import * as s from "../../reflectors/samples.ts";
import { breakdown } from "./reflector-breakdown.ts";

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
// 20,000 calls per pair: a pair of 3,000 lasted about 3 ms, less than the engine takes to compile
// a new generated function in the background, and some pairs measured the code before that.
const ITER = arg("iterations", 20000);
const WARMUP = arg("warmup", 5000);
const MEMORY_CALLS = arg("calls", 1_000_000);

const lookup = (req: { kind: string; name: string }) =>
  req.kind === "ServiceAccount" && req.name === "builder" ? s.serviceAccount : null;
const ctx: ReflectionContext = { ...s.ctx, remoteRestarts: 1 };

interface Case {
  label: string;
  plugin: BuiltinName;
  direction: "forward" | "backward";
  source: KubeObject;
  target: KubeObject | null;
  twin: Twin;
}
const cases: Case[] = [
  {
    label: "pods forward (4 KB pod)",
    plugin: "pods",
    direction: "forward",
    source: s.pod,
    target: null,
    twin: remotePodWith((sa) => lookup({ kind: "ServiceAccount", name: sa })),
  },
  {
    label: "pods backward (status)",
    plugin: "pods",
    direction: "backward",
    source: s.remotePod,
    target: s.pod,
    twin: localPodStatus,
  },
  {
    label: "services forward",
    plugin: "services",
    direction: "forward",
    source: s.service,
    target: null,
    twin: remoteService,
  },
  {
    label: "endpointslices forward",
    plugin: "endpointslices",
    direction: "forward",
    source: s.endpointSlice,
    target: null,
    twin: remoteEndpointSlice,
  },
  {
    label: "ingresses forward",
    plugin: "ingresses",
    direction: "forward",
    source: s.ingress,
    target: null,
    twin: remoteIngress,
  },
  {
    label: "storage forward (PVC)",
    plugin: "storage",
    direction: "forward",
    source: s.pvc,
    target: null,
    twin: remotePvc,
  },
  {
    label: "configmaps forward",
    plugin: "configmaps",
    direction: "forward",
    source: s.configMap,
    target: null,
    twin: remoteConfigMap,
  },
  {
    label: "secrets forward (SA token)",
    plugin: "secrets",
    direction: "forward",
    source: s.saSecret,
    target: null,
    twin: remoteSecret,
  },
];

function pct(samples: number[], p: number): number {
  const sorted = samples.slice().sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 1000;
}

const body = (d: Decision) => (d.decision === "apply" ? JSON.stringify(d.object) : "");

/** A fresh resourceVersion each call; with `read`, also a changed annotation (read by every plugin). */
function freshObjects(obj: KubeObject, read: boolean): () => KubeObject {
  let n = 0;
  const meta = obj.metadata ?? {};
  return () => {
    n++;
    const metadata = { ...meta, resourceVersion: `bench-${n}` };
    if (read) metadata.annotations = { ...meta.annotations, "bench.liqo.io/revision": String(n) };
    return { ...obj, metadata };
  };
}

/**
 * Times both sides interleaved, call by call, so that both see the same machine: this host is
 * shared, and timing one side after the other mostly measures who got the CPU.
 */
function measurePair(a: () => unknown, b: () => unknown, between: () => void = () => {}): [number[], number[]] {
  // Warm-up: both sides reach the engine's optimizing tiers. The wasm side's hot code is generated
  // after its first calls (replays, finishers) and needs its own thousands of calls to tier up;
  // with 500 the first case of a process measured that climb, not a steady state.
  for (let i = 0; i < WARMUP; i++) {
    a();
    b();
    between();
  }
  const ta: number[] = new Array(ITER);
  const tb: number[] = new Array(ITER);
  for (let i = 0; i < ITER; i++) {
    let t0 = performance.now();
    a();
    ta[i] = performance.now() - t0;
    t0 = performance.now();
    b();
    tb[i] = performance.now() - t0;
    between(); // untimed: what both sides see next
  }
  return [ta, tb];
}

/**
 * Per-object cost in runs: BATCH calls of one side on BATCH objects made beforehand, then the
 * same of the other side, alternating; each batch gives a per-call mean, and the percentiles
 * are over batches. This is how the engine calls a reflector (a worker takes queue items of
 * one kind one after another), and it keeps the timer's own cost (~50 ns) and the other side's
 * cache footprint out of each call. The single-call table above shows the other extreme.
 */
const BATCH = 32;
function measureBatches(
  a: (o: KubeObject) => unknown,
  b: (o: KubeObject) => unknown,
  next: () => KubeObject,
): [number[], number[]] {
  const rounds = Math.max(100, Math.floor(ITER / 8));
  const ta: number[] = [];
  const tb: number[] = [];
  const objs: KubeObject[] = new Array(BATCH);
  for (let r = -Math.ceil(WARMUP / BATCH); r < rounds; r++) {
    // the first rounds warm both sides up
    for (let i = 0; i < BATCH; i++) objs[i] = next();
    let t0 = performance.now();
    for (let i = 0; i < BATCH; i++) a(objs[i]!);
    const da = (performance.now() - t0) / BATCH;
    t0 = performance.now();
    for (let i = 0; i < BATCH; i++) b(objs[i]!);
    const db = (performance.now() - t0) / BATCH;
    if (r >= 0) {
      ta.push(da);
      tb.push(db);
    }
  }
  return [ta, tb];
}

const plugins = new Map<BuiltinName, ReflectorPlugin>();
const pad = (x: string, n: number) => x.padEnd(n);
const f1 = (n: number) => n.toFixed(1).padStart(7);
const rt = (n: number) => `${n.toFixed(2).padStart(5)}x`;

console.log(
  `reflector call cost, ${ITER} single calls each, the two sides interleaved call by call, µs; wasm = built-in plugin through the host (forwardSync/backwardSync)`,
);
console.log(
  `every cell = transform + JSON.stringify of the result (the body the engine sends); each ratio is against the twin timed in the same interleaved pair`,
);
console.log(
  `new = a changed version (annotation + resourceVersion); unread = only a new resourceVersion; warm = the same object; run = new with the memo off (live wire); json = the same over the JSON wire (see the header of this file)`,
);
console.log(
  `${pad("case", 28)} ${pad("   ts p50", 9)} ${pad("  new p50", 9)} ${pad(" ratio", 6)} ${pad("unread p50", 10)} ${pad(" ratio", 6)} ${pad(" warm p50", 9)} ${pad(" ratio", 6)} ${pad("  run p50", 9)} ${pad(" ratio", 6)} ${pad(" json p50", 9)} ${pad(" ratio", 6)} | ${pad("   ts p99", 9)} ${pad("  new p99", 9)} ${pad("  run p99", 9)}`,
);
const ratios: Array<[string, number, number, number, number, number]> = [];
const batchRows: string[] = [];
const batchRatios: Array<[string, number, number, number, number, number]> = [];
const running = new Map<string, ReflectorPlugin>();
for (const c of cases) {
  let p = plugins.get(c.plugin);
  if (!p) plugins.set(c.plugin, (p = await loadBuiltin(c.plugin, { lookup, memoEntries: 8192 })));
  const plugin = p;
  const call = (src: KubeObject) =>
    c.direction === "forward" ? plugin.forwardSync(src, c.target, ctx) : plugin.backwardSync(src, c.target, ctx);
  // The same plugin with the memo off (every call runs it), over the live wire and over JSON.
  const unmemoized = async (live: boolean) => {
    const key = `${c.plugin}/${live}`;
    let q = running.get(key);
    if (!q) running.set(key, (q = await loadBuiltin(c.plugin, { lookup, memoEntries: 0, live })));
    const r = q;
    return (src: KubeObject) =>
      c.direction === "forward" ? r.forwardSync(src, c.target, ctx) : r.backwardSync(src, c.target, ctx);
  };
  const runCall = await unmemoized(true);
  const jsonCall = await unmemoized(false);
  const twinCall = (src: KubeObject) => c.twin(src, c.target, ctx, (ip) => ip);
  // A fresh object is made outside the timed region, once per pair: both sides get it.
  const nextNew = freshObjects(c.source, true);
  const nextUnread = freshObjects(c.source, false);
  let cur = nextNew();
  // nextNew/nextUnread also feed the runs below (any fresh object will do there).
  let unread = nextUnread();
  const fresh = () => {
    cur = nextNew();
  };
  const freshUnread = () => {
    unread = nextUnread();
  };
  const [ts, cold] = measurePair(
    () => body(twinCall(cur)),
    () => body(call(cur)),
    fresh,
  );
  const [, memo] = measurePair(
    () => body(twinCall(unread)),
    () => body(call(unread)),
    freshUnread,
  );
  const [, warm] = measurePair(
    () => body(twinCall(c.source)),
    () => body(call(c.source)),
  );
  const [tsRun, run] = measurePair(
    () => body(twinCall(cur)),
    () => body(runCall(cur)),
    fresh,
  );
  const [tsJson, json] = measurePair(
    () => body(twinCall(cur)),
    () => body(jsonCall(cur)),
    fresh,
  );
  {
    const twinB = (o: KubeObject) => body(twinCall(o));
    const sameObj = () => c.source;
    const [bts, bnew] = measureBatches(twinB, (o) => body(call(o)), nextNew);
    const [bts2, bunread] = measureBatches(twinB, (o) => body(call(o)), nextUnread);
    const [bts3, bwarm] = measureBatches(twinB, (o) => body(call(o)), sameObj);
    const [bts4, brun] = measureBatches(twinB, (o) => body(runCall(o)), nextNew);
    const [bts5, bjson] = measureBatches(twinB, (o) => body(jsonCall(o)), nextNew);
    const r = (x: number[], t: number[]) => pct(x, 50) / pct(t, 50);
    const row: [string, number, number, number, number, number] = [
      c.label,
      r(bnew, bts),
      r(bunread, bts2),
      r(bwarm, bts3),
      r(brun, bts4),
      r(bjson, bts5),
    ];
    batchRatios.push(row);
    batchRows.push(
      `${pad(c.label, 28)} ${f1(pct(bts, 50))}   ${f1(pct(bnew, 50))} ${rt(row[1])} ${f1(pct(bunread, 50))}    ${rt(row[2])} ${f1(pct(bwarm, 50))} ${rt(row[3])} ${f1(pct(brun, 50))}   ${rt(row[4])} ${f1(pct(bjson, 50))}   ${rt(row[5])} | ${f1(pct(bts, 99))}   ${f1(pct(bnew, 99))}   ${f1(pct(brun, 99))}`,
    );
  }
  const rc = pct(cold, 50) / pct(ts, 50);
  const ru = pct(memo, 50) / pct(ts, 50);
  const rw = pct(warm, 50) / pct(ts, 50);
  // Each column against the twin timed in its own interleaved pair.
  const rr = pct(run, 50) / pct(tsRun, 50);
  const rj = pct(json, 50) / pct(tsJson, 50);
  ratios.push([c.label, rc, ru, rw, rr, rj]);
  console.log(
    `${pad(c.label, 28)} ${f1(pct(ts, 50))}   ${f1(pct(cold, 50))} ${rt(rc)} ${f1(pct(memo, 50))}    ${rt(ru)} ${f1(pct(warm, 50))} ${rt(rw)} ${f1(pct(run, 50))}   ${rt(rr)} ${f1(pct(json, 50))}   ${rt(rj)} | ${f1(pct(ts, 99))}   ${f1(pct(cold, 99))}   ${f1(pct(run, 99))}`,
  );
}
const summary = (rows: typeof ratios) => {
  const worst = (i: 1 | 2 | 3 | 4 | 5) => rows.reduce((a, b) => (b[i] > a[i] ? b : a));
  const w = (i: 1 | 2 | 3 | 4 | 5) => `${worst(i)[i].toFixed(2)}x (${worst(i)[0]})`;
  return `worst new ${w(1)}, worst unread ${w(2)}, worst warm ${w(3)}; plugin runs: worst live ${w(4)}, worst json ${w(5)}`;
};
console.log(summary(ratios));
console.log(
  `\nthe same in runs of ${BATCH} calls per side, alternating (per-call mean of each run; p50/p99 over runs), µs`,
);
console.log(
  `${pad("case", 28)} ${pad("   ts p50", 9)} ${pad("  new p50", 9)} ${pad(" ratio", 6)} ${pad("unread p50", 10)} ${pad(" ratio", 6)} ${pad(" warm p50", 9)} ${pad(" ratio", 6)} ${pad("  run p50", 9)} ${pad(" ratio", 6)} ${pad(" json p50", 9)} ${pad(" ratio", 6)} | ${pad("   ts p99", 9)} ${pad("  new p99", 9)} ${pad("  run p99", 9)}`,
);
for (const row of batchRows) console.log(row);
console.log(summary(batchRatios));
for (const [name, p] of plugins) {
  const st = p.stats();
  console.log(`  ${name}: ${st.calls} plugin runs, ${st.memoHits} answered by the decision memo`);
}
for (const p of running.values()) await p.close();

if (!process.argv.includes("--skip-breakdown")) await breakdown(cases, ctx, lookup, ITER);

{
  // The asynchronous handle API (what a drop-in would use, minus the worker) costs a few promise ticks more.
  const plugin = plugins.get("services")!;
  const next = freshObjects(s.service, true);
  const t: number[] = [];
  for (let i = 0; i < ITER; i++) {
    const obj = next();
    const t0 = performance.now();
    await plugin.forward(obj, null, ctx);
    t.push(performance.now() - t0);
  }
  console.log(`services forward via async forward(), new objects: p50 ${f1(pct(t, 50))} µs  p99 ${f1(pct(t, 99))} µs`);
}

if (!process.argv.includes("--skip-memory")) {
  // The memo would answer all but the first call: turned off, so that every call runs the plugin.
  const plugin = await loadBuiltin("services", { memoEntries: 0 });
  await plugins.get("services")?.close();
  plugins.set("services", plugin);
  const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
  console.log(`\nmemory flatness: ${MEMORY_CALLS.toLocaleString()} services forward calls on one handle`);
  const started = performance.now();
  const step = Math.max(1, Math.floor(MEMORY_CALLS / 10));
  for (let i = 1; i <= MEMORY_CALLS; i++) {
    const d = plugin.forwardSync(s.service, null, ctx);
    if (d.decision !== "apply") throw new Error(`call ${i} answered ${d.decision}: ${d.reason}`);
    // Yield now and then, as the engine's workers do: a due recycle is swapped in between calls.
    if (i % 1000 === 0) await new Promise((resolve) => setImmediate(resolve));
    if (i % step === 0) {
      Bun.gc(false);
      const st = plugin.stats();
      console.log(
        `  ${i.toLocaleString().padStart(10)} calls  rss ${mb(process.memoryUsage().rss).padStart(7)} MB  heap ${mb(process.memoryUsage().heapUsed).padStart(6)} MB  wasm memory ${mb(st.memoryBytes).padStart(5)} MB  recycles ${st.recycles}  ${(((performance.now() - started) / i) * 1000).toFixed(1)} µs/call`,
      );
    }
  }
}
for (const p of plugins.values()) await p.close();
