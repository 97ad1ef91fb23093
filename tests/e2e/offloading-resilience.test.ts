// ShadowPod resilience with liqo's roles as processes: rome's (the consumer's) API server is stopped
// for a minute. Offloaded pods in milan must keep running untouched (the provider's ShadowPod
// controller needs nothing from rome), and once rome is back its status re-syncs with no pod
// re-created: same remote UIDs, same restart counts, same ShadowPod re-creation counters.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ShadowPodResource } from "../../core/apis/index.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { RECREATIONS_ANNOTATION } from "../../core/apis/labels.ts";
import { startAndWait, stopComponent } from "../rig/cluster.ts";
import { waitFor } from "../support/wait.ts";
import { startOffloadingRig, type ClusterInfo, type OffloadingRig } from "./offloading-rig.ts";

// biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters, asserted on a few fields
type Pod = KubeObject & { spec: Record<string, any>; status?: Record<string, any> };

let r: OffloadingRig;
let rome: ClusterInfo, milan: ClusterInfo;
const NAMES = ["res-0", "res-1", "res-2"];
const OUTAGE_MS = 60_000;

beforeAll(async () => {
  r = await startOffloadingRig([
    { name: "rome", region: "north" },
    { name: "milan", region: "south" },
  ]);
  rome = r.consumer;
  milan = r.providers[0]!;
}, 600_000);

afterAll(async () => {
  // Including the API server restarted mid-test: nothing may outlive the rig.
  await r?.rig.down();
});

const remoteState = async (twin: string) => {
  const pods = (await milan.client.list<Pod>(Resources.pods, { namespace: twin })).items;
  const shadows = (await milan.client.list(ShadowPodResource, { namespace: twin })).items;
  return Object.fromEntries(
    NAMES.map((n) => {
      const p = pods.find((x) => x.metadata.name === n);
      const s = shadows.find((x) => x.metadata.name === n);
      return [
        n,
        {
          uid: p?.metadata.uid,
          phase: p?.status?.phase,
          recreations: s?.metadata.annotations?.[RECREATIONS_ANNOTATION],
        },
      ];
    }),
  );
};
const localRestarts = async () => {
  const pods = (await rome.client.list<Pod>(Resources.pods, { namespace: "resilient" })).items;
  return Object.fromEntries(
    NAMES.map((n) => {
      const p = pods.find((x) => x.metadata.name === n);
      return [
        n,
        { phase: p?.status?.phase, restarts: p?.status?.containerStatuses?.[0]?.restartCount, ip: p?.status?.podIP },
      ];
    }),
  );
};

test("with the consumer's API server down for a minute, remote pods keep running and nothing is re-created", async () => {
  await rome.client.create(Resources.namespaces, { metadata: { name: "resilient" } });
  const offload = await r.liqoctl("offload", "namespace", "resilient", "--pod-offloading-strategy=Remote");
  expect(offload.code).toBe(0);
  await waitFor(
    "the offloading to be Ready",
    async () => {
      // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters, asserted on a few fields
      const o = await rome.client.find<any>(
        {
          group: "offloading.liqo.io",
          version: "v1alpha1",
          kind: "NamespaceOffloading",
          plural: "namespaceoffloadings",
          namespaced: true,
        },
        "offloading",
        "resilient",
      );
      return o?.status?.offloadingPhase === "Ready" ? o : undefined;
    },
    { timeoutMs: 120_000 },
  );
  for (const name of NAMES) {
    await rome.client.create(Resources.pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "resilient" },
      spec: { containers: [{ name: "app", image: "nginx" }] },
    });
  }
  const before = await waitFor(
    "every pod Running locally with its remote status",
    async () => {
      const local = await localRestarts();
      return Object.values(local).every((p) => p.phase === "Running" && p.ip) ? local : undefined;
    },
    { timeoutMs: 180_000 },
  );
  const twin = (await milan.client.list(ShadowPodResource)).items.find((s) => s.metadata.name === "res-0")!.metadata
    .namespace!;
  const remoteBefore = await remoteState(twin);
  expect(Object.values(remoteBefore).every((p) => p.uid && p.phase === "Running")).toBe(true);

  const cluster = r.rig.clusters.find((c) => c.name === "rome")!;
  await stopComponent(cluster, "kube-apiserver");
  try {
    expect(
      await rome.client.find(Resources.namespaces, "resilient").then(
        () => "up",
        () => "down",
      ),
    ).toBe("down");
    // For the whole outage, every remote pod stays the same pod, Running.
    const since = Date.now();
    await waitFor(
      "a minute of outage with the remote pods untouched",
      async () => {
        const now = await remoteState(twin);
        // A change never reverts (a new UID stays new), so a violation fails every later poll and the wait.
        expect(now).toEqual(remoteBefore);
        return Date.now() - since >= OUTAGE_MS;
      },
      { timeoutMs: OUTAGE_MS + 60_000, intervalMs: 2_000 },
    );
    expect(await remoteState(twin)).toEqual(remoteBefore);
  } finally {
    await startAndWait(cluster, "kube-apiserver", r.rig.bin);
  }

  // Back: the virtual kubelets' informers re-list and the status is the same as before.
  await waitFor(
    "the local pods to report Running again, restart counts unchanged",
    async () => {
      const local = await localRestarts();
      return Bun.deepEquals(local, before) ? local : undefined;
    },
    { timeoutMs: 180_000, describe: localRestarts },
  );
  // A pod changed remotely after the outage still flows back: the re-sync is live, not frozen.
  await milan.client.delete(Resources.pods, "res-1", twin, { gracePeriodSeconds: 0 });
  await waitFor(
    "res-1's re-creation counted locally",
    async () => {
      const local = await localRestarts();
      return local["res-1"]!.restarts === before["res-1"]!.restarts! + 1 && local["res-1"]!.phase === "Running";
    },
    { timeoutMs: 120_000, describe: localRestarts },
  );
  const after = await remoteState(twin);
  expect(after["res-0"]).toEqual(remoteBefore["res-0"]!);
  expect(after["res-2"]).toEqual(remoteBefore["res-2"]!);
  expect(after["res-1"]!.uid).not.toBe(remoteBefore["res-1"]!.uid);
  expect(after["res-1"]!.recreations).toBe(String(Number(remoteBefore["res-1"]!.recreations) + 1));
}, 600_000);
