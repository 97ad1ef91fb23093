// Telling a gateway's Lease holder is dead from its pod: the identity names the pod, and the pod's
// container statuses say whether anything of it still runs.
import { describe, expect, test } from "bun:test";
import { holderPodDead, podOfIdentity } from "./leader.ts";

const pod = (...states: Record<string, unknown>[]) => ({
  metadata: { name: "liqo-gateway-7d9-abc" },
  status: { containerStatuses: states.map((state) => ({ state })) },
});

describe("podOfIdentity", () => {
  test("<pod>-<pid>: the pod", () => expect(podOfIdentity("liqo-gateway-7d9-abc-1")).toBe("liqo-gateway-7d9-abc"));
  test("no pid at the end: none (not a pod's identity)", () => {
    expect(podOfIdentity("host_4f6c-uuid")).toBeUndefined();
    expect(podOfIdentity("12")).toBeUndefined();
    expect(podOfIdentity("")).toBeUndefined();
  });
});

describe("holderPodDead", () => {
  test("a running container: alive", () => expect(holderPodDead(pod({ running: {} }))).toBe(false));
  test("terminated (SIGKILL), or waiting to restart (back-off): dead", () => {
    expect(holderPodDead(pod({ terminated: { exitCode: 137 } }))).toBe(true);
    expect(holderPodDead(pod({ waiting: { reason: "CrashLoopBackOff" } }))).toBe(true);
  });
  test("one of two containers still running: alive", () =>
    expect(holderPodDead(pod({ terminated: {} }, { running: {} }))).toBe(false));
  test("no pod, or no statuses yet: unknown, so not dead (the Lease is left to expire)", () => {
    expect(holderPodDead(undefined)).toBe(false);
    expect(holderPodDead(pod())).toBe(false);
    expect(holderPodDead({ metadata: {} })).toBe(false);
  });
});
