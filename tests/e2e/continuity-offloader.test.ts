// The consumer's half of service continuity against real API servers: an offloaded pod turns not
// Ready (and leaves its Service's endpoints) once the provider has been unreachable past the
// threshold, and Ready again, from the provider's status, when it answers. The provider's state is
// the test's to set: the offloader reads it through remoteUnreachableSince, as the virtual kubelet
// wires it to its API server probe and the tunnel.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { installCrds } from "../../core/apis/index.ts";
import { UNREACHABLE_REASON } from "../../core/continuity/pods.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { Pod } from "../../core/kube/types.ts";
import type { ShadowPodController } from "../../core/shadowpod/controller.ts";
import { createPodOffloader, type PodOffloader } from "../../core/virtualkubelet/pods/offloader.ts";
import { builtinWasm } from "../../reflectors/index.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { namespace } from "../support/namespace.ts";
import { holdsFor, waitFor } from "../support/wait.ts";
import { guardKwokDeletes, virtualNodeStandIn } from "./offloading-rig.ts";

const ids = { localClusterId: "rome-cluster-id", remoteClusterId: "milan-cluster-id" };
const nodeName = "liqo-milan";
const THRESHOLD_MS = 2000;
let rig: TestRig;
let rome: KubeClient;
let milan: KubeClient;
let provider: ShadowPodController;
let offloader: PodOffloader;
/** When the provider stopped answering, as the virtual kubelet would say. */
let unreachableSince: number | undefined;
/** Why the fabric cannot translate the provider's pod IPs now, as its translation watcher would say. */
let translationPending: string | undefined;

const ready = async (name: string) =>
  (await rome.get<Pod>(Resources.pods, name, "demo")).status?.conditions?.find((c) => c.type === "Ready");
const slicesReady = async () =>
  (
    await rome.list<KubeObject & { endpoints?: { conditions?: { ready?: boolean } }[] }>(Resources.endpointSlices, {
      namespace: "demo",
      labelSelector: "kubernetes.io/service-name=web",
    })
  ).items.flatMap((s) => (s.endpoints ?? []).map((e) => e.conditions?.ready));

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  rome = rig.client("rome");
  milan = rig.client("milan");
  await installCrds(milan);
  await guardKwokDeletes(milan);
  await namespace(rome, "demo");
  await namespace(milan, "demo-rome");
  provider = await virtualNodeStandIn(rome, milan, nodeName, ids.remoteClusterId);
  offloader = await createPodOffloader({
    local: rome,
    remote: milan,
    ...ids,
    nodeName,
    virtualKubeletIp: "127.0.0.42",
    remoteNamespaceOf: (ns) => (ns === "demo" ? "demo-rome" : undefined),
    podsWasm: await builtinWasm("pods"),
    remoteUnreachableSince: () => unreachableSince,
    continuityThresholdMs: THRESHOLD_MS,
    translationPending: () => translationPending,
  });
  await offloader.start();
}, 600_000);

afterAll(async () => {
  await offloader?.stop();
  await provider?.stop();
  await rig?.down();
});

describe("service continuity in the virtual kubelet (consumer side)", () => {
  test("the provider unreachable past the threshold: the offloaded pod is not Ready, its endpoint not ready; the provider back: Ready again from its status; the same pods throughout", async () => {
    await rome.create(Resources.services, {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: "demo" },
      spec: { selector: { app: "web" }, ports: [{ port: 80 }] },
    } as KubeObject);
    await rome.create(Resources.pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "web", namespace: "demo", labels: { app: "web" } },
      spec: {
        nodeName,
        containers: [{ name: "nginx", image: "nginx" }],
        tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" }],
      },
    } as KubeObject);
    await waitFor("the offloaded pod Ready, its endpoint ready", async () => {
      return (await ready("web"))?.status === "True" && (await slicesReady()).join() === "true";
    });
    const uids = async () => ({
      local: (await rome.get(Resources.pods, "web", "demo")).metadata.uid,
      remote: (await milan.get(Resources.pods, "web", "demo-rome")).metadata.uid,
    });
    const before = await uids();

    // Unreachable, within the threshold: nothing changes yet.
    unreachableSince = Date.now();
    await holdsFor(
      "the pod Ready within the threshold",
      async () => (await ready("web"))?.status === "True",
      THRESHOLD_MS / 2,
      { describe: () => ready("web") },
    );
    const notReady = await waitFor("the pod not Ready past the threshold", async () => {
      const c = await ready("web");
      return c?.status === "False" ? c : undefined;
    });
    expect(notReady.reason).toBe(UNREACHABLE_REASON);
    expect(notReady.message).toContain(`cluster ${ids.remoteClusterId} has not answered for`);
    await waitFor("its endpoint not ready", async () => (await slicesReady()).join() === "false");
    const containersReady = (await rome.get<Pod>(Resources.pods, "web", "demo")).status?.conditions?.find(
      (c) => c.type === "ContainersReady",
    );
    expect(containersReady?.status).toBe("False");

    // Only the tunnel is down here (milan's API server answers): what milan says of the pod keeps
    // coming (a pod that ends there must end here too), with Ready held False.
    const remotePod = await milan.get<Pod>(Resources.pods, "web", "demo-rome");
    await milan.mergePatch(
      Resources.pods,
      "web",
      "demo-rome",
      {
        status: {
          conditions: [
            ...(remotePod.status?.conditions ?? []),
            { type: "example.com/Probe", status: "True", lastTransitionTime: new Date().toISOString() },
          ],
        },
      },
      "status",
    );
    await waitFor("milan's new condition on the pod in rome while dark", async () =>
      (await rome.get<Pod>(Resources.pods, "web", "demo")).status?.conditions?.some(
        (c) => c.type === "example.com/Probe" && c.status === "True",
      ),
    );
    expect((await ready("web"))?.status).toBe("False");
    expect((await slicesReady()).join()).toBe("false");

    // The provider answers: the remote status comes back.
    unreachableSince = undefined;
    await waitFor("the pod Ready again", async () => (await ready("web"))?.status === "True");
    await waitFor("its endpoint ready again", async () => (await slicesReady()).join() === "true");
    expect(await uids()).toEqual(before);
  }, 120_000);

  test("the provider's pod IPs untranslatable (status held back) and the provider dark: the pod leaves the Services all the same; both over: Ready with its IP", async () => {
    const ipBefore = (await rome.get<Pod>(Resources.pods, "web", "demo")).status?.podIP;
    expect(ipBefore).toBeDefined();
    translationPending = "milan's NetworkConfig is not processed";
    try {
      unreachableSince = Date.now();
      const notReady = await waitFor("the pod not Ready past the threshold", async () => {
        const c = await ready("web");
        return c?.status === "False" ? c : undefined;
      });
      expect(notReady.reason).toBe(UNREACHABLE_REASON);
      await waitFor("its endpoint not ready", async () => (await slicesReady()).join() === "false");
      // Held back: the IP shown is the one from before, never an untranslated one.
      expect((await rome.get<Pod>(Resources.pods, "web", "demo")).status?.podIP).toBe(ipBefore);
    } finally {
      unreachableSince = undefined;
      translationPending = undefined;
    }
    await waitFor("the pod Ready again", async () => (await ready("web"))?.status === "True");
    await waitFor("its endpoint ready again", async () => (await slicesReady()).join() === "true");
  }, 120_000);
});
