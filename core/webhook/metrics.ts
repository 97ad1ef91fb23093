// The webhook's admission metrics: requests by webhook, operation and result, and how long each
// took to answer. The series of the pod webhook's CREATE are declared at 0 when the role starts,
// so a dashboard tells "no pod reached the webhook" (0) from "not scraped" (no series).
import type { Registry } from "../metrics/index.ts";

export type AdmissionResult = "allowed" | "denied" | "error";
export const ADMISSION_RESULTS: readonly AdmissionResult[] = ["allowed", "denied", "error"];

/** Operations of admission.k8s.io/v1; anything else is counted as "unknown" (the label stays bounded). */
const OPERATIONS = new Set(["CREATE", "UPDATE", "DELETE", "CONNECT"]);
export const admissionOperation = (op: unknown): string =>
  typeof op === "string" && OPERATIONS.has(op) ? op : "unknown";

/** An admission review answers within the API server's timeout (5 s here, 30 s at most). */
export const ADMISSION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface AdmissionMetrics {
  observe(webhook: string, operation: string, result: AdmissionResult, seconds: number): void;
}

/**
 * Declares the two families on `registry` (none: a no-op). `expected` lists the webhook and
 * operation pairs the role serves: their series start at 0.
 */
export function createAdmissionMetrics(
  registry: Registry | undefined,
  expected: readonly { webhook: string; operation: string }[] = [],
): AdmissionMetrics {
  if (!registry) return { observe() {} };
  const requests = registry.counter({
    name: "liqo_webhook_admission_requests_total",
    help: "Admission reviews answered, by webhook, operation and result (allowed, denied, error: not a valid review or a failure).",
    labelNames: ["webhook", "operation", "result"] as const,
  });
  const duration = registry.histogram({
    name: "liqo_webhook_admission_duration_seconds",
    help: "Time from an admission review's arrival to its answer, by webhook and operation.",
    labelNames: ["webhook", "operation"] as const,
    buckets: ADMISSION_BUCKETS,
  });
  for (const e of expected) {
    duration.with(e);
    for (const result of ADMISSION_RESULTS) requests.with({ ...e, result });
  }
  return {
    observe(webhook, operation, result, seconds) {
      const op = admissionOperation(operation);
      requests.inc({ webhook, operation: op, result });
      duration.observe({ webhook, operation: op }, seconds);
    },
  };
}
