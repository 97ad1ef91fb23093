// /stats/summary and /metrics/resource. The remote cluster's per-pod usage would need its
// metrics API (metrics-server), which a provider need not run and the rig does not have; until the
// offloading side reports it, the virtual kubelet answers with well-formed, empty data rather than
// 404, so metrics-server and `kubectl top node` see a node with no usage instead of an error.

export function statsSummary(nodeName: string, now = new Date()) {
  const time = now.toISOString();
  return {
    node: {
      nodeName,
      startTime: time,
      cpu: { time, usageNanoCores: 0, usageCoreNanoSeconds: 0 },
      memory: { time, workingSetBytes: 0, usageBytes: 0, rssBytes: 0 },
      systemContainers: [],
    },
    pods: [],
  };
}

export function resourceMetrics(nowMs = Date.now()): string {
  return [
    "# HELP node_cpu_usage_seconds_total [ALPHA] Cumulative cpu time consumed by the node in core-seconds",
    "# TYPE node_cpu_usage_seconds_total counter",
    `node_cpu_usage_seconds_total 0 ${nowMs}`,
    "# HELP node_memory_working_set_bytes [ALPHA] Current working set of the node in bytes",
    "# TYPE node_memory_working_set_bytes gauge",
    `node_memory_working_set_bytes 0 ${nowMs}`,
    "# HELP scrape_error [ALPHA] 1 if there was an error while getting container metrics, 0 otherwise",
    "# TYPE scrape_error gauge",
    "scrape_error 0",
    "",
  ].join("\n");
}
