// The open bug of issue 4, focused: one delete of a ShadowPod's pod must give exactly one
// re-creation, also when many pods are deleted at once while kwok and the API server are busy.
// A raw watch traces every pod incarnation (UID), so a failure names who deleted what.
// Found with it: the controller re-creates once per real deletion, but kwok (the rig's fake
// kubelet) finishes deletions with a DELETE by name and no UID precondition, queued from the
// pod's "being deleted" update; under load it lands on the pod just re-created under the same
// name, whose deletion queues the next one. Without the guard (STRESS_WITHOUT_GUARD=1) 6 deletes
// per pod gave 9 to 21 re-creations, incarnations "deleted by someone else" in the trace; with
// guardKwokDeletes (kwok may delete only pods already being deleted, as a kubelet's UID
// precondition would ensure) exactly 6.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { installCrds, ShadowPodResource } from "../apis/index.ts";
import type { KubeClient } from "../kube/client.ts";
import { Resources, type KubeObject } from "../kube/resources.ts";
import { startTestRig, type TestRig } from "../../tests/rig/testing.ts";
import { waitFor } from "../../tests/support/wait.ts";
import { guardKwokDeletes } from "../../tests/e2e/offloading-rig.ts";
import { RECREATIONS_ANNOTATION } from "../apis/labels.ts";
import { createShadowPodController, type ShadowPodController } from "./controller.ts";

type Pod = KubeObject & { status?: { phase?: string } };
const NS = "stress";
const PODS = 12;
const ROUNDS = 6;
const names = Array.from({ length: PODS }, (_, i) => `sp-${i}`);

let rig: TestRig;
let client: KubeClient;
let controller: ShadowPodController;
/** Every event of every pod incarnation, by UID. */
const trace = new Map<string, { name: string; events: string[] }>();
const deletedByUs = new Set<string>();
const abort = new AbortController();
let watching: Promise<void> | undefined;

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["naples"], nodes: 1 });
  client = rig.client("naples");
  await installCrds(client);
  // Without it this test fails (2 to 20 re-creations per delete): see guardKwokDeletes.
  if (!process.env.STRESS_WITHOUT_GUARD) await guardKwokDeletes(client);
  await client.create(Resources.namespaces, { metadata: { name: NS } });
  controller = createShadowPodController({ client });
  await controller.start();
  const started = performance.now();
  watching = (async () => {
    for await (const ev of client.watch<Pod>(Resources.pods, { namespace: NS, signal: abort.signal })) {
      const m = ev.object.metadata;
      const entry = trace.get(m.uid!) ?? { name: m.name!, events: [] };
      trace.set(m.uid!, entry);
      const t = (performance.now() - started).toFixed(0);
      entry.events.push(
        `${t}ms ${ev.type} rv=${m.resourceVersion}${m.deletionTimestamp ? ` deleting(grace ${m.deletionGracePeriodSeconds})` : ""} ${ev.object.status?.phase ?? ""}`,
      );
    }
  })().catch(() => undefined);
}, 600_000);

afterAll(async () => {
  abort.abort();
  await watching;
  await controller?.stop();
  await rig?.down();
});

const recorded = async (name: string) =>
  Number((await client.get(ShadowPodResource, name, NS)).metadata.annotations?.[RECREATIONS_ANNOTATION] ?? "NaN");
const runningPod = async (name: string, notUid?: string) => {
  const p = await client.find<Pod>(Resources.pods, name, NS);
  return p && p.metadata.uid !== notUid && !p.metadata.deletionTimestamp && p.status?.phase === "Running"
    ? p
    : undefined;
};

function explain(name: string): string {
  return [...trace]
    .filter(([, e]) => e.name === name)
    .map(
      ([uid, e]) => `  ${uid}${deletedByUs.has(uid) ? " (deleted by the test)" : ""}\n    ${e.events.join("\n    ")}`,
    )
    .join("\n");
}

test(`${PODS} pods deleted at once, ${ROUNDS} rounds (grace 0 and kwok's graceful path): one re-creation per delete`, async () => {
  const createdRv = new Map<string, string>();
  for (const name of names) {
    const s = await client.create(ShadowPodResource, {
      apiVersion: "virtualkubelet.liqo.io/v1alpha1",
      kind: "ShadowPod",
      metadata: { name, namespace: NS },
      spec: { pod: { containers: [{ name: "app", image: "nginx" }] } },
    } as KubeObject);
    createdRv.set(name, s.metadata.resourceVersion!);
  }
  let current = await waitFor(
    "every pod Running",
    async () => {
      const pods = await Promise.all(names.map((n) => runningPod(n)));
      return pods.every(Boolean) ? (pods as Pod[]) : undefined;
    },
    { timeoutMs: 180_000 },
  );
  // A first creation writes nothing back to the ShadowPod (one write per offloaded pod saved).
  for (const name of names)
    expect((await client.get(ShadowPodResource, name, NS)).metadata.resourceVersion).toBe(createdRv.get(name)!);
  const deletes = new Map(names.map((n) => [n, 0]));
  for (let round = 0; round < ROUNDS; round++) {
    // Even rounds: an immediate delete (grace 0), as the e2e tests do. Odd rounds: a graceful one,
    // which kwok finishes itself with its own delete by name.
    const grace = round % 2 === 0 ? 0 : undefined;
    await Promise.all(
      current.map(async (p) => {
        deletedByUs.add(p.metadata.uid!);
        await client.delete(Resources.pods, p.metadata.name!, NS, { uid: p.metadata.uid, gracePeriodSeconds: grace });
        deletes.set(p.metadata.name!, deletes.get(p.metadata.name!)! + 1);
      }),
    );
    current = await waitFor(
      `round ${round}: every pod re-created and Running`,
      async () => {
        const pods = await Promise.all(current.map((p) => runningPod(p.metadata.name!, p.metadata.uid)));
        return pods.every(Boolean) ? (pods as Pod[]) : undefined;
      },
      { timeoutMs: 180_000 },
    );
  }
  // Each pod's count equals the deletes the test made; an extra one names its intruder.
  const counts = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await recorded(n)] as const)));
  const wrong = names.filter((n) => counts[n] !== deletes.get(n));
  if (wrong.length)
    console.log(
      `pods whose count is off:\n${wrong.map((n) => `${n}: recorded ${counts[n]}, deleted ${deletes.get(n)}\n${explain(n)}`).join("\n")}`,
    );
  const intruders = [...trace].filter(
    ([uid, e]) => !deletedByUs.has(uid) && e.events.some((x) => x.includes("DELETED")),
  );
  if (intruders.length)
    console.log(
      `incarnations deleted by someone else:\n${intruders.map(([uid, e]) => `${e.name} ${uid}\n    ${e.events.join("\n    ")}`).join("\n")}`,
    );
  expect(counts).toEqual(Object.fromEntries(deletes));
}, 900_000);
