// The storage fabric on real nodes (storage-incluster.ts) and Liqo's stateful tutorial
// (stateful-tutorial.ts) on one in-cluster quick start: rome and milan with one real node each,
// liqo installed with the chart, peered, liqo-demo offloaded, rome-node-1 labelled region center.
// The postgres image is built while the clusters start and imported into each real node.
//
// Order: the tutorial first, then everything it leaves removed until neither cluster has a claim or
// a volume (the storage tests make a StatefulSet of the same name and count twin claims, copies in
// milan and claims with data there), then the storage tests, whose last one unoffloads liqo-demo.
// The tutorial's gateway outage restores the gateway and waits for a move across it to succeed.
import { afterAll, beforeAll, describe, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { Resources } from "../../core/kube/resources.ts";
import { runInClusterQuickstart, type InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { ensureImages, importImages } from "../rig/images.ts";
import { killRigNow, reapOrphanRigs, rigDown } from "../rig/rig.ts";
import { testRigRoot } from "../rig/testing.ts";
import { removeStatefulTutorial, statefulTutorial } from "./stateful-tutorial.ts";
import { storageInCluster } from "./storage-incluster.ts";

let q: InClusterQuickstart;
const quickstart = () => q;

beforeAll(async () => {
  await reapOrphanRigs(testRigRoot);
  const dir = mkdtempSync(join(testRigRoot, "storage-"));
  process.on("exit", () => {
    if (q) killRigNow(q.rig);
  });
  const started = performance.now();
  const progress = process.env.RIG_VERBOSE ? (m: string) => console.error(`[storage] ${m}`) : () => {};
  // Built while the clusters start (a few minutes cold, once; cached after).
  const image = ensureImages(["postgres"], progress);
  q = await runInClusterQuickstart({
    dir,
    owner: process.pid,
    // One real node each: rome's is one region, the virtual node (milan) another.
    realNodes: 1,
    progress,
  });
  const [pg] = await image;
  // No registry: the image goes into each real node's containerd, as `bun run rig image import` does.
  for (const n of q.rig.clusters.flatMap((c) => c.realNodeStates ?? []))
    await importImages(n.containerdSocket, [pg!.archive]);
  // Where the replicas may go: rome's nodes are one region, the virtual node (milan) another.
  await q.rome.mergePatch(Resources.nodes, "rome-node-1", undefined, {
    metadata: { labels: { "topology.liqo.io/region": "center" } },
  });
  console.log(
    `in-cluster quick start: ${Object.entries(q.timings)
      .map(([k, v]) => `${k} ${v.toFixed(0)}s`)
      .join(", ")}; set-up with the postgres image ${((performance.now() - started) / 1000).toFixed(0)}s`,
  );
}, 1_200_000);

afterAll(async () => {
  if (q) await rigDown(q.rig.dir).catch(() => killRigNow(q.rig));
}, 120_000);

statefulTutorial(quickstart);

describe("between the stateful tutorial and the storage tests", () => {
  test("the tutorial's StatefulSet, claims and pods removed: no claim or volume left in rome or milan", async () => {
    await removeStatefulTutorial(q);
  }, 600_000);
});

storageInCluster(quickstart);
