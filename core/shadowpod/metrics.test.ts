// liqo_shadowpods: the provider's ShadowPods per consumer and by the phase of the pod each keeps.
import { describe, expect, test } from "bun:test";
import type { KubeObject } from "../kube/resources.ts";
import { createRegistry } from "../metrics/index.ts";
import { registerShadowPodMetrics, shadowPodCounts, type ShadowPodCountSource } from "./metrics.ts";

const shadow = (ns: string, name: string): KubeObject => ({ metadata: { namespace: ns, name, uid: `${ns}/${name}` } });
const shadows = [
  shadow("team-rome", "a"),
  shadow("team-rome", "b"),
  shadow("team-rome", "c"),
  shadow("team-rome", "d"),
  shadow("team-milan", "a"),
  shadow("elsewhere", "x"),
];
const pods: Record<string, { status?: { phase?: string } }> = {
  "team-rome/a": { status: { phase: "Running" } },
  "team-rome/b": { status: { phase: "Running" } },
  "team-rome/c": {}, // just created: no phase written yet
  "team-milan/a": { status: { phase: "Succeeded" } },
  "elsewhere/x": { status: { phase: "Running" } },
};
const consumers: Record<string, string> = { "team-rome": "rome-id", "team-milan": "milan-id" };
const source: ShadowPodCountSource<KubeObject> = {
  shadows: () => shadows,
  podOf: (s) => pods[s.metadata.uid!],
  consumerOf: (s) => consumers[s.metadata.namespace!],
};

describe("shadowPodCounts", () => {
  test("per consumer and pod phase; no pod is NoPod, a pod without a phase is Pending, outside peers' namespaces is unknown", () => {
    const got = shadowPodCounts(source).map((e) => `${e.labels.remote_cluster_id} ${e.labels.phase} ${e.value}`);
    expect(got.sort()).toEqual([
      "milan-id Succeeded 1",
      "rome-id NoPod 1",
      "rome-id Pending 1",
      "rome-id Running 2",
      "unknown Running 1",
    ]);
  });

  test("no ShadowPods, no series", () => {
    expect(shadowPodCounts({ ...source, shadows: () => [] })).toEqual([]);
  });
});

describe("registerShadowPodMetrics", () => {
  test("counted again at each scrape: a pod that went is NoPod at the next one", async () => {
    const registry = createRegistry();
    const kept = { ...pods };
    registerShadowPodMetrics(registry, { ...source, podOf: (s) => kept[s.metadata.uid!] });
    expect(await registry.expose()).toContain('liqo_shadowpods{remote_cluster_id="milan-id",phase="Succeeded"} 1\n');
    delete kept["team-milan/a"];
    const text = await registry.expose();
    expect(text).toContain('liqo_shadowpods{remote_cluster_id="milan-id",phase="NoPod"} 1\n');
    expect(text).not.toContain('phase="Succeeded"');
    expect(text).toContain("# TYPE liqo_shadowpods gauge\n");
  });
});
