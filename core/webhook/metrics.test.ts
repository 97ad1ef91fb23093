// Admission metrics: how each answer of the pod webhook is counted, and what /metrics shows.
import { describe, expect, test } from "bun:test";
import { createRegistry, parsePrometheusText } from "../metrics/index.ts";
import { createAdmissionMetrics } from "./metrics.ts";
import { POD_WEBHOOK_NAME, reviewPodAdmission, type Offloading } from "./server.ts";

const review = (operation: string, namespace = "team") => ({
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  request: {
    uid: "u-1",
    namespace,
    operation,
    object: { metadata: { name: "p" }, spec: { containers: [{ name: "c", image: "nginx" }] } },
  },
});
const ready: Offloading = {
  metadata: { name: "offloading", namespace: "team" },
  spec: { podOffloadingStrategy: "Remote" },
  status: { offloadingPhase: "Ready" },
};
const settingUp: Offloading = { metadata: { name: "offloading", namespace: "team" } };

describe("reviewPodAdmission: the result each answer is counted as", () => {
  test("allowed (with the patch), denied (not offloaded, or being set up), error (not a review)", () => {
    const of = (nso: Offloading | undefined) => () => nso;
    const created = reviewPodAdmission(review("CREATE"), of(ready));
    expect({ status: created.status, operation: created.operation, result: created.result }).toEqual({
      status: 200,
      operation: "CREATE",
      result: "allowed",
    });
    expect((created.body as { response: { patchType?: string } }).response.patchType).toBe("JSONPatch");
    expect(reviewPodAdmission(review("CREATE"), of(undefined))).toMatchObject({ status: 200, result: "denied" });
    expect(reviewPodAdmission(review("CREATE"), of(settingUp))).toMatchObject({ status: 200, result: "denied" });
    expect(reviewPodAdmission(review("UPDATE"), of(undefined))).toMatchObject({
      operation: "UPDATE",
      result: "allowed",
    });
    expect(reviewPodAdmission({ kind: "Pod" }, of(ready))).toMatchObject({
      status: 400,
      operation: "unknown",
      result: "error",
    });
  });

  test("an operation outside admission.k8s.io's four is counted as unknown", () => {
    expect(reviewPodAdmission(review("PATCH"), () => undefined).operation).toBe("unknown");
  });
});

describe("createAdmissionMetrics", () => {
  test("the expected webhook's series start at 0; each answer adds to its result and its latency", async () => {
    const registry = createRegistry();
    const metrics = createAdmissionMetrics(registry, [{ webhook: POD_WEBHOOK_NAME, operation: "CREATE" }]);
    const counts = async () => {
      const f = parsePrometheusText(await registry.expose());
      const requests = f.find((x) => x.name === "liqo_webhook_admission_requests_total")!;
      const duration = f.find((x) => x.name === "liqo_webhook_admission_duration_seconds")!;
      return {
        requests: Object.fromEntries(
          requests.samples.map((s) => [`${s.labels.operation}/${s.labels.result}`, s.value]),
        ),
        observed: Object.fromEntries(
          duration.samples
            .filter((s) => s.name.endsWith("_count"))
            .map((s) => [`${s.labels.webhook}/${s.labels.operation}`, s.value]),
        ),
        under10ms: duration.samples.find((s) => s.name.endsWith("_bucket") && s.labels.le === "0.01")?.value,
      };
    };
    expect(await counts()).toEqual({
      requests: { "CREATE/allowed": 0, "CREATE/denied": 0, "CREATE/error": 0 },
      observed: { "pod.mutate.liqo.io/CREATE": 0 },
      under10ms: 0,
    });
    metrics.observe(POD_WEBHOOK_NAME, "CREATE", "denied", 0.002);
    metrics.observe(POD_WEBHOOK_NAME, "CREATE", "denied", 0.3);
    metrics.observe(POD_WEBHOOK_NAME, "CREATE", "allowed", 0.004);
    metrics.observe(POD_WEBHOOK_NAME, "bogus", "error", 0.001);
    expect(await counts()).toEqual({
      requests: { "CREATE/allowed": 1, "CREATE/denied": 2, "CREATE/error": 0, "unknown/error": 1 },
      observed: { "pod.mutate.liqo.io/CREATE": 3, "pod.mutate.liqo.io/unknown": 1 },
      under10ms: 2,
    });
  });

  test("without a registry it records nothing and does not throw", () => {
    expect(() => createAdmissionMetrics(undefined).observe(POD_WEBHOOK_NAME, "CREATE", "allowed", 1)).not.toThrow();
  });
});
