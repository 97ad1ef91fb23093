// The physical floor: how fast the rig starts and how much it weighs, how fast Bun can write to
// one API server (1 and 16 requests in flight), and how quickly a watch delivers a write.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { binaryCacheDir } from "../rig/binaries.ts";
import { startTestRig } from "../rig/testing.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { heading, row, rssMiB, summarize } from "./stats.ts";

const creates = Number(process.env.BENCH_CREATES ?? 1000);

heading("rig start-up");
const buildFile = join(binaryCacheDir(), "build-seconds");
const buildSeconds = existsSync(buildFile) ? Number(readFileSync(buildFile, "utf8")) : NaN;
let t = performance.now();
const rig = await startTestRig({ clusters: 2, nodes: 2 });
const warm = (performance.now() - t) / 1000;
row("binary build from an empty cache (recorded)", Number.isNaN(buildSeconds) ? "n/a" : buildSeconds, "s");
row("cold start (empty cache: build + start)", Number.isNaN(buildSeconds) ? "n/a" : buildSeconds + warm, "s");
row("warm start, 2 clusters x 2 nodes (cached binaries)", warm, "s");
for (const c of rig.clusters) {
  const parts = Object.entries(c.pids).map(([k, pid]) => [k, rssMiB(pid!)] as const);
  row(
    `RSS ${c.name} (all components)`,
    parts.reduce((a, [, v]) => a + v, 0),
    "MiB",
  );
  for (const [k, v] of parts) row(`  ${k}`, v, "MiB");
}

try {
  const client = rig.client(rig.clusters[0]!.name);
  await client.create(Resources.namespaces, { metadata: { name: "bench" } });

  async function throughput(inFlight: number, prefix: string): Promise<number> {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < creates) {
          const i = next++;
          await client.create(Resources.configMaps, {
            metadata: { name: `${prefix}-${i}`, namespace: "bench" },
            data: { i: String(i) },
          });
        }
      }),
    );
    return creates / ((performance.now() - started) / 1000);
  }

  heading(`raw API write throughput (${creates} ConfigMap creates)`);
  const one = await throughput(1, "seq");
  row("1 in flight", one, "creates/s");
  const sixteen = await throughput(16, "par");
  row("16 in flight", sixteen, "creates/s");
  row("ratio 16 / 1", sixteen / one, "x");

  heading("watch delivery latency (create sent → event received)");
  const latencies = await watchLatency(client, 300);
  const s = summarize(latencies);
  row("p50", s.p50, "ms");
  row("p99", s.p99, "ms");
  row("max", s.max, "ms");
} finally {
  await rig.down();
}

async function watchLatency(client: KubeClient, n: number): Promise<number[]> {
  const sent = new Map<string, number>();
  const got: number[] = [];
  const list = await client.list(Resources.configMaps, { namespace: "bench" });
  const abort = new AbortController();
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const watching = (async () => {
    for await (const ev of client.watch<KubeObject>(Resources.configMaps, {
      namespace: "bench",
      resourceVersion: list.metadata.resourceVersion,
      signal: abort.signal,
      allowWatchBookmarks: true,
    })) {
      const at = sent.get(ev.object.metadata.name ?? "");
      if (ev.type === "ADDED" && at !== undefined) {
        got.push(performance.now() - at);
        if (got.length === n) done();
      }
    }
  })();
  for (let i = 0; i < n; i++) {
    const name = `lat-${i}`;
    sent.set(name, performance.now());
    await client.create(Resources.configMaps, { metadata: { name, namespace: "bench" } });
  }
  await Promise.race([finished, Bun.sleep(60_000)]);
  abort.abort();
  await watching.catch(() => {});
  return got;
}
