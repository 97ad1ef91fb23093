// The storage fabric, measured side by side in one run (printed, never asserted), on the in-cluster
// quick start (two clusters, one real node each, the rig's local-path provisioner, liqo with storage):
// the time from creating a claim and the pod that uses it to the claim being Bound, for
//   - the real class (local-path) on rome's node: the floor;
//   - the `liqo` class on rome's node (twin claim, real volume, virtual PV);
//   - the `liqo` class on the virtual node (virtual PV at once; the provider provisions later);
// and, for the remote case, to the pod Running in milan with its volume provisioned there.
// BENCH_CLAIMS (default 10) claims per case, created together; bound seen by polling every 100 ms.
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { runInClusterQuickstart, type InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { rigImageRefs } from "../rig/images.ts";
import { killRigNow, rigDown } from "../rig/rig.ts";
import { waitFor } from "../support/wait.ts";
import { heading, row, summarize } from "./stats.ts";

const n = Number(process.env.BENCH_CLAIMS ?? 10);
const NS = "liqo-demo";
type Claim = KubeObject & { status?: { phase?: string } };
type Pod = KubeObject & { status?: { phase?: string } };

const local = {
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "liqo.io/type", operator: "NotIn", values: ["virtual-node"] }] },
        ],
      },
    },
  },
};
const remote = { nodeSelector: { "liqo.io/type": "virtual-node" } };

async function batch(
  q: InClusterQuickstart,
  label: string,
  storageClassName: string,
  placement: Record<string, unknown>,
) {
  const names = Array.from({ length: n }, (_, i) => `${label}-${i}`);
  const created = new Map<string, number>();
  for (const name of names) {
    await q.rome.create(Resources.persistentVolumeClaims, {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name, namespace: NS, labels: { bench: label } },
      spec: { storageClassName, accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "8Mi" } } },
    } as KubeObject);
    await q.rome.create(Resources.pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: NS, labels: { bench: label } },
      spec: {
        ...placement,
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            name: "c",
            image: rigImageRefs.hello,
            imagePullPolicy: "IfNotPresent",
            command: ["sleep", "100000"],
            volumeMounts: [{ name: "d", mountPath: "/d" }],
          },
        ],
        volumes: [{ name: "d", persistentVolumeClaim: { claimName: name } }],
      },
    } as KubeObject);
    created.set(name, performance.now());
  }
  const bound = new Map<string, number>();
  const running = new Map<string, number>();
  await waitFor(
    `${label}: ${n} claims bound and pods Running`,
    async () => {
      const now = performance.now();
      for (const c of (
        await q.rome.list<Claim>(Resources.persistentVolumeClaims, { namespace: NS, labelSelector: `bench=${label}` })
      ).items) {
        if (c.status?.phase === "Bound" && !bound.has(c.metadata.name!)) bound.set(c.metadata.name!, now);
      }
      for (const p of (await q.rome.list<Pod>(Resources.pods, { namespace: NS, labelSelector: `bench=${label}` }))
        .items) {
        if (p.status?.phase === "Running" && !running.has(p.metadata.name!)) running.set(p.metadata.name!, now);
      }
      return bound.size === n && running.size === n;
    },
    { timeoutMs: 600_000, intervalMs: 100 },
  );
  const since = (m: Map<string, number>) => names.map((x) => (m.get(x)! - created.get(x)!) / 1000);
  // Clean up before the next case: pods first, then claims (their volumes go with them).
  for (const name of names) await q.rome.delete(Resources.pods, name, NS, { gracePeriodSeconds: 0 });
  await waitFor(
    `${label}: pods gone`,
    async () =>
      (await q.rome.list(Resources.pods, { namespace: NS, labelSelector: `bench=${label}` })).items.length === 0,
    { timeoutMs: 300_000 },
  );
  for (const name of names) await q.rome.delete(Resources.persistentVolumeClaims, name, NS);
  return { bound: summarize(since(bound)), running: summarize(since(running)) };
}

const root = join(tmpdir(), "liqo-rig-tests");
mkdirSync(root, { recursive: true });
const q = await runInClusterQuickstart({
  dir: mkdtempSync(join(root, "bench-storage-")),
  owner: process.pid,
  realNodes: 1,
});
process.on("exit", () => killRigNow(q.rig));
try {
  await batch(q, "warm-up", "local-path", local); // first pods on the node pay one-off costs; not reported
  const real = await batch(q, "real", "local-path", local);
  const liqoLocal = await batch(q, "liqo-local", "liqo", local);
  const liqoRemote = await batch(q, "liqo-remote", "liqo", remote);
  heading(`claim + pod created → claim Bound (s), ${n} claims per case, created together`);
  for (const [label, r] of [
    ["local-path on rome's node (the floor)", real],
    ["liqo on rome's node", liqoLocal],
    ["liqo on the virtual node (milan)", liqoRemote],
  ] as const) {
    row(`${label}: p50`, r.bound.p50, "s");
    row(`${label}: p99`, r.bound.p99, "s");
  }
  row("ratio liqo local ÷ local-path (p50)", liqoLocal.bound.p50 / real.bound.p50, "x");
  row("ratio liqo remote ÷ local-path (p50)", liqoRemote.bound.p50 / real.bound.p50, "x");
  heading("claim + pod created → pod Running (s): the volume usable");
  for (const [label, r] of [
    ["local-path on rome's node", real],
    ["liqo on rome's node", liqoLocal],
    ["liqo on the virtual node (volume made in milan)", liqoRemote],
  ] as const) {
    row(`${label}: p50`, r.running.p50, "s");
    row(`${label}: p99`, r.running.p99, "s");
  }
  row("ratio liqo local ÷ local-path (p50)", liqoLocal.running.p50 / real.running.p50, "x");
  row("ratio liqo remote ÷ local-path (p50)", liqoRemote.running.p50 / real.running.p50, "x");
} finally {
  await rigDown(q.rig.dir).catch(() => killRigNow(q.rig));
}
