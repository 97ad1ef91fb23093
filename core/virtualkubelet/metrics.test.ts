// A virtual kubelet's series: virtual nodes, their conditions, the pods bound to them by phase;
// through a peer view of the registry (as in the controller manager) each gets remote_cluster_id.
import { describe, expect, test } from "bun:test";
import { createRegistry, parsePrometheusText, type Registry } from "../metrics/index.ts";
import { peerRegistry } from "../peering/foreigncluster/peer-registry.ts";
import {
  conditionSeries,
  podsByPhase,
  registerVirtualKubeletMetrics,
  unreachablePods,
  type NodeView,
  type VirtualKubeletMetricsSource,
} from "./metrics.ts";

const pod = (phase?: string) => ({ status: phase === undefined ? {} : { phase } });

describe("unreachablePods", () => {
  test("counts the pods service continuity holds not Ready, not others", () => {
    const notReady = (reason: string) => ({
      status: {
        phase: "Running",
        conditions: ["Ready", "ContainersReady"].map((type) => ({ type, status: "False", reason })),
      },
    });
    expect(
      unreachablePods([notReady("RemoteClusterUnreachable"), notReady("ContainersNotReady"), pod("Running")]),
    ).toBe(1);
  });
});

describe("podsByPhase", () => {
  test("every phase present, zeros included; no phase yet is Pending; an unheard-of phase is Unknown", () => {
    expect(
      Object.fromEntries(podsByPhase([pod("Running"), pod("Running"), pod(), pod("Failed"), pod("Evicted")])),
    ).toEqual({ Pending: 1, Running: 2, Succeeded: 0, Failed: 1, Unknown: 1 });
    expect([...podsByPhase([]).values()]).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("conditionSeries", () => {
  test("1 for the status each condition has, 0 for the other two", () => {
    const nodes: NodeView[] = [
      {
        name: "liqo-rome",
        conditions: [
          { type: "Ready", status: "False" },
          { type: "MemoryPressure", status: "Unknown" },
        ],
      },
    ];
    expect(conditionSeries(nodes).map((s) => `${s.labels.condition}/${s.labels.status}=${s.value}`)).toEqual([
      "Ready/true=0",
      "Ready/false=1",
      "Ready/unknown=0",
      "MemoryPressure/true=0",
      "MemoryPressure/false=0",
      "MemoryPressure/unknown=1",
    ]);
  });

  test("a node with no conditions yet has no series", () => {
    expect(conditionSeries([{ name: "liqo-rome", conditions: [] }])).toEqual([]);
  });
});

/** name{labels} value, one per sample, for the families named. */
async function lines(registry: Registry, ...names: string[]): Promise<string[]> {
  return parsePrometheusText(await registry.expose())
    .filter((f) => names.includes(f.name))
    .flatMap((f) =>
      f.samples.map(
        (s) =>
          `${s.name}{${Object.entries(s.labels)
            .map(([k, v]) => `${k}=${v}`)
            .join(",")}} ${s.value}`,
      ),
    );
}

describe("registerVirtualKubeletMetrics", () => {
  test("through the controller manager's peer views: two peerings' nodes and pods, each with its remote_cluster_id; a closed view's series go", async () => {
    const parent = createRegistry();
    const rome: VirtualKubeletMetricsSource = {
      nodes: () => [
        { name: "liqo-rome", conditions: [{ type: "Ready", status: "True" }] },
        { name: "rome-gpu", conditions: [] },
      ],
      pods: () => [pod("Running"), pod("Pending")],
    };
    const milan: VirtualKubeletMetricsSource = {
      nodes: () => [{ name: "liqo-milan", conditions: [{ type: "Ready", status: "Unknown" }] }],
      pods: () => [],
    };
    const romeView = peerRegistry(parent, "rome-id");
    registerVirtualKubeletMetrics(romeView, rome);
    registerVirtualKubeletMetrics(peerRegistry(parent, "milan-id"), milan);

    expect(await lines(parent, "liqo_virtual_node_info")).toEqual([
      "liqo_virtual_node_info{node=liqo-rome,remote_cluster_id=rome-id} 1",
      "liqo_virtual_node_info{node=rome-gpu,remote_cluster_id=rome-id} 1",
      "liqo_virtual_node_info{node=liqo-milan,remote_cluster_id=milan-id} 1",
    ]);
    expect(await lines(parent, "liqo_virtual_node_condition")).toEqual([
      "liqo_virtual_node_condition{node=liqo-rome,condition=Ready,status=true,remote_cluster_id=rome-id} 1",
      "liqo_virtual_node_condition{node=liqo-rome,condition=Ready,status=false,remote_cluster_id=rome-id} 0",
      "liqo_virtual_node_condition{node=liqo-rome,condition=Ready,status=unknown,remote_cluster_id=rome-id} 0",
      "liqo_virtual_node_condition{node=liqo-milan,condition=Ready,status=true,remote_cluster_id=milan-id} 0",
      "liqo_virtual_node_condition{node=liqo-milan,condition=Ready,status=false,remote_cluster_id=milan-id} 0",
      "liqo_virtual_node_condition{node=liqo-milan,condition=Ready,status=unknown,remote_cluster_id=milan-id} 1",
    ]);
    expect((await lines(parent, "liqo_offloaded_pods")).filter((l) => !l.endsWith(" 0"))).toEqual([
      "liqo_offloaded_pods{phase=Pending,remote_cluster_id=rome-id} 1",
      "liqo_offloaded_pods{phase=Running,remote_cluster_id=rome-id} 1",
    ]);
    expect((await lines(parent, "liqo_offloaded_pods")).length).toBe(10); // five phases per peering

    romeView.close(); // rome's virtual kubelet stopped: its series go, milan's stay
    expect(await lines(parent, "liqo_virtual_node_info")).toEqual([
      "liqo_virtual_node_info{node=liqo-milan,remote_cluster_id=milan-id} 1",
    ]);
  });

  test("a kubelet that runs no node (stopped) has no node series", async () => {
    const registry = createRegistry();
    registerVirtualKubeletMetrics(registry, { nodes: () => [], pods: () => [] });
    expect(await lines(registry, "liqo_virtual_node_info", "liqo_virtual_node_condition")).toEqual([]);
  });
});
