import { describe, expect, test } from "bun:test";
import type { KubeClient } from "../../core/kube/client.ts";
import type { Pod } from "../../core/kube/types.ts";
import { pullFailureMessage, pullFailures, watchPulls } from "./pull-watch.ts";

const pod = (name: string, waiting?: { reason: string; message?: string }, init = false): Pod => {
  const statuses = [
    { name: "c", image: "registry.example.com/liqo:9.9.9", state: waiting ? { waiting } : { running: {} } },
  ];
  return {
    metadata: { name, namespace: "liqo" },
    status: init ? { initContainerStatuses: statuses } : { containerStatuses: statuses },
  } as Pod;
};

describe("pullFailures", () => {
  test("containers waiting on an image they cannot pull, init containers included; other waits are not", () => {
    const got = pullFailures([
      pod("a", { reason: "ErrImagePull", message: "not found" }),
      pod("b", { reason: "ImagePullBackOff" }, true),
      pod("c", { reason: "ContainerCreating" }),
      pod("d", { reason: "CrashLoopBackOff" }),
      pod("e"),
    ]);
    expect(got).toEqual([
      { pod: "a", image: "registry.example.com/liqo:9.9.9", reason: "ErrImagePull", message: "not found" },
      { pod: "b", image: "registry.example.com/liqo:9.9.9", reason: "ImagePullBackOff", message: "" },
    ]);
  });

  test("the message names the pod, the image, the runtime's words and the fix", () => {
    const [f] = pullFailures([pod("liqo-auth-1", { reason: "ErrImagePull", message: "401 Unauthorized" })]);
    const m = pullFailureMessage(f!, "liqo");
    expect(m).toContain(
      "pod liqo/liqo-auth-1 cannot pull image registry.example.com/liqo:9.9.9 (ErrImagePull: 401 Unauthorized)",
    );
    expect(m).toContain("--set image.repository=");
    expect(m).toContain("docs/byo-cluster.md");
  });
});

describe("watchPulls", () => {
  const clientOf = (pages: Pod[][]) => {
    let i = 0;
    return { list: async () => ({ items: pages[Math.min(i++, pages.length - 1)] }) } as unknown as KubeClient;
  };

  test("a pull failing for the grace period is reported once; one that recovers is not", async () => {
    const failing = clientOf([[pod("a", { reason: "ErrImagePull" })]]);
    const seen: string[] = [];
    const stop = new AbortController();
    await watchPulls(failing, "liqo", {
      graceMs: 30,
      intervalMs: 10,
      signal: stop.signal,
      onFailure: (f) => seen.push(f.pod),
    });
    expect(seen).toEqual(["a"]);

    const recovering = clientOf([[pod("a", { reason: "ErrImagePull" })], [pod("a")]]);
    const none: string[] = [];
    const stop2 = new AbortController();
    setTimeout(() => stop2.abort(), 200);
    await watchPulls(recovering, "liqo", {
      graceMs: 100,
      intervalMs: 10,
      signal: stop2.signal,
      onFailure: (f) => none.push(f.pod),
    });
    expect(none).toEqual([]);
  });
});
