// The event recorder against a real API server: one Event per (object, reason, message) in the
// window; a write that fails for good frees its slot so the next occurrence is recorded; which
// failures are worth another attempt.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { KubeClient } from "./client.ts";
import { KubeApiError } from "./errors.ts";
import { Resources, type KubeObject } from "./resources.ts";
import { silentLogger } from "../log.ts";
import { startTestRig, type TestRig } from "../../tests/rig/testing.ts";
import { createEventRecorder, isTransientEventError } from "./events.ts";

let rig: TestRig;
let client: KubeClient;

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["rome"], nodes: 1 });
  client = rig.client("rome");
}, 600_000);

afterAll(async () => {
  await rig?.down();
});

const events = async (namespace: string, name: string) =>
  // biome-ignore lint/suspicious/noExplicitAny: Events read back from a real API server, asserted on a few fields
  (await client.list<any>(Resources.events, { namespace })).items.filter((e) => e.involvedObject.name === name);

describe("event recorder", () => {
  test("records once per object, reason and message; a different message is another Event", async () => {
    await client.create(Resources.namespaces, { metadata: { name: "ev-once" } });
    const cm = await client.create(Resources.configMaps, { metadata: { name: "subject", namespace: "ev-once" } });
    const recorder = createEventRecorder(client, "test", silentLogger);
    const obj = { ...cm, apiVersion: "v1", kind: "ConfigMap" } as KubeObject;
    recorder.warning(obj, "Broken", "first");
    recorder.warning(obj, "Broken", "first");
    recorder.normal(obj, "Broken", "second");
    await recorder.flush();
    const got = await events("ev-once", "subject");
    expect(got.map((e) => `${e.type} ${e.reason} ${e.message}`).sort()).toEqual([
      "Normal Broken second",
      "Warning Broken first",
    ]);
    expect(got[0].involvedObject).toMatchObject({ kind: "ConfigMap", namespace: "ev-once", uid: cm.metadata.uid });
    expect(got[0].source.component).toBe("test");
  });

  test("a write that fails for good is not remembered: once the cause is gone the same Event is recorded", async () => {
    const recorder = createEventRecorder(client, "test", silentLogger, { attempts: 2, baseDelayMs: 10 });
    // Its namespace does not exist yet: the API server refuses the Event (404, not worth retrying).
    const ghost = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "early", namespace: "ev-later", uid: "0000-early" },
    } as KubeObject;
    recorder.warning(ghost, "ReflectionPluginQuarantined", "configmaps not reflected: plugin x trapped");
    await recorder.flush();
    await client.create(Resources.namespaces, { metadata: { name: "ev-later" } });
    recorder.warning(ghost, "ReflectionPluginQuarantined", "configmaps not reflected: plugin x trapped");
    await recorder.flush();
    const got = await events("ev-later", "early");
    expect(got).toHaveLength(1);
    expect(got[0].reason).toBe("ReflectionPluginQuarantined");
  });

  test("transient failures are retried, the others are not", () => {
    const err = (status: number) => new KubeApiError("x", status, "Reason", "ns/name");
    for (const s of [0, 409, 429, 500, 503, 504]) expect(isTransientEventError(err(s))).toBe(true);
    for (const s of [400, 403, 404, 422]) expect(isTransientEventError(err(s))).toBe(false);
    expect(isTransientEventError(new TypeError("fetch failed"))).toBe(true);
  });
});
