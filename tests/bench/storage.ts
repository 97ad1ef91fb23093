// The storage fabric, measured side by side in one run (printed, never asserted), on the in-cluster
// quick start (two clusters, one real node each, the rig's local-path provisioner, liqo with storage):
// the time from creating a claim and the pod that uses it to the claim being Bound, for
//   - the real class (local-path) on rome's node: the floor;
//   - the `liqo` class on rome's node (twin claim, real volume, virtual PV);
//   - the `liqo` class on the virtual node (virtual PV at once; the provider provisions later);
// and, for the remote case, to the pod Running in milan with its volume provisioned there; then
// liqoctl move volume of MOVE_MIB MiB rome → milan against a plain copy between the same nodes.
// BENCH_CLAIMS (default 10) claims per case, created together; bound seen by polling every 100 ms.
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { runInClusterQuickstart, type InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { rigImageRefs } from "../rig/images.ts";
import { killRigNow, rigDown } from "../rig/rig.ts";
import { waitFor } from "../support/wait.ts";
import { receiverPod, sourcePod, sourceScript, sourceService } from "../../cli/storage-move.ts";
import { liqoctl } from "../quickstart/install.ts";
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

/** Seconds until the pod ends (Succeeded), from now. */
async function untilDone(q: InClusterQuickstart, name: string): Promise<number> {
  const start = performance.now();
  await waitFor(
    `${name} done`,
    async () => {
      const p = await q.rome.find<Pod>(Resources.pods, name, NS);
      if (p?.status?.phase === "Failed") throw new Error(`${name} failed`);
      return p?.status?.phase === "Succeeded";
    },
    { timeoutMs: 900_000, intervalMs: 250 },
  );
  return (performance.now() - start) / 1000;
}

/**
 * liqoctl move volume of MOVE_MIB (default 64) MiB rome → milan, against a plain copy of the same
 * amount between the same two nodes with the same pods (one tar over HTTP through the fabric, sums
 * compared), from emptyDir to emptyDir: what the move adds is the temporary claim, the second
 * copy inside milan and the claims' provisioning.
 */
async function moveThroughput(q: InClusterQuickstart) {
  const mib = Number(process.env.MOVE_MIB ?? 64);
  const bytes = mib * 1048576;
  // biome-ignore lint/suspicious/noExplicitAny: a Deployment spec copied and edited as found
  const image = (await q.rome.get<KubeObject & { spec: any }>(Resources.deployments, "liqo-controller-manager", "liqo"))
    .spec.template.spec.containers[0].image;
  // The plain copy: a source on rome's node, the receiver offloaded to milan.
  const src = sourcePod("plain-src", NS, image, "unused");
  // biome-ignore lint/suspicious/noExplicitAny: a Deployment spec copied and edited as found
  const srcSpec = src.spec as any;
  srcSpec.volumes = [{ name: "data", emptyDir: {} }];
  srcSpec.nodeSelector = { "kubernetes.io/hostname": "rome-node-1" };
  srcSpec.containers[0].command = [
    "sh",
    "-c",
    `head -c ${bytes} /dev/urandom > /data/blob && exec bun -e "$0"`,
    sourceScript,
  ];
  const dst = receiverPod("plain-dst", NS, image, "unused", "liqo-milan", "plain-src");
  // biome-ignore lint/suspicious/noExplicitAny: a Deployment spec copied and edited as found
  (dst.spec as any).volumes = [{ name: "data", emptyDir: {} }];
  await q.rome.create(Resources.services, sourceService("plain-src", NS, "plain-src"));
  await q.rome.create(Resources.pods, src);
  await q.rome.create(Resources.pods, dst);
  const plain = await untilDone(q, "plain-dst");
  for (const n of ["plain-src", "plain-dst"]) await q.rome.delete(Resources.pods, n, NS, { gracePeriodSeconds: 0 });
  await q.rome.delete(Resources.services, "plain-src", NS);

  // The move: the same amount in a liqo claim on rome's node, moved to milan.
  await q.rome.create(Resources.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: "big", namespace: NS },
    spec: {
      storageClassName: "liqo",
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: `${mib * 2}Mi` } },
    },
  } as KubeObject);
  await q.rome.create(Resources.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "fill", namespace: NS },
    spec: {
      restartPolicy: "Never",
      nodeSelector: { "kubernetes.io/hostname": "rome-node-1" },
      containers: [
        {
          name: "c",
          image: rigImageRefs.hello,
          imagePullPolicy: "IfNotPresent",
          command: ["sh", "-c", `head -c ${bytes} /dev/urandom > /data/blob`],
          volumeMounts: [{ name: "d", mountPath: "/data" }],
        },
      ],
      volumes: [{ name: "d", persistentVolumeClaim: { claimName: "big" } }],
    },
  } as KubeObject);
  await untilDone(q, "fill");
  await q.rome.delete(Resources.pods, "fill", NS, { gracePeriodSeconds: 0 });
  await waitFor("fill gone", async () => !(await q.rome.find(Resources.pods, "fill", NS)), { timeoutMs: 120_000 });
  const start = performance.now();
  const proc = Bun.spawn(
    [...liqoctl, "move", "volume", "big", "-n", NS, "--node", "liqo-milan", `--kubeconfig=${q.kubeconfig("rome")}`],
    { stdout: "pipe", stderr: "pipe" },
  );
  const err = await new Response(proc.stderr).text();
  if ((await proc.exited) !== 0) throw new Error(`move failed: ${err}`);
  const moved = (performance.now() - start) / 1000;

  heading(`${mib} MiB rome → milan (s, whole operation: pods started, copied, sums compared)`);
  row("plain copy (one tar over HTTP through the fabric)", plain, "s");
  row("liqoctl move volume (two copies, two claims)", moved, "s");
  row("plain copy throughput", mib / plain, "MiB/s");
  row("move volume throughput", mib / moved, "MiB/s");
  row("ratio move ÷ plain (time)", moved / plain, "x");
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
  await moveThroughput(q);
} finally {
  await rigDown(q.rig.dir).catch(() => killRigNow(q.rig));
}
