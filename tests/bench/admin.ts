// The admin API while reflection is busy, and what that load costs reflection. A real
// `liqo reflection` process (configmaps built-in) on a 2-cluster rig reflects N ConfigMaps that
// already exist when their namespace gets paired; the time until the last copy exists remotely
// is the reflection throughput. Phases, each with its own namespace pair:
//   warmup     no admin traffic, not counted (the first phase ran fastest in every run)
//   idle-N     no admin traffic (baseline)
//   paced-N    admin traffic at --rate requests/s (a few status pages and scrapers)
//   saturating admin traffic from --concurrency closed-loop clients (capacity of the API)
// in the order warmup, idle-1, paced-1, idle-2, paced-2, idle-3, saturating, idle-4. Every loaded
// phase is compared with the mean of the idle phases on either side of it, which cancels a
// steady drift (throughput fell from phase to phase on this shared machine); each phase's own
// figure is printed to show the noise.
// Admin requests go round-robin over the status page (reflection and cluster sections), views,
// /metrics and health, loopback only, bounded by --max-requests per phase and by the phase
// ending. Prints numbers, asserts nothing.
//
// Usage: bun tests/bench/admin.ts [--objects 2000] [--rate 50] [--concurrency 4] [--max-requests 200000]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { createInformer } from "../../core/kube/informer.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { installCrds } from "../../core/apis/index.ts";
import { parsePrometheusText } from "../../core/metrics/index.ts";
import { startTestRig } from "../rig/testing.ts";
import { heading, row, summarize } from "./stats.ts";

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg("objects", 2000);
const RATE = arg("rate", 50);
const CONCURRENCY = arg("concurrency", 4);
const MAX_REQUESTS = arg("max-requests", 200_000);
const PHASE_TIMEOUT_MS = 600_000;
const ENDPOINTS = ["/", "/views/reflectors", "/views/plugins", "/views/peerings", "/metrics", "/readyz", "/healthz"];
const root = join(import.meta.dir, "../..");
const work = mkdtempSync(join(tmpdir(), "admin-bench-"));
const pairsFile = join(work, "pairs.yaml");

type Load = { stop(): Promise<{ latencies: Map<string, number[]>; errors: Map<string, number>; seconds: number }> };

/** Admin traffic until stop(): paced (`rate` req/s overall) or closed-loop (`clients` in flight). */
function adminLoad(url: string, mode: { rate: number } | { clients: number }): Load {
  const latencies = new Map(ENDPOINTS.map((e) => [e, [] as number[]]));
  // Keyed "<path> <status>": a 503 from /readyz while a new pair's caches sync is an answer, not a failure.
  const errors = new Map<string, number>();
  const count = (key: string) => errors.set(key, (errors.get(key) ?? 0) + 1);
  let sent = 0;
  let running = true;
  const started = performance.now();
  const one = async () => {
    const path = ENDPOINTS[sent++ % ENDPOINTS.length]!;
    const t = performance.now();
    try {
      const res = await fetch(`${url}${path}`);
      await res.arrayBuffer();
      if (!res.ok) count(`${path} ${res.status}`);
    } catch {
      count(`${path} no answer`);
    }
    latencies.get(path)!.push(performance.now() - t);
  };
  const workers =
    "rate" in mode
      ? [
          (async () => {
            const inFlight = new Set<Promise<void>>();
            for (let i = 0; running && sent < MAX_REQUESTS; i++) {
              const due = started + (i * 1000) / mode.rate;
              const wait = due - performance.now();
              if (wait > 0) await Bun.sleep(wait);
              const p = one().finally(() => inFlight.delete(p));
              inFlight.add(p);
            }
            await Promise.all(inFlight);
          })(),
        ]
      : Array.from({ length: mode.clients }, async () => {
          while (running && sent < MAX_REQUESTS) await one();
        });
  return {
    async stop() {
      running = false;
      await Promise.all(workers);
      return { latencies, errors, seconds: (performance.now() - started) / 1000 };
    },
  };
}

async function ensureNamespace(client: KubeClient, name: string) {
  if (!(await client.find(Resources.namespaces, name)))
    await client.create(Resources.namespaces, { metadata: { name } });
}

async function createConfigMaps(client: KubeClient, namespace: string) {
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < N) {
        const i = next++;
        await client.create(Resources.configMaps, {
          metadata: { name: `cm-${i}`, namespace, labels: { bench: "admin" } },
          data: { i: String(i), pad: "x".repeat(256) },
        } as KubeObject);
      }
    }),
  );
}

/**
 * Writes the pairs file and waits until the process runs the new pair; returns when the write
 * that took effect happened. The role re-reads the file on a watch event, which can fire while
 * the file is half written (it then reports the pairs-file readiness check failing and waits
 * for the next change), so a write the process did not pick up within 3 s is written again.
 */
async function pair(url: string, ns: string): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const t = performance.now();
    writeFileSync(pairsFile, `pairs:\n  - localNamespace: ${ns}\n    remoteNamespace: ${ns}-rome\n`);
    while (performance.now() - t < 3000) {
      const pairs = (await (await fetch(`${url}/views/pairs`)).json()) as { localNamespace: string }[];
      if (pairs.length === 1 && pairs[0]!.localNamespace === ns) {
        if (attempt > 1) console.log(`  ! the pairs file change for ${ns} took effect on write ${attempt}`);
        return t;
      }
      await Bun.sleep(20);
    }
  }
}

/** Pairs `ns` and times until all N copies exist remotely; the remote side is watched, not polled. */
async function reflectPhase(url: string, local: KubeClient, remote: KubeClient, ns: string): Promise<number> {
  await ensureNamespace(remote, `${ns}-rome`);
  const seen = new Set<string>();
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  const informer = createInformer<KubeObject>({
    client: remote,
    resource: Resources.configMaps,
    namespace: `${ns}-rome`,
    labelSelector: "bench=admin",
  });
  let endedAt = 0;
  informer.on({
    add: (o) => {
      seen.add(o.metadata.name!);
      if (seen.size >= N && !endedAt) {
        endedAt = performance.now();
        done();
      }
    },
  });
  await informer.start();
  await informer.waitForSync();
  const t = await pair(url, ns);
  // A phase ends when every copy exists, at the deadline, or when the plugin stops running
  // (a quarantine ends reflection for good, so waiting on would only burn the deadline).
  let finished = false;
  void all.then(() => (finished = true));
  try {
    while (!finished && performance.now() - t < PHASE_TIMEOUT_MS) {
      await Promise.race([all, Bun.sleep(1000)]);
      const plugin = (
        (await (await fetch(`${url}/views/plugins`)).json()) as {
          name: string;
          state: string;
          quarantineReason?: string;
        }[]
      ).find((p) => p.name === "configmaps");
      if (plugin?.state !== "ready")
        throw new Error(
          `the configmaps plugin is ${plugin?.state ?? "gone"}: ${plugin?.quarantineReason ?? ""}; numbers after this point would mean nothing`,
        );
    }
  } finally {
    await informer.stop();
  }
  const seconds = ((endedAt || performance.now()) - t) / 1000;
  if (seen.size < N) console.log(`  ! only ${seen.size}/${N} reflected within ${PHASE_TIMEOUT_MS / 1000}s`);
  return seen.size / seconds;
}

function printLoad(label: string, result: Awaited<ReturnType<Load["stop"]>>) {
  const all = [...result.latencies.values()].flat();
  row(`${label}: admin requests`, all.length);
  row(`${label}: admin requests/s`, all.length / result.seconds, "req/s");
  row(
    `${label}: non-2xx answers`,
    [...result.errors.values()].reduce((a, b) => a + b, 0),
  );
  for (const [key, n] of result.errors) row(`${label}:   ${key}`, n);
  for (const [path, samples] of result.latencies) {
    const s = summarize(samples);
    row(`${label}: ${path} p50 / p99`, `${s.p50.toFixed(1)} / ${s.p99.toFixed(1)}`, "ms");
  }
}

writeFileSync(pairsFile, "pairs: []\n");
const rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
let proc: ReturnType<typeof Bun.spawn> | undefined;
try {
  const local = rig.client("rome");
  const remote = rig.client("milan");
  // With liqo's CRDs the cluster views (peerings, virtual nodes, ...) list real, if empty, kinds.
  await installCrds(local);
  const phases = ["warmup", "idle-1", "paced-1", "idle-2", "paced-2", "idle-3", "saturating", "idle-4"] as const;
  heading(`setup: ${N} ConfigMaps in each of ${phases.length} unpaired namespaces`);
  let t = performance.now();
  for (const p of phases) {
    await ensureNamespace(local, `bench-${p}`);
    await createConfigMaps(local, `bench-${p}`);
  }
  row("created", (phases.length * N) / ((performance.now() - t) / 1000), "creates/s");

  proc = Bun.spawn(
    [
      join(root, "node_modules/.bin/bun"),
      "cli/liqo.ts",
      "reflection",
      "--builtins",
      "configmaps",
      "--kubeconfig",
      rig.clusters[0]!.kubeconfig,
      "--remote-kubeconfig",
      rig.clusters[1]!.kubeconfig,
      "--local-cluster-id",
      "rome-bench",
      "--remote-cluster-id",
      "milan-bench",
      "--pairs-file",
      pairsFile,
      "--admin-address",
      "127.0.0.1:0",
    ],
    { cwd: root, stdout: "pipe", stderr: "ignore" },
  );
  let out = "";
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  while (!/admin API on (\S+)/.test(out)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`liqo reflection exited before serving: ${out}`);
    out += new TextDecoder().decode(value);
  }
  const url = /admin API on (\S+)/.exec(out)![1]!;
  void (async () => {
    while (!(await reader.read()).done);
  })();

  heading(`reflection throughput (${N} ConfigMaps per phase) with and without admin load`);
  const throughput: Record<string, number> = {};
  const loads: Array<[string, Awaited<ReturnType<Load["stop"]>>]> = [];
  for (const p of phases) {
    const paced = p.startsWith("paced");
    const load = paced
      ? adminLoad(url, { rate: RATE })
      : p === "saturating"
        ? adminLoad(url, { clients: CONCURRENCY })
        : undefined;
    throughput[p] = await reflectPhase(url, local, remote, `bench-${p}`);
    if (load) loads.push([paced ? `${p} ${RATE}/s` : `${CONCURRENCY} clients`, await load.stop()]);
    row(`${p}`, throughput[p]!, "objects/s");
  }
  /** A loaded phase against the mean of the idle phases just before and just after it. */
  const bracketed = (p: (typeof phases)[number]) => {
    const i = phases.indexOf(p);
    return throughput[p]! / ((throughput[phases[i - 1]!]! + throughput[phases[i + 1]!]!) / 2);
  };
  const pacedRatios = phases.filter((p) => p.startsWith("paced-")).map(bracketed);
  for (const p of phases.filter((x) => x.startsWith("paced-")))
    row(`ratio ${p} / its neighbouring idle phases`, bracketed(p), "x");
  row(
    `ratio paced (${RATE} req/s) / idle, mean (target >= 0.95)`,
    pacedRatios.reduce((a, b) => a + b, 0) / pacedRatios.length,
    "x",
  );
  row(`ratio saturating (${CONCURRENCY} clients) / its neighbouring idle phases`, bracketed("saturating"), "x");

  heading("admin API while reflection is busy (loopback)");
  for (const [label, result] of loads) printLoad(label, result);

  heading("reflection process after the run");
  const families = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
  const value = (name: string) => families.find((f) => f.name === name)?.samples[0]?.value ?? NaN;
  row("resident memory", value("process_resident_memory_bytes") / (1 << 20), "MiB");
  row("CPU time", value("process_cpu_seconds_total"), "s");
  for (const s of families.find((f) => f.name === "liqo_kube_client_requests_total")?.samples ?? [])
    row(`API requests (${s.labels.cluster})`, s.value);
} finally {
  if (proc && proc.exitCode === null) {
    proc.kill("SIGTERM");
    await proc.exited;
  }
  await rig.down();
  rmSync(work, { recursive: true, force: true });
}
