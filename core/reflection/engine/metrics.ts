// The reflection engine's metrics, per reflector (plugin/kind).
import type { Registry } from "../../metrics/index.ts";
import { DEFAULT_BUCKETS } from "../../metrics/index.ts";

export type EngineMetrics = ReturnType<typeof createEngineMetrics>;

export function createEngineMetrics(registry: Registry) {
  return {
    reconciles: registry.counter({
      name: "liqo_reflection_reconciles_total",
      help: "Objects handled by a reflector, by outcome (apply, repair: other managers' extra fields removed, unchanged, delete, skip, conflict, error).",
      labelNames: ["reflector", "outcome"] as const,
    }),
    errors: registry.counter({
      name: "liqo_reflection_errors_total",
      help: "Reconcile failures of a reflector (API errors and plugin errors).",
      labelNames: ["reflector", "kind"] as const,
    }),
    latency: registry.histogram({
      name: "liqo_reflection_reconcile_seconds",
      help: "Time to handle one key: read caches, call the plugin, write.",
      labelNames: ["reflector"] as const,
      buckets: DEFAULT_BUCKETS,
    }),
    pluginCall: registry.histogram({
      name: "liqo_reflection_plugin_call_seconds",
      help: "Time spent in one plugin call.",
      labelNames: ["reflector"] as const,
      buckets: [0.00001, 0.00003, 0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1],
    }),
  };
}
