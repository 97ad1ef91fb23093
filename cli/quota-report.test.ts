import { describe, expect, test } from "bun:test";
import type { KubeObject } from "../core/kube/resources.ts";
import type { Pod } from "../core/kube/types.ts";
import type { ForeignClusterObject } from "../core/peering/foreigncluster/index.ts";
import { quotaReport, type Offer } from "./quota-report.ts";

const ROME = "rome-id";
const TURIN = "turin-id";
const fc = (name: string, id: string) =>
  ({ metadata: { name }, spec: { clusterIdentity: { clusterID: id, clusterName: name } } }) as ForeignClusterObject;
const offer = (labels: Record<string, string>, hard: Record<string, string>): Offer => ({
  metadata: { name: "o", labels },
  spec: { resourceQuota: { hard } },
});
const pod = (
  name: string,
  o: { ns?: string; node?: string; cpu?: string; labels?: Record<string, string>; phase?: string; reason?: string },
): Pod => ({
  metadata: { name, namespace: o.ns ?? "default", labels: o.labels },
  spec: { nodeName: o.node, containers: [{ name: "c", resources: o.cpu ? { requests: { cpu: o.cpu } } : {} }] },
  status: { phase: o.phase ?? "Running", ...(o.reason ? { reason: o.reason } : {}) },
});
const ns = (name: string, consumer?: string): KubeObject => ({
  metadata: { name, labels: consumer ? { "liqo.io/remote-cluster-id": consumer } : {} },
});

describe("liqoctl status: quotas", () => {
  test('outgoing: a provider that cordoned us says so in the mode column (its offer\'s annotation, replicated); uncordoned ("false"), it does not', () => {
    const report = (value?: string) =>
      quotaReport({
        fcs: [fc("turin", TURIN)],
        offers: [
          {
            ...offer({ "liqo.io/originID": TURIN, "liqo.io/remoteID": "me" }, { cpu: "1", pods: "5" }),
            metadata: {
              name: "o",
              labels: { "liqo.io/originID": TURIN, "liqo.io/remoteID": "me" },
              annotations: value === undefined ? {} : { "liqo.io/tenant-cordoned": value },
            },
          },
        ],
        pods: [],
        namespaces: [],
        nodes: [],
        shadowPods: [],
      });
    expect(report("true")).toMatch(/^turin\s+outgoing\s+cordoned by the provider\s/m);
    expect(report()).toMatch(/^turin\s+outgoing\s+-\s/m);
  });

  test("incoming: a consumer's pods over all its twin namespaces against our offer, and its ShadowPods waiting; outgoing: ours on a provider's virtual node", () => {
    const out = quotaReport({
      fcs: [fc("rome", ROME), fc("turin", TURIN)],
      offers: [
        offer({ "liqo.io/remoteID": ROME }, { cpu: "2", memory: "4Gi", pods: "10" }),
        offer({ "liqo.io/originID": TURIN, "liqo.io/remoteID": "me" }, { cpu: "1", pods: "5" }),
      ],
      pods: [
        pod("a", { ns: "app-rome", cpu: "500m", labels: { "liqo.io/managed-by": "shadowpod" } }),
        pod("b", { ns: "db-rome", cpu: "1", labels: { "liqo.io/managed-by": "shadowpod" } }),
        pod("done", { ns: "db-rome", cpu: "1", labels: { "liqo.io/managed-by": "shadowpod" }, phase: "Succeeded" }),
        pod("own", { ns: "app-rome", cpu: "3" }), // not a ShadowPod's: not rome's
        pod("mine", { node: "liqo-turin", cpu: "250m" }),
        pod("held", { node: "liqo-turin", cpu: "250m", phase: "Pending", reason: "OffloadingBackOff" }),
        pod("local", { node: "node-1", cpu: "4" }),
      ],
      namespaces: [ns("app-rome", ROME), ns("db-rome", ROME), ns("default")],
      nodes: [{ metadata: { name: "liqo-turin", labels: { "liqo.io/remote-cluster-id": TURIN } } }],
      shadowPods: [
        { metadata: { name: "w", namespace: "db-rome" }, status: { quota: { phase: "Refused" } } },
        { metadata: { name: "a", namespace: "app-rome" }, status: { quota: { phase: "Admitted" } } },
      ],
      mode: "soft",
      cordoned: new Set([ROME]),
    });
    expect(out.split("\n")).toEqual([
      "Quotas (used/offered; incoming: what each consumer's pods take here, enforced soft; outgoing: what ours take at each provider):",
      "PEERING   DIRECTION   MODE             CPU       MEMORY   PODS   WAITING (REFUSED)",
      "rome      incoming    soft, cordoned   1500m/2   0/4Gi    2/10   1",
      "turin     outgoing    -                500m/1    0        2/5    1",
    ]);
  });

  test("nothing offered either way: said so", () => {
    expect(quotaReport({ fcs: [], offers: [], pods: [], namespaces: [], nodes: [], shadowPods: [] })).toBe(
      "Quotas: no offer made or received",
    );
  });

  test("the mode defaults to hard (the controller manager's default); a malformed offer amount is shown as it is", () => {
    const out = quotaReport({
      fcs: [],
      offers: [offer({ "liqo.io/remoteID": ROME }, { cpu: "lots" })],
      pods: [],
      namespaces: [],
      nodes: [],
      shadowPods: [],
    });
    expect(out).toContain("enforced hard");
    expect(out).toContain("rome-id   incoming    hard   0/lots");
  });

  test("asked amounts: what we asked each provider for and what our consumers asked us for, asked → granted, capped where cut", () => {
    const out = quotaReport({
      fcs: [fc("rome", ROME), fc("turin", TURIN)],
      offers: [offer({ "liqo.io/originID": TURIN, "liqo.io/remoteID": "me" }, { cpu: "1", pods: "5" })],
      pods: [],
      namespaces: [],
      nodes: [],
      shadowPods: [],
      requests: [
        {
          metadata: { name: "me", labels: { "liqo.io/remoteID": TURIN } },
          status: {
            resourceGrants: [
              { name: "cpu", asked: "4", granted: "1", capped: true },
              { name: "pods", asked: "5", granted: "5", capped: false },
            ],
          },
        },
        {
          metadata: { name: ROME, labels: { "liqo.io/originID": ROME } },
          status: { resourceRefusal: 'spec.requestedResources: unknown resource "cpus": did you mean "cpu"?' },
        },
        { metadata: { name: "asked-nothing", labels: { "liqo.io/originID": TURIN } }, status: {} },
      ],
    });
    expect(out).toContain(
      "Asked amounts (asked → granted):\n  asked of turin: cpu 4 → 1 (capped), pods 5 → 5\n" +
        '  rome asked here: -; refused: spec.requestedResources: unknown resource "cpus": did you mean "cpu"?',
    );
    expect(out).not.toContain("asked-nothing");
    expect(out.trimEnd().split("\n").length).toBe(6);
  });

  test("named resources an offer states or pods use: used/offered per peering under the table", () => {
    const out = quotaReport({
      fcs: [fc("rome", ROME), fc("turin", TURIN)],
      offers: [
        offer({ "liqo.io/remoteID": ROME }, { cpu: "2", pods: "10", "example.com/dongle": "2" }),
        offer({ "liqo.io/originID": TURIN, "liqo.io/remoteID": "me" }, { cpu: "1", pods: "5" }),
      ],
      pods: [
        {
          metadata: { name: "d", namespace: "app-rome", labels: { "liqo.io/managed-by": "shadowpod" } },
          spec: { nodeName: "n", containers: [{ name: "c", resources: { limits: { "example.com/dongle": "1" } } }] },
          status: { phase: "Running" },
        },
      ],
      namespaces: [ns("app-rome", ROME)],
      nodes: [],
      shadowPods: [],
    });
    expect(out).toContain("\nNamed resources (used/offered):\n  rome incoming: example.com/dongle 1/2");
    expect(out).not.toContain("turin outgoing:");
  });
});
