import { describe, expect, test } from "bun:test";
import type { KubeObject } from "../../core/kube/resources.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import type { VirtualNodeObject } from "../virtualnode.ts";
import { discoveryReport, namespacePolicyReport, networkReport, policyReport, virtualNodesReport } from "./status.ts";

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

describe("liqoctl status: namespace overrides", () => {
  const ns = (name: string, policy?: string): KubeObject => ({
    metadata: { name, annotations: policy === undefined ? {} : { "liqo.io/reflection-policy": policy } },
  });
  test("each annotated namespace with its override; others are not listed", () =>
    expect(
      namespacePolicyReport([
        ns("default"),
        ns("team-a", "secrets=none"),
        ns("team-b", "configmaps=selector(app=web)"),
      ]).split("\n"),
    ).toEqual([
      "Namespace overrides (annotation liqo.io/reflection-policy, over the policy above for the kinds named):",
      "  team-a          secrets=none",
      "  team-b          configmaps=selector(app=web)",
    ]));
  test("a refused annotation: why", () =>
    expect(namespacePolicyReport([ns("team-c", "widgets=none")])).toContain(
      'team-c          refused, the controller manager keeps its previous override or the cluster\'s policy: namespace team-c: annotation liqo.io/reflection-policy=widgets=none: unknown kind "widgets"',
    ));
  test("none: how to add one", () =>
    expect(namespacePolicyReport([ns("default")])).toBe(
      "Namespace overrides: none (annotate a namespace liqo.io/reflection-policy=kind=mode,...)",
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

describe("liqoctl status: virtual nodes", () => {
  const fcs = [
    { metadata: { name: "milan" }, spec: { clusterIdentity: { clusterID: "milan-id" } } },
  ] as ForeignClusterObject[];
  const vn = (name: string, clusterID: string, status: object, deleting = false) =>
    ({
      metadata: {
        name,
        namespace: "liqo-tenant-milan",
        ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
      },
      spec: { clusterID, resourceQuota: { hard: { cpu: "2" } } },
      status,
    }) as VirtualNodeObject;
  const ready = (status: string, reason: string, message?: string) => [{ type: "Ready", status, reason, message }];
  test("each one under its peering, with Ready, its reason and the capacity given; why any is not ready", () =>
    expect(
      virtualNodesReport(
        [
          vn("gpu", "milan-id", { conditions: ready("True", "NodeReady"), resources: { cpu: "2", memory: "4Gi" } }),
          vn("big", "milan-id", {
            conditions: ready("False", "OfferExceeded", "asks cpu=8 but cpu=2 is left of milan's offer (cpu=6)"),
          }),
          vn("old", "milan-id", { conditions: ready("False", "Draining", "1 pod left") }, true),
          vn("lost", "gone-id", {}),
        ],
        fcs,
      ).split("\n"),
    ).toEqual([
      "Virtual nodes (besides each peering's own):",
      "PEERING                NAME             READY     REASON          RESOURCES",
      "gone-id (no peering)   lost             Unknown   Pending         -",
      "milan                  big              False     OfferExceeded   -",
      "milan                  gpu              True      NodeReady       cpu=2, memory=4Gi",
      "milan                  old (deleting)   False     Draining        -",
      "",
      "Not ready:",
      "  liqo-tenant-milan/big OfferExceeded: asks cpu=8 but cpu=2 is left of milan's offer (cpu=6)",
      "  liqo-tenant-milan/old Draining: 1 pod left",
    ]));
  test("none: how to add one", () =>
    expect(virtualNodesReport([], fcs)).toBe(
      "Virtual nodes: each peering's own only (liqoctl create virtualnode adds more to an outgoing peering)",
    ));
});

describe("liqoctl status: the network security mode", () => {
  const gateway = (args: string[], extra: { generation?: number; observed?: number; updated?: number } = {}) => ({
    metadata: { name: "liqo-gateway", generation: extra.generation ?? 1 },
    spec: { replicas: 1, template: { spec: { containers: [{ args: ["gateway", ...args] }] } } },
    status: { observedGeneration: extra.observed ?? 1, updatedReplicas: extra.updated ?? 1 },
  });
  test("segregation, as the gateway's flag says, in both spellings", () => {
    for (const args of [
      ["--security-mode", "IntraClusterTrafficSegregation"],
      ["--security-mode=IntraClusterTrafficSegregation"],
    ])
      expect(networkReport(gateway(args))).toStartWith(
        "Network security mode: IntraClusterTrafficSegregation (peers reach only the pods offloaded to them",
      );
  });
  test("no flag: the default, full pod-to-pod", () =>
    expect(networkReport(gateway([]))).toStartWith(
      "Network security mode: FullPodToPod (every pod reaches every pod across peerings;",
    ));
  test("a changed mode the pods have not rolled to yet is said", () => {
    expect(networkReport(gateway(["--security-mode", "FullPodToPod"], { generation: 2, observed: 1 }))).toContain(
      "changes it)\n  the gateway pods are rolling to it\n",
    );
    expect(networkReport(gateway(["--security-mode", "FullPodToPod"], { updated: 0 }))).toContain("rolling");
    expect(networkReport(gateway(["--security-mode", "FullPodToPod"]))).not.toContain("rolling");
  });
  test("the active gateway's WireGuard implementation, from the gateway Service's annotation", () => {
    const service = (implementation?: string) => ({
      metadata: {
        name: "liqo-gateway",
        annotations: implementation ? { "net.liqo.io/wireguard-implementation": implementation } : undefined,
      },
    });
    expect(networkReport(gateway([]), service("kernel"))).toEndWith(
      "\nWireGuard: kernel (the active gateway's device is the kernel module's)",
    );
    expect(networkReport(gateway([]), service("userspace"))).toEndWith(
      "\nWireGuard: userspace (wireguard-go: the nodes have no wireguard kernel module, or the gateway runs with --wireguard userspace)",
    );
    expect(networkReport(gateway([]), service())).toEndWith(
      "\nWireGuard: not reported yet (no active gateway has opened its device)",
    );
    expect(networkReport(gateway([]))).toContain("WireGuard: not reported yet");
  });
  test("no gateway: unknown, and why", () =>
    expect(networkReport(undefined)).toBe(
      "Network security mode: unknown (no liqo-gateway Deployment: liqo installed without networking)",
    ));
});
