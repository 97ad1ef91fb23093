// /stats/summary and /metrics/resource. Real per-pod usage would have to come from the provider:
// its metrics API (metrics.k8s.io, served by metrics-server) or its nodes' own /metrics/resource
// through nodes/<n>/proxy. A provider need not run metrics-server, and the rig's kwok nodes do not
// serve /metrics/resource unless kwok is given a Metric resource and ClusterResourceUsage, which
// the rig does not configure. Rather than invent zeros (which metrics-server and `kubectl top`
// would show as an idle pod), the endpoints answer 503 with a message saying what is missing, so
// a scraper records an error and a user sees why.

export const METRICS_UNAVAILABLE_STATUS = 503;

export function metricsUnavailable(nodeName: string, endpoint: "/stats/summary" | "/metrics/resource"): string {
  return (
    `${endpoint} is not available on virtual node ${nodeName}: pod usage of offloaded pods lives in the remote cluster, ` +
    `and this virtual kubelet does not read it yet (it would need the remote metrics.k8s.io API or the remote nodes' /metrics/resource); ` +
    `query the remote cluster's metrics directly (kubectl top pod in the twin namespace)`
  );
}
