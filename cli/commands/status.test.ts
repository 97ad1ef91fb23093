import { describe, expect, test } from "bun:test";
import { policyReport } from "./status.ts";

describe("liqoctl status: the reflection policy", () => {
  test("the ConfigMap's policy, every kind on its own line", () => {
    const out = policyReport(
      { metadata: { name: "liqo-reflection-policy" }, data: { secrets: "opt-in", ingresses: "none" } },
      "liqo",
    );
    expect(out.split("\n")).toEqual([
      "Reflection policy:",
      "  configmaps      all",
      "  secrets         opt-in",
      "  services        all",
      "  endpointslices  all",
      "  ingresses       none",
      "  events          all",
    ]);
  });
  test("no ConfigMap: the defaults, and it says so", () =>
    expect(policyReport(undefined, "liqo")).toStartWith(
      "Reflection policy (no ConfigMap liqo/liqo-reflection-policy: the defaults):",
    ));
  test("a ConfigMap the controller manager refuses: why", () =>
    expect(policyReport({ metadata: { name: "liqo-reflection-policy" }, data: { deployments: "none" } }, "liqo")).toBe(
      'Reflection policy: refused, the controller manager keeps the previous one: ConfigMap liqo/liqo-reflection-policy: unknown kind "deployments"; reflection policies exist for configmaps, secrets, services, endpointslices, ingresses, events',
    ));
});
