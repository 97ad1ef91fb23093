// A virtual kubelet's own series: its virtual nodes with their conditions, and the pods bound to
// them by phase. All are read at scrape time from the caches the kubelet keeps anyway (the Node's
// watch, the offloader's pod informers). In the controller manager each peering's kubelet writes
// through a peer view of the registry (core/peering/foreigncluster/peer-registry.ts), which adds
// remote_cluster_id to every series.
import { markedUnreachable } from "../continuity/pods.ts";
import type { PodStatus } from "../kube/types.ts";
import type { LabeledValue, Registry } from "../metrics/index.ts";
import type { NodeCondition } from "./node/forge.ts";

/** Pod phases as the API defines them; a pod with none yet is Pending (the API server's default). */
export const POD_PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"] as const;
/** Condition statuses, lowercased as kube-state-metrics' kube_node_status_condition has them. */
const CONDITION_STATUSES = ["true", "false", "unknown"] as const;

export interface NodeView {
  name: string;
  conditions: readonly Pick<NodeCondition, "type" | "status">[];
}

/** Every phase with its count (zeros included, so a panel shows 0 Running rather than no line). */
export function podsByPhase(pods: readonly { status?: { phase?: string } }[]): Map<string, number> {
  const counts = new Map<string, number>(POD_PHASES.map((p) => [p, 0]));
  for (const p of pods) {
    const phase = p.status?.phase ?? "Pending";
    const known = counts.has(phase) ? phase : "Unknown";
    counts.set(known, counts.get(known)! + 1);
  }
  return counts;
}

/** One series per node, condition and status: 1 for the status the condition has, 0 for the others. */
export function conditionSeries(nodes: readonly NodeView[]): LabeledValue<"node" | "condition" | "status">[] {
  const out: LabeledValue<"node" | "condition" | "status">[] = [];
  for (const n of nodes)
    for (const c of n.conditions) {
      const have = String(c.status).toLowerCase();
      for (const status of CONDITION_STATUSES)
        out.push({ labels: { node: n.name, condition: c.type, status }, value: have === status ? 1 : 0 });
    }
  return out;
}

export interface VirtualKubeletMetricsSource {
  /** The virtual nodes this kubelet runs now (none once it is stopped). */
  nodes(): readonly NodeView[];
  /** The local pods bound to those nodes. */
  pods(): readonly { status?: PodStatus }[];
}

export function registerVirtualKubeletMetrics(registry: Registry, src: VirtualKubeletMetricsSource): void {
  registry.callbackGauge({
    name: "liqo_virtual_node_info",
    help: "1 for each virtual node a virtual kubelet runs.",
    labelNames: ["node"] as const,
    collect: () => src.nodes().map((n) => ({ labels: { node: n.name }, value: 1 })),
  });
  registry.callbackGauge({
    name: "liqo_virtual_node_condition",
    help: "A virtual node's condition as its Node has it: 1 for the status it has (true, false, unknown), 0 for the others.",
    labelNames: ["node", "condition", "status"] as const,
    collect: () => conditionSeries(src.nodes()),
  });
  registry.callbackGauge({
    name: "liqo_offloaded_pods",
    help: "Pods bound to the virtual kubelet's virtual nodes (offloaded to the peer), by phase.",
    labelNames: ["phase"] as const,
    collect: () => [...podsByPhase(src.pods())].map(([phase, value]) => ({ labels: { phase }, value })),
  });
  registry.callbackGauge({
    name: "liqo_offloaded_pods_unreachable",
    help: "Offloaded pods held not Ready because the peer has been unreachable past the service continuity threshold.",
    collect: () => unreachablePods(src.pods()),
  });
}

/** How many pods service continuity holds not Ready (RemoteClusterUnreachable). */
export function unreachablePods(pods: readonly { status?: PodStatus }[]): number {
  return pods.filter((p) => markedUnreachable(p.status)).length;
}
