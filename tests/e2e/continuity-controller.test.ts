// The provider's service continuity controller against a real API server: a TunnelEndpoint whose
// gateway says the consumer stopped answering, a slice the consumer's reflection applied, and what
// the controller makes of them: marked past the threshold (and only then), left alone once the
// consumer rewrote it in the same outage, restored or forgotten when the peer answers, the slice then
// equal to the reflection's answer by the engine's own test; the provider's own slice never touched.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { installCrds } from "../../core/apis/index.ts";
import { TunnelEndpointResource } from "../../core/apis/net/tunnelendpoint.ts";
import {
  UNREACHABLE_SINCE_ANNOTATION,
  UNREADY_ENDPOINTS_ANNOTATION,
  type EndpointSliceObject,
} from "../../core/continuity/endpoints.ts";
import { createContinuityController } from "../../core/continuity/controller.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { convergence, isEqual } from "../../core/reflection/engine/ownership.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { holdsFor, waitFor } from "../support/wait.ts";

const NS = "demo-rome";
const ROME = "rome-cluster-id";
const ENGINE = "liqo-reflection";
const THRESHOLD_MS = 2000;
let rig: TestRig;
let milan: KubeClient;
let controller: ReturnType<typeof createContinuityController>;

/** The slice as the consumer's reflection answers it (reflectors/endpointslices). */
const answer = {
  apiVersion: "discovery.k8s.io/v1",
  kind: "EndpointSlice",
  metadata: {
    name: "web-abcde",
    namespace: NS,
    labels: {
      "kubernetes.io/service-name": "web",
      "endpointslice.kubernetes.io/managed-by": "endpointslice.reflection.liqo.io",
      "liqo.io/managed-by": "reflection",
      "liqo.io/origin-cluster-id": ROME,
    },
  },
  addressType: "IPv4",
  endpoints: [
    { addresses: ["10.200.1.5"], conditions: { ready: true, serving: true, terminating: false } },
    { addresses: ["10.200.1.6"], conditions: { ready: false, serving: false, terminating: false } },
  ],
  ports: [{ name: "web", protocol: "TCP", port: 80 }],
} as KubeObject;

const slice = () => milan.get<EndpointSliceObject>(Resources.endpointSlices, "web-abcde", NS);
const readies = async () => (await slice()).endpoints?.map((e) => e.conditions?.ready);
const marks = async () => {
  const a = (await slice()).metadata.annotations ?? {};
  return { since: a[UNREACHABLE_SINCE_ANNOTATION], saved: a[UNREADY_ENDPOINTS_ANNOTATION] };
};
/** What the gateway writes: when the peer stopped answering, or nothing once it answers. */
const gatewaySays = (since: number | undefined) =>
  milan.mergePatch(
    TunnelEndpointResource,
    "rome",
    NS,
    {
      status: {
        connection: {
          status: "Connected",
          peerConfiguration: { unreachableSince: since === undefined ? null : new Date(since).toISOString() },
        },
      },
    },
    "status",
  );

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["milan"], nodes: 1 });
  milan = rig.client("milan");
  await installCrds(milan);
  await milan.create(Resources.namespaces, { metadata: { name: NS } });
  await milan.create(TunnelEndpointResource, {
    apiVersion: "net.liqo.io/v1alpha1",
    kind: "TunnelEndpoint",
    metadata: { name: "rome", namespace: NS },
    spec: {
      clusterID: ROME,
      localPodCIDR: "10.101.0.0/16",
      localNATPodCIDR: "None",
      localExternalCIDR: "10.1.0.0/16",
      localNATExternalCIDR: "None",
      remotePodCIDR: "10.100.0.0/16",
      remoteNATPodCIDR: "10.200.0.0/16",
      remoteExternalCIDR: "10.2.0.0/16",
      remoteNATExternalCIDR: "None",
      endpointIP: "192.0.2.10",
      backendType: "wireguard",
      backend_config: {},
    },
  } as KubeObject);
  await milan.apply(Resources.endpointSlices, answer, { fieldManager: ENGINE, force: true });
  // The provider's own slice of the reflected Service: the Service's labels, and an owner.
  const svc = await milan.create(Resources.services, {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "web", namespace: NS },
    spec: { ports: [{ port: 80 }] },
  } as KubeObject);
  await milan.create(Resources.endpointSlices, {
    ...answer,
    metadata: {
      name: "web-own",
      namespace: NS,
      labels: { ...answer.metadata.labels },
      ownerReferences: [{ apiVersion: "v1", kind: "Service", name: "web", uid: svc.metadata.uid!, controller: true }],
    },
  } as KubeObject);
  controller = createContinuityController({ client: milan, thresholdMs: THRESHOLD_MS });
  await controller.start();
}, 300_000);

afterAll(async () => {
  await controller?.stop();
  await rig?.down();
}, 120_000);

describe("service continuity controller (provider side)", () => {
  test("an outage within the threshold marks nothing; past it, every endpoint is not ready with what it was kept; the provider's own slice is left alone", async () => {
    const since = Date.now();
    await gatewaySays(since);
    await holdsFor(
      "the slice as written within the threshold",
      async () => Bun.deepEquals(await readies(), [true, false]),
      THRESHOLD_MS / 2,
      { describe: readies },
    );
    await waitFor("the slice marked", async () => (await marks()).since !== undefined, {
      timeoutMs: 20_000,
      describe: slice,
    });
    expect(await readies()).toEqual([false, false]);
    expect(await marks()).toEqual({
      since: new Date(since).toISOString(),
      saved: JSON.stringify([
        ["10.200.1.5", true],
        ["10.200.1.6", false],
      ]),
    });
    const own = await milan.get<EndpointSliceObject>(Resources.endpointSlices, "web-own", NS);
    expect(own.endpoints?.map((e) => e.conditions?.ready)).toEqual([true, false]);
    expect(own.metadata.annotations?.[UNREACHABLE_SINCE_ANNOTATION]).toBeUndefined();
  }, 60_000);

  test("the consumer's reflection rewriting the slice in the same outage: its answer stands, not marked again, and the engine sees it equal (its marks are not removals)", async () => {
    await milan.apply(Resources.endpointSlices, answer, { fieldManager: ENGINE, force: true });
    await holdsFor(
      "the consumer's rewrite standing, not marked again",
      async () => Bun.deepEquals(await readies(), [true, false]),
      THRESHOLD_MS * 1.5,
      { describe: readies },
    );
    expect((await marks()).since).toBeDefined();
    expect(isEqual(convergence(answer, (await slice()) as KubeObject, ENGINE))).toBe(true);
  }, 60_000);

  test("the peer answering again after a rewrite: only the marks go", async () => {
    await gatewaySays(undefined);
    await waitFor("the marks gone", async () => (await marks()).since === undefined, {
      timeoutMs: 20_000,
      describe: slice,
    });
    expect(await readies()).toEqual([true, false]);
    expect(await marks()).toEqual({ since: undefined, saved: undefined });
  }, 60_000);

  test("a new outage marks it again; the peer answering restores exactly what it was, equal to the reflection's answer", async () => {
    await gatewaySays(Date.now() - 10_000);
    await waitFor("the slice marked again", async () => (await marks()).since !== undefined, { timeoutMs: 20_000 });
    expect(await readies()).toEqual([false, false]);
    await gatewaySays(undefined);
    await waitFor("the marks gone", async () => (await marks()).since === undefined, { timeoutMs: 20_000 });
    const restored = await slice();
    expect(restored.endpoints).toEqual(answer.endpoints as EndpointSliceObject["endpoints"]);
    expect(isEqual(convergence(answer, restored as KubeObject, ENGINE))).toBe(true);
  }, 60_000);
});
