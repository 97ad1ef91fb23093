import { describe, expect, test } from "bun:test";
import { computeStatus, offloadingPhase, sameStatus, type ClusterMapping } from "./status.ts";

const t0 = new Date("2022-05-05T15:08:33.123Z");
const t1 = new Date("2022-05-05T15:09:00.000Z");
const cluster = (name: string, requested: boolean, phase?: string): ClusterMapping => ({
  name,
  namespaceMapKey: `liqo-tenant-${name}/${name}`,
  requested,
  phase,
});
const base = { previous: undefined, deleting: false, remoteNamespaceName: "liqo-demo", now: t0 };

describe("offloadingPhase", () => {
  test.each([
    [false, 0, 0, 0, "NoClusterSelected"],
    [false, 2, 2, 0, "Ready"],
    [false, 2, 0, 2, "AllFailed"],
    [false, 2, 1, 1, "SomeFailed"],
    [false, 2, 1, 0, "InProgress"],
    [true, 2, 2, 0, "Terminating"],
  ] as const)("deleting=%p required=%p ready=%p failed=%p -> %s", (deleting, required, ready, failed, phase) => {
    expect(offloadingPhase(deleting, required, ready, failed)).toBe(phase);
  });
});

describe("computeStatus", () => {
  test("Liqo's documented example: florence not selected, naples ready", () => {
    const s = computeStatus({
      ...base,
      clusters: [cluster("naples-7881be", true, "Accepted"), cluster("florence-539f8b", false)],
    });
    expect(s.offloadingPhase).toBe("Ready");
    expect(s.remoteNamespaceName).toBe("liqo-demo");
    expect(s.remoteNamespacesConditions).toEqual({
      "florence-539f8b": [
        {
          type: "OffloadingRequired",
          status: "False",
          reason: "ClusterNotSelected",
          message: "You have not selected this cluster through ClusterSelector fields",
          lastTransitionTime: "2022-05-05T15:08:33Z",
        },
      ],
      "naples-7881be": [
        {
          type: "OffloadingRequired",
          status: "True",
          reason: "ClusterSelected",
          message: "The remote cluster has been selected through the ClusterSelector field",
          lastTransitionTime: "2022-05-05T15:08:33Z",
        },
        {
          type: "Ready",
          status: "True",
          reason: "RemoteNamespaceCreated",
          message: "Namespace correctly offloaded on this cluster",
          lastTransitionTime: "2022-05-05T15:08:33Z",
        },
      ],
    });
  });
  test("a conflict in one of two clusters is SomeFailed with CreationLoopBackOff pointing at the NamespaceMap", () => {
    const s = computeStatus({
      ...base,
      clusters: [cluster("milan", true, "Accepted"), cluster("naples", true, "CreationLoopBackOff")],
    });
    expect(s.offloadingPhase).toBe("SomeFailed");
    const ready = s.remoteNamespacesConditions!.naples!.find((c) => c.type === "Ready")!;
    expect(ready.status).toBe("False");
    expect(ready.reason).toBe("CreationLoopBackOff");
    expect(ready.message).toContain("liqo-tenant-naples/naples");
  });
  test("a selected cluster without a twin yet is Creating and InProgress", () => {
    const s = computeStatus({ ...base, clusters: [cluster("milan", true)] });
    expect(s.offloadingPhase).toBe("InProgress");
    expect(s.remoteNamespacesConditions!.milan![1]!.reason).toBe("Creating");
  });
  test("a deselected cluster whose twin is terminating keeps a Ready=False Terminating condition", () => {
    const s = computeStatus({ ...base, clusters: [cluster("milan", false, "Terminating")] });
    expect(s.remoteNamespacesConditions!.milan!.map((c) => c.reason)).toEqual(["ClusterNotSelected", "Terminating"]);
  });
  test("while deleting, clusters whose twin is gone drop out, so an empty map means done", () => {
    const s = computeStatus({
      ...base,
      deleting: true,
      clusters: [cluster("milan", false), cluster("naples", false, "Terminating")],
    });
    expect(s.offloadingPhase).toBe("Terminating");
    expect(Object.keys(s.remoteNamespacesConditions!)).toEqual(["naples"]);
  });
  test("a condition keeps its transition time while its status holds, and gets a new one when it flips", () => {
    const first = computeStatus({ ...base, clusters: [cluster("milan", true)] });
    const same = computeStatus({ ...base, previous: first, now: t1, clusters: [cluster("milan", true)] });
    expect(sameStatus(same, first)).toBe(true);
    const flipped = computeStatus({
      ...base,
      previous: first,
      now: t1,
      clusters: [cluster("milan", true, "Accepted")],
    });
    expect(flipped.remoteNamespacesConditions!.milan![0]!.lastTransitionTime).toBe("2022-05-05T15:08:33Z");
    expect(flipped.remoteNamespacesConditions!.milan![1]!.lastTransitionTime).toBe("2022-05-05T15:09:00Z");
  });
  test("a NamespaceMap that went away takes its conditions with it", () => {
    const first = computeStatus({
      ...base,
      clusters: [cluster("milan", true, "Accepted"), cluster("naples", true, "Accepted")],
    });
    const next = computeStatus({ ...base, previous: first, clusters: [cluster("milan", true, "Accepted")] });
    expect(Object.keys(next.remoteNamespacesConditions!)).toEqual(["milan"]);
  });
  test("another reason for not selecting (an invalid spec) replaces ClusterNotSelected", () => {
    const s = computeStatus({
      ...base,
      clusters: [cluster("milan", false)],
      notSelected: { reason: "InvalidSpec", message: "bad" },
    });
    expect(s.remoteNamespacesConditions!.milan).toEqual([
      {
        type: "OffloadingRequired",
        status: "False",
        reason: "InvalidSpec",
        message: "bad",
        lastTransitionTime: "2022-05-05T15:08:33Z",
      },
    ]);
    expect(s.offloadingPhase).toBe("NoClusterSelected");
  });
  test("observedGeneration is kept when not given (an invalid spec was not applied)", () => {
    const s = computeStatus({ ...base, previous: { observedGeneration: 3 }, clusters: [] });
    expect(s.observedGeneration).toBe(3);
  });
});
