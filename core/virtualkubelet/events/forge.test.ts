import { describe, expect, test } from "bun:test";
import type { KubeObject } from "../../kube/resources.ts";
import { SHADOWPOD_EVENT_COMPONENT } from "../../apis/labels.ts";
import {
  eventSignature,
  homeward,
  isLiqoEvent,
  localEvent,
  localEventName,
  occurrences,
  skipReason,
  type RemoteEvent,
} from "./forge.ts";

const ctx = { localNamespace: "liqo-demo", remoteClusterId: "milan-id", remoteClusterName: "milan" };
const remote: RemoteEvent = {
  apiVersion: "v1",
  kind: "Event",
  metadata: { name: "web.18a1b2c3d4e5f607", namespace: "liqo-demo-rome-abc123", uid: "remote-event-uid" },
  involvedObject: {
    apiVersion: "v1",
    kind: "Pod",
    name: "web",
    namespace: "liqo-demo-rome-abc123",
    uid: "remote-pod-uid",
    fieldPath: "spec.containers{web}",
  },
  reason: "BackOff",
  message: "Back-off restarting failed container web",
  type: "Warning",
  count: 4,
  firstTimestamp: "2026-11-25T10:00:00Z",
  lastTimestamp: "2026-11-25T10:03:00Z",
  source: { component: "kubelet", host: "milan-node-1" },
};
const localPod: KubeObject = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "web", namespace: "liqo-demo", uid: "local-pod-uid", resourceVersion: "42" },
};

describe("localEvent", () => {
  // biome-ignore lint/suspicious/noExplicitAny: the forged Event, asserted field by field
  const out = localEvent(remote, localPod, ctx) as any;
  test("involvedObject is the local pod: its namespace and uid (what kubectl describe selects on)", () =>
    expect(out.involvedObject).toEqual({
      apiVersion: "v1",
      kind: "Pod",
      name: "web",
      namespace: "liqo-demo",
      uid: "local-pod-uid",
      resourceVersion: "42",
      fieldPath: "spec.containers{web}",
    }));
  test("in the local namespace, labelled as reflected from this peering", () => {
    expect(out.metadata.namespace).toBe("liqo-demo");
    expect(out.metadata.labels).toEqual({
      "liqo.io/managed-by": "event-reflection",
      "liqo.io/remote-cluster-id": "milan-id",
    });
    expect(out.metadata.annotations["liqo.io/remote-event"]).toBe("liqo-demo-rome-abc123/web.18a1b2c3d4e5f607");
  });
  test("reason, message, type, count and timestamps as the provider recorded them", () => {
    expect([out.reason, out.message, out.type, out.count]).toEqual([
      "BackOff",
      "Back-off restarting failed container web",
      "Warning",
      4,
    ]);
    expect([out.firstTimestamp, out.lastTimestamp]).toEqual(["2026-11-25T10:00:00Z", "2026-11-25T10:03:00Z"]);
  });
  test("source: the provider's component, its host and the cluster's name", () =>
    expect(out.source).toEqual({ component: "kubelet", host: "milan-node-1 (milan)" }));
  test("an events.k8s.io series: its count and last observation", () => {
    const e = localEvent(
      {
        ...remote,
        count: undefined,
        lastTimestamp: null,
        firstTimestamp: null,
        eventTime: "2026-11-25T09:00:00.123456Z",
        series: { count: 7, lastObservedTime: "2026-11-25T09:05:00.5Z" },
      },
      localPod,
      ctx,
      // biome-ignore lint/suspicious/noExplicitAny: the forged Event, asserted field by field
    ) as any;
    expect([e.count, e.firstTimestamp, e.lastTimestamp]).toEqual([7, "2026-11-25T09:00:00Z", "2026-11-25T09:05:00Z"]);
  });
});

describe("hostile or broken remote Events are bounded", () => {
  test("a huge message and reason are cut to the API server's limits", () => {
    // biome-ignore lint/suspicious/noExplicitAny: the forged Event, asserted field by field
    const e = localEvent({ ...remote, message: "x".repeat(10_000), reason: "R".repeat(500) }, localPod, ctx) as any;
    expect([e.message.length, e.reason.length]).toEqual([1024, 128]);
  });
  test("a type other than Normal or Warning becomes Normal", () =>
    // biome-ignore lint/suspicious/noExplicitAny: the forged Event, asserted field by field
    expect((localEvent({ ...remote, type: "Critical" }, localPod, ctx) as any).type).toBe("Normal"));
  test("counts: negative, absent, NaN or huge", () => {
    expect(occurrences({ ...remote, count: -5 })).toBe(1);
    expect(occurrences({ ...remote, count: undefined })).toBe(1);
    expect(occurrences({ ...remote, count: Number.NaN })).toBe(1);
    expect(occurrences({ ...remote, count: 1e20 })).toBe(2 ** 31 - 1);
  });
  test("a timestamp that is not one is replaced", () => {
    // biome-ignore lint/suspicious/noExplicitAny: the forged Event, asserted field by field
    const e = localEvent({ ...remote, firstTimestamp: "yesterday", lastTimestamp: "soon" }, localPod, ctx) as any;
    expect(Number.isNaN(Date.parse(e.lastTimestamp))).toBe(false);
    expect(e.firstTimestamp).toBe(e.lastTimestamp);
  });
  test("the local name is not the peer's to choose: it differs from the remote one and per peering", () => {
    const a = localEventName(remote, "milan-id");
    expect(a).not.toBe(remote.metadata.name);
    expect(a.startsWith("web.")).toBe(true);
    expect(localEventName(remote, "paris-id")).not.toBe(a);
    expect(localEventName({ ...remote, metadata: { ...remote.metadata, name: "web.other" } }, "milan-id")).not.toBe(a);
    expect(
      localEventName({ ...remote, involvedObject: { ...remote.involvedObject, name: "n".repeat(400) } }, "milan-id")
        .length,
    ).toBeLessThanOrEqual(253);
  });
});

describe("what never comes home", () => {
  test("Events liqo wrote, on either side: by component, or our own reflected copies", () => {
    expect(isLiqoEvent({ ...remote, source: { component: "liqo-shadowpod" } })).toBe(true);
    expect(isLiqoEvent({ ...remote, source: {}, reportingComponent: "liqo-reflection" })).toBe(true);
    expect(
      isLiqoEvent({
        ...remote,
        metadata: { ...remote.metadata, labels: { "liqo.io/managed-by": "event-reflection" } },
      }),
    ).toBe(true);
    expect(isLiqoEvent(remote)).toBe(false);
    expect(isLiqoEvent({ ...remote, source: { component: "liquor-controller" } })).toBe(false);
  });
  test("skipReason: liqo's, no object, a kind not reflected, an object in another namespace; a pod's is reflected", () => {
    expect(skipReason({ ...remote, source: { component: "liqo-virtual-kubelet" } })).toBe("written by liqo");
    expect(skipReason({ ...remote, involvedObject: undefined })).toBe("no involved object");
    expect(skipReason({ ...remote, involvedObject: { kind: "Node", name: "milan-node-1" } })).toBe(
      "kind Node is not reflected",
    );
    expect(skipReason({ ...remote, involvedObject: { ...remote.involvedObject, namespace: "kube-system" } })).toBe(
      "involved object in another namespace",
    );
    expect(skipReason(remote)).toBeUndefined();
  });
  test("the signature changes with the count, so an update is written, and not otherwise", () => {
    expect(eventSignature({ ...remote, count: 5 })).not.toBe(eventSignature(remote));
    expect(eventSignature({ ...remote, metadata: { ...remote.metadata, resourceVersion: "9" } })).toBe(
      eventSignature(remote),
    );
  });
});

describe("the provider's refusal to create an offloaded pod comes home on the local pod", () => {
  const refusal: RemoteEvent = {
    ...remote,
    involvedObject: {
      apiVersion: "virtualkubelet.liqo.io/v1alpha1",
      kind: "ShadowPod",
      name: "web",
      namespace: "liqo-demo-rome-abc123",
      uid: "shadowpod-uid",
    },
    reason: "PodCreationFailed",
    message:
      'cannot create pod liqo-demo-rome-abc123/web: pods "web" is forbidden: violates PodSecurity "baseline:latest"',
    source: { component: SHADOWPOD_EVENT_COMPONENT },
  };
  test("as an Event of the pod of the same name, no longer liqo's (so not skipped), the message kept", () => {
    const ev = homeward(refusal);
    expect(ev.involvedObject).toEqual({
      kind: "Pod",
      apiVersion: "v1",
      name: "web",
      namespace: "liqo-demo-rome-abc123",
    });
    expect(skipReason(ev)).toBeUndefined();
    expect(localEvent(ev, localPod, ctx)).toMatchObject({
      involvedObject: { kind: "Pod", name: "web", uid: "local-pod-uid" },
      reason: "PodCreationFailed",
      message: refusal.message,
      source: { component: "shadowpod-controller", host: "milan" },
    });
  });
  test("other Events of ShadowPods, and other liqo components' PodCreationFailed, stay away", () => {
    for (const ev of [
      { ...refusal, reason: "PodRecreated" },
      { ...refusal, source: { component: "liqo-virtual-kubelet" } },
      { ...refusal, source: { component: "someone-else" } },
    ]) {
      expect(homeward(ev)).toBe(ev);
      expect(skipReason(ev)).toBeDefined();
    }
  });
});
