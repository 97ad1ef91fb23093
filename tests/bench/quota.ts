// What the provider's quota enforcement costs (docs/tenancy.md): 1,000 ShadowPods written at once
// into a peer's twin namespace, with the ShadowPod controller in hard mode and with it off (none),
// side by side in one run on one API server, in alternating rounds. Printed: the time until every
// pod exists, and each ShadowPod's admission latency (created → its pod seen) as p50/p99. The
// offer is large enough that nothing is refused: what is measured is the counting.
import { REMOTE_CLUSTER_ID_LABEL, REPLICATION_DESTINATION_LABEL } from "../../core/apis/labels.ts";
import { installCrds, ResourceOfferResource, ShadowPodResource } from "../../core/apis/index.ts";
import { createInformer } from "../../core/kube/informer.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { createShadowPodController } from "../../core/shadowpod/controller.ts";
import type { QuotaMode } from "../../core/shadowpod/quota.ts";
import { startTestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { heading, row, summarize } from "./stats.ts";

const N = Math.round(1000 * Number(process.env.BENCH_SCALE ?? 1));
const ROUNDS = ["none", "hard", "none", "hard"] as const;
const PEER = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";

const rig = await startTestRig({ clusters: 1, names: ["milan"], nodes: 1 });
const client = rig.client("milan");
await installCrds(client);
// One kwok node that takes every pod, so scheduling never decides the timings.
await client.create(Resources.nodes, {
  apiVersion: "v1",
  kind: "Node",
  metadata: { name: "big", annotations: { "kwok.x-k8s.io/node": "fake" }, labels: { type: "kwok" } },
  spec: {},
  status: {
    capacity: { cpu: "2000", memory: "8Ti", pods: "20000" },
    allocatable: { cpu: "2000", memory: "8Ti", pods: "20000" },
  },
});
await client.create(Resources.namespaces, { metadata: { name: "tenant" } });
await client.create(ResourceOfferResource, {
  apiVersion: "sharing.liqo.io/v1alpha1",
  kind: "ResourceOffer",
  metadata: { name: "offer", namespace: "tenant", labels: { [REPLICATION_DESTINATION_LABEL]: PEER } },
  spec: { clusterId: "9a8b7c6d-0000-4a3b-8c2d-1e0f9a8b7c6d", resourceQuota: { hard: { cpu: "1000", pods: "20000" } } },
} as KubeObject);

async function round(mode: QuotaMode, i: number): Promise<{ seconds: number; latency: number[] }> {
  const ns = `twin-${i}`;
  await client.create(Resources.namespaces, { metadata: { name: ns, labels: { [REMOTE_CLUSTER_ID_LABEL]: PEER } } });
  const controller = createShadowPodController({ client, namespace: ns, quota: { mode } });
  await controller.start();
  const created = new Map<string, number>();
  const seen = new Map<string, number>();
  const pods = createInformer({ client, resource: Resources.pods, namespace: ns });
  pods.on({ add: (p) => seen.has(p.metadata.name!) || seen.set(p.metadata.name!, performance.now()) });
  pods.start();
  await pods.waitForSync();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < N) {
        const name = `p-${next++}`;
        created.set(name, performance.now());
        await client.create(ShadowPodResource, {
          apiVersion: "virtualkubelet.liqo.io/v1alpha1",
          kind: "ShadowPod",
          metadata: { name, namespace: ns },
          spec: { pod: { containers: [{ name: "app", image: "nginx", resources: { requests: { cpu: "100m" } } }] } },
        } as KubeObject);
      }
    }),
  );
  await waitFor(`${N} pods in ${ns}`, async () => (seen.size >= N ? true : undefined), { timeoutMs: 600_000 });
  const seconds = (performance.now() - started) / 1000;
  await pods.stop();
  await controller.stop();
  return { seconds, latency: [...created].map(([name, t]) => seen.get(name)! - t) };
}

heading(`quota enforcement: ${N} ShadowPods written at once (16 writers), rounds ${ROUNDS.join(", ")}`);
const results: Record<string, { seconds: number[]; latency: number[] }> = {
  none: { seconds: [], latency: [] },
  hard: { seconds: [], latency: [] },
};
for (const [i, mode] of ROUNDS.entries()) {
  const r = await round(mode, i);
  results[mode]!.seconds.push(r.seconds);
  results[mode]!.latency.push(...r.latency);
  row(`round ${i + 1} (${mode}): every pod created`, r.seconds, "s");
}
for (const mode of ["none", "hard"] as const) {
  const s = summarize(results[mode]!.latency);
  row(`${mode}: admission latency p50 / p99`, `${s.p50.toFixed(0)} / ${s.p99.toFixed(0)}`, "ms");
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
row("hard ÷ none, time for every pod (target ≤ 1.05)", mean(results.hard!.seconds) / mean(results.none!.seconds));
await rig.down();
