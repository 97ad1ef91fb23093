// Reflection throughput against the physical floor, in one run on one rig: how fast the engine
// reflects 5,000 ConfigMaps and 1,000 Services with their EndpointSlices (objects/s from the moment
// the namespace pair starts), against how fast Bun writes the same objects straight to the API
// server (16 in flight); with the engine's peak RSS and CPU-seconds.
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { createInformer } from "../../core/kube/informer.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { createReflectionEngine } from "../../core/reflection/engine/engine.ts";
import { builtinWasm } from "../../reflectors/index.ts";
import { startTestRig } from "../rig/testing.ts";
import { heading, row } from "./stats.ts";

const scale = Number(process.env.BENCH_SCALE ?? 1);
const configMaps = Math.round(5000 * scale);
const services = Math.round(1000 * scale);

const rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
const local = rig.client("rome");
const remote = rig.client("milan");

async function ns(client: KubeClient, name: string) {
  await client.create(Resources.namespaces, { metadata: { name } });
}

async function createAll(client: KubeClient, namespace: string, inFlight = 16): Promise<number> {
  const items: [typeof Resources.configMaps, KubeObject][] = [];
  for (let i = 0; i < configMaps; i++) items.push([Resources.configMaps, { metadata: { name: `cm-${i}`, namespace }, data: { payload: "x".repeat(256), i: String(i) } }]);
  for (let i = 0; i < services; i++) items.push([Resources.services, { metadata: { name: `svc-${i}`, namespace }, spec: { selector: { app: `a${i}` }, ports: [{ port: 80 }] } }]);
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < items.length) {
      const [res, obj] = items[next++]!;
      await client.create(res, obj, namespace);
    }
  }));
  return items.length / ((performance.now() - started) / 1000);
}

try {
  await ns(local, "bench");
  await ns(remote, "bench-rome");
  await ns(remote, "raw");

  // Arrivals are counted by watches on milan that run through both phases, so both pay for them.
  const seen = new Set<string>();
  const counters = [Resources.configMaps, Resources.services, Resources.endpointSlices].map((res) => {
    const inf = createInformer({ client: remote, resource: res });
    inf.on({ add: (o) => void seen.add(`${o.metadata.namespace}/${res.kind}/${o.metadata.name}`) });
    inf.start();
    return inf;
  });
  await Promise.all(counters.map((c) => c.waitForSync()));

  heading(`raw API writes from Bun (${configMaps} ConfigMaps + ${services} Services, 16 in flight)`);
  const raw = await createAll(remote, "raw");
  row("raw write throughput", raw, "objects/s");

  process.stdout.write("  (creating the local objects to reflect…)\n");
  await createAll(local, "bench");
  // The EndpointSlice controller makes one slice per Service; wait for all of them locally.
  const slices = async () => (await local.list(Resources.endpointSlices, { namespace: "bench" })).items.length;
  while ((await slices()) < services) await Bun.sleep(500);
  const total = configMaps + services + (await slices());

  // 16 workers per reflector: the same concurrency as the raw writer, so the ratio compares like with like.
  const engine = createReflectionEngine({ local, remote, localClusterId: "rome-id", remoteClusterId: "milan-id", workers: 16 });
  for (const b of ["configmaps", "services", "endpointslices"] as const) await engine.addPlugin(await builtinWasm(b), { trust: "builtin", source: b });

  const expected = [
    ...Array.from({ length: configMaps }, (_, i) => `bench-rome/ConfigMap/cm-${i}`),
    ...Array.from({ length: services }, (_, i) => `bench-rome/Service/svc-${i}`),
    ...(await local.list(Resources.endpointSlices, { namespace: "bench" })).items.map((x) => `bench-rome/EndpointSlice/${x.metadata.name}`),
  ];
  const arrivedCount = () => expected.reduce((n, k) => n + (seen.has(k) ? 1 : 0), 0);

  heading(`reflection (${total} objects: ConfigMaps, Services, EndpointSlices; 16 workers per reflector)`);
  const cpu0 = process.cpuUsage();
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage().rss); }, 100);
  const started = performance.now();
  await engine.addNamespacePair({ localNamespace: "bench", remoteNamespace: "bench-rome" });
  const deadline = Date.now() + 15 * 60_000;
  let done = 0;
  while ((done = arrivedCount()) < total && Date.now() < deadline) await Bun.sleep(200);
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const cpu = process.cpuUsage(cpu0);
  const reflected = done / seconds;
  row("objects reflected", `${done}/${total}`);
  row("reflection throughput", reflected, "objects/s");
  row("ratio to raw API writes (target >= 0.8)", reflected / raw, "x");
  row("bench process peak RSS (engine + counters)", peakRss / 2 ** 20, "MiB");
  row("CPU-seconds (user+system) while reflecting", (cpu.user + cpu.system) / 1e6, "s");
  for (const p of engine.plugins()) row(`plugin ${p.name}: calls / instance recycles`, `${p.calls} / ${p.recycles}`);
  await Promise.all(counters.map((c) => c.stop()));
  await engine.stop();
} finally {
  await rig.down();
}
