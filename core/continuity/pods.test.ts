import { describe, expect, test } from "bun:test";
import { holdNotReady, markedUnreachable, UNREACHABLE_REASON, unreachablePodStatus } from "./pods.ts";

const now = new Date("2026-11-28T17:00:00Z");
const running = {
  phase: "Running",
  podIP: "10.1.0.5",
  conditions: [
    { type: "PodScheduled", status: "True" },
    { type: "Ready", status: "True", lastTransitionTime: "2026-11-28T16:00:00Z" },
    {
      type: "ContainersReady",
      status: "False",
      reason: "ContainersNotReady",
      lastTransitionTime: "2026-11-28T16:30:00Z",
    },
  ],
};

describe("unreachablePodStatus", () => {
  const out = unreachablePodStatus(running, "cluster milan unreachable for 15 s", now);
  const cond = (t: string) => out.conditions!.find((c) => c.type === t)!;
  test("Ready turns False with the reason", () =>
    expect(cond("Ready")).toEqual({
      type: "Ready",
      status: "False",
      reason: UNREACHABLE_REASON,
      message: "cluster milan unreachable for 15 s",
      lastTransitionTime: now.toISOString(),
    }));
  test("a condition already False keeps its transition time", () =>
    expect(cond("ContainersReady").lastTransitionTime).toBe("2026-11-28T16:30:00Z"));
  test("other conditions and fields are kept", () => {
    expect(cond("PodScheduled")).toEqual({ type: "PodScheduled", status: "True" });
    expect([out.phase, out.podIP]).toEqual(["Running", "10.1.0.5"]);
  });
  test("missing conditions are added", () =>
    expect(unreachablePodStatus({ phase: "Running" }, "m", now).conditions!.map((c) => [c.type, c.status])).toEqual([
      ["Ready", "False"],
      ["ContainersReady", "False"],
    ]));
});

describe("markedUnreachable", () => {
  test("a running pod is not", () => expect(markedUnreachable(running)).toBe(false));
  test("what unreachablePodStatus made is", () =>
    expect(markedUnreachable(unreachablePodStatus(running, "m", now))).toBe(true));
  test("no status is not", () => expect(markedUnreachable(undefined)).toBe(false));
});

describe("holdNotReady", () => {
  const remote = {
    ...running,
    phase: "Failed",
    conditions: [...running.conditions, { type: "Probe", status: "True" }],
  };
  test("the provider's status flows (phase, other conditions), Ready and ContainersReady held False", () => {
    const out = holdNotReady(remote, running, "m", now);
    expect(out.phase).toBe("Failed");
    expect(out.conditions!.find((c) => c.type === "Probe")?.status).toBe("True");
    expect(markedUnreachable(out)).toBe(true);
  });
  test("conditions already held keep their message and time: an unchanged remote status writes nothing", () => {
    const first = holdNotReady(running, running, "dark for 16 s", now);
    const again = holdNotReady(running, first, "dark for 40 s", new Date("2026-11-28T17:01:00Z"));
    expect(again).toEqual(first);
  });
});
