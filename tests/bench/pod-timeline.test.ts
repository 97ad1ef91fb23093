import { describe, expect, test } from "bun:test";
import { LOCAL_STEPS, OFFLOADED_STEPS, phases, stampPod, type Marks } from "./pod-timeline.ts";

const names = { created: "created", scheduled: "scheduled", ready: "ready" } as const;
const pod = (nodeName?: string, ready?: "True" | "False") => ({
  metadata: { name: "p-0" },
  spec: nodeName ? { nodeName } : {},
  status: ready ? { conditions: [{ type: "Ready", status: ready }] } : {},
});

describe("stampPod", () => {
  test("each mark is the first event that showed it; later events move nothing", () => {
    const m: Marks = {};
    stampPod(m, pod(), 100, names);
    stampPod(m, pod("n1"), 250, names);
    stampPod(m, pod("n1", "False"), 300, names);
    stampPod(m, pod("n1", "True"), 900, names);
    stampPod(m, pod("n1", "True"), 1200, names);
    expect(m).toEqual({ created: 100, scheduled: 250, ready: 900 });
  });

  test("a pod first seen already scheduled and Ready gets every mark at once", () => {
    const m: Marks = {};
    stampPod(m, pod("n1", "True"), 500, {
      created: "remoteCreated",
      scheduled: "remoteScheduled",
      ready: "remoteReady",
    });
    expect(m).toEqual({ remoteCreated: 500, remoteScheduled: 500, remoteReady: 500 });
  });
});

describe("phases", () => {
  test("offloaded: one duration per step, in order, from consecutive marks", () => {
    const m: Marks = {
      created: 0,
      scheduled: 10,
      shadow: 40,
      remoteCreated: 60,
      remoteScheduled: 80,
      remoteReady: 2080,
      ready: 2580,
    };
    expect(phases([m], OFFLOADED_STEPS).map((p) => p.ms[0])).toEqual([10, 30, 20, 20, 2000, 500]);
  });

  test("a pod missing a mark is left out of the steps that need it, not of the others", () => {
    const full: Marks = { created: 0, scheduled: 5, ready: 100 };
    const unscheduled: Marks = { created: 0 };
    expect(phases([full, unscheduled], LOCAL_STEPS)).toEqual([
      { step: "created → scheduled", ms: [5] },
      { step: "scheduled → Ready", ms: [95] },
    ]);
  });
});
