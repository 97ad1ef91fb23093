import { describe, expect, test } from "bun:test";
import { pendingNeedsAttention } from "./offloader.ts";

// Which remote Pending statuses are written at once, and which wait (PENDING_STATUS_DELAY_MS).
describe("pendingNeedsAttention", () => {
  test.each([
    ["just created", { phase: "Pending", qosClass: "BestEffort" }, false],
    ["scheduled", { phase: "Pending", conditions: [{ type: "PodScheduled", status: "True" }] }, false],
    [
      "containers being created",
      { phase: "Pending", containerStatuses: [{ name: "a", state: { waiting: { reason: "ContainerCreating" } } }] },
      false,
    ],
    [
      "init containers starting",
      { phase: "Pending", initContainerStatuses: [{ name: "i", state: { waiting: { reason: "PodInitializing" } } }] },
      false,
    ],
    [
      "unschedulable remotely",
      { phase: "Pending", conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable" }] },
      true,
    ],
    [
      "an image that cannot be pulled",
      { phase: "Pending", containerStatuses: [{ name: "a", state: { waiting: { reason: "ImagePullBackOff" } } }] },
      true,
    ],
    [
      "a failing init container",
      { phase: "Pending", initContainerStatuses: [{ name: "i", state: { waiting: { reason: "CrashLoopBackOff" } } }] },
      true,
    ],
    [
      "containers not ready yet",
      {
        phase: "Pending",
        conditions: [
          { type: "Ready", status: "False", reason: "ContainersNotReady" },
          { type: "PodScheduled", status: "True" },
        ],
      },
      false,
    ],
    [
      "a False condition without a reason",
      { phase: "Pending", conditions: [{ type: "Ready", status: "False" }] },
      false,
    ],
  ])("%s → %p", (_what, status, expected) => {
    expect(pendingNeedsAttention(status)).toBe(expected);
  });
});
