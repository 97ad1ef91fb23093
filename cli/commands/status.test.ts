import { describe, expect, test } from "bun:test";
import { discoveryReport, policyReport } from "./status.ts";

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

describe("discoveryReport", () => {
  const deployment = (args: string[], replicas = 1) => ({
    metadata: { name: "liqo-discovery" },
    spec: { replicas, template: { spec: { containers: [{ args }] } } },
    status: { readyReplicas: replicas },
  });
  test("LAN discovery as the Deployment runs it", () => {
    const r = discoveryReport(
      deployment([
        "controller-manager",
        "--controllers",
        "discovery",
        "--discovery-advertise=true",
        "--discovery-discover=false",
        "--discovery-autojoin=true",
        "--discovery-ttl",
        "30",
      ]),
      [],
    );
    expect(r).toContain(
      "LAN (mDNS): advertisement on, discovery off, autojoin on, ttl 30s (deployment liqo-discovery: 1/1 ready)",
    );
    expect(r).toContain("WAN (SearchDomains): off");
  });
  test("no Deployment: off, and how to switch it on", () =>
    expect(discoveryReport(undefined, [])).toContain(
      "LAN (mDNS): off (liqoctl install --set discovery.config.enableDiscovery=true",
    ));
  test("each SearchDomain with what it found and its problem", () => {
    const r = discoveryReport(deployment(["controller-manager", "--controllers", "searchdomain"]), [
      {
        apiVersion: "discovery.liqo.io/v1alpha1",
        kind: "SearchDomain",
        metadata: { name: "example" },
        spec: { domain: "example.com", autojoin: true },
        status: { foreignClusters: [{ name: "milan", clusterID: "x" }], problem: "bad TXT" },
      },
    ] as never);
    expect(r).toContain("LAN (mDNS): off");
    expect(r).toContain("WAN example: example.com, autojoin on: milan (problem: bad TXT)");
  });
});
