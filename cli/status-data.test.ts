import { describe, expect, test } from "bun:test";
import type { ResourceRequest, SearchDomain } from "../core/apis/index.ts";
import type { KubeObject } from "../core/kube/resources.ts";
import type { Pod } from "../core/kube/types.ts";
import type { ForeignClusterObject } from "../core/peering/foreigncluster/index.ts";
import { statusOutput } from "./commands/status.ts";
import type { Deployment } from "./deployment-args.ts";
import { quotaStatus, type Offer } from "./quota-report.ts";
import {
  discoveryStatus,
  identityStatus,
  installationStatus,
  namespaceOverridesStatus,
  networkStatus,
  peeringsStatus,
  pluginsStatus,
  policyStatus,
  statusDocument,
  virtualNodesStatus,
  type StatusInputs,
} from "./status-data.ts";
import { installationText, statusText } from "./status-text.ts";
import type { VirtualNodeObject } from "./virtualnode.ts";

const MILAN = "milan-id";
const ROME = "rome-id";
const fc = (name: string, id: string, extra: Partial<ForeignClusterObject> = {}) =>
  ({
    metadata: { name },
    spec: { clusterIdentity: { clusterID: id, clusterName: name } },
    ...extra,
  }) as ForeignClusterObject;
const milan = fc("milan", MILAN, {
  metadata: { name: "milan", labels: { "discovery.liqo.io/discovery-type": "LAN" } },
  status: {
    peeringConditions: [
      { type: "OutgoingPeering", status: "Pending", reason: "Waiting", message: "no offer yet" },
      { type: "AuthenticationStatus", status: "Established" },
    ],
  },
} as Partial<ForeignClusterObject>);
const deployment = (
  args: string[],
  o: { replicas?: number; ready?: number; generation?: number } = {},
): Deployment => ({
  metadata: { name: "d", generation: o.generation ?? 1 },
  spec: { replicas: o.replicas, template: { spec: { containers: [{ args }] } } },
  status: { readyReplicas: o.ready, observedGeneration: 1 },
});

describe("status data: identity and peerings", () => {
  test("the identity; no auth URL is null", () =>
    expect(
      identityStatus({ clusterName: "rome", clusterId: ROME, clusterLabels: { region: "eu" } }, undefined),
    ).toEqual({ name: "rome", id: ROME, labels: { region: "eu" }, authUrl: null }));

  test("a peering: each condition's phase, its virtual node and what is not settled", () => {
    const [p] = peeringsStatus([milan], new Map([["liqo-milan", false]]));
    expect(p!.name).toBe("milan");
    expect(p!.clusterID).toBe(MILAN);
    expect(p!.outgoing).toBe("Pending");
    expect(p!.incoming).toBe("None");
    expect(p!.networking).toBe("None");
    expect(p!.authentication).toBe("Established");
    expect(p!.discovery).toBe("LAN");
    expect(p!.virtualNode).toEqual({ name: "liqo-milan", ready: false });
    expect(p!.unsettled).toEqual([
      { type: "OutgoingPeering", status: "Pending", reason: "Waiting", message: "no offer yet" },
    ]);
  });

  test("no virtual node, no cluster ID, discovered by hand: null, null, Manual", () => {
    const [p] = peeringsStatus([{ metadata: { name: "x" }, spec: {} } as ForeignClusterObject], new Map());
    expect(p!.virtualNode).toBeNull();
    expect(p!.clusterID).toBeNull();
    expect(p!.discovery).toBe("Manual");
    expect(p!.unsettled).toEqual([]);
  });

  test("none", () => expect(peeringsStatus([], new Map())).toEqual([]));
});

describe("status data: virtual nodes", () => {
  const vn = (name: string, clusterID: string, status?: VirtualNodeObject["status"], deleting = false) =>
    ({
      metadata: { name, namespace: "tenant", ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}) },
      spec: { clusterID },
      status,
    }) as VirtualNodeObject;

  test("a not-ready one keeps its reason and message; sorted by peering, then name", () => {
    const out = virtualNodesStatus(
      [
        vn("milan-gpu", MILAN, {
          conditions: [{ type: "Ready", status: "False", reason: "OfferExceeded", message: "asks 8 cpu of 4" }],
          resources: { cpu: "8" },
        }),
        vn("gone", "zz-id", undefined, true),
        vn("milan-big", MILAN, { conditions: [{ type: "Ready", status: "True", reason: "Ready" }] }),
      ],
      [milan],
    );
    expect(out.map((v) => v.name)).toEqual(["milan-big", "milan-gpu", "gone"]);
    expect(out[1]).toEqual({
      peering: "milan",
      clusterID: MILAN,
      namespace: "tenant",
      name: "milan-gpu",
      deleting: false,
      ready: "False",
      reason: "OfferExceeded",
      message: "asks 8 cpu of 4",
      resources: { cpu: "8" },
    });
    // No peering with its cluster ID, no condition yet, being deleted.
    expect(out[2]).toEqual({
      peering: null,
      clusterID: "zz-id",
      namespace: "tenant",
      name: "gone",
      deleting: true,
      ready: "Unknown",
      resources: {},
    });
  });

  test("none", () => expect(virtualNodesStatus([], [milan])).toEqual([]));
});

describe("status data: discovery and network", () => {
  test("LAN as the Deployment's flags run it; WAN domains with what they found", () => {
    const d = discoveryStatus(
      deployment(["--controllers=discovery,searchdomain", "--discovery-advertise=false", "--discovery-ttl=30"], {
        replicas: 2,
        ready: 1,
      }),
      [
        {
          metadata: { name: "partners" },
          spec: { domain: "liqo.example.org", autojoin: true },
          status: { foreignClusters: [{ name: "turin" }], problem: "NXDOMAIN" },
        } as SearchDomain & KubeObject,
      ],
    );
    expect(d.lan).toEqual({
      enabled: true,
      advertisement: false,
      discovery: true,
      autojoin: false,
      ttlSeconds: 30,
      ready: 1,
      replicas: 2,
    });
    expect(d.wanEnabled).toBe(true);
    expect(d.wan).toEqual([
      { name: "partners", domain: "liqo.example.org", autojoin: true, foreignClusters: ["turin"], problem: "NXDOMAIN" },
    ]);
  });

  test("no Deployment: LAN off (its fields null), WAN off and no domains", () =>
    expect(discoveryStatus(undefined, [])).toEqual({
      lan: {
        enabled: false,
        advertisement: null,
        discovery: null,
        autojoin: null,
        ttlSeconds: null,
        ready: null,
        replicas: null,
      },
      wanEnabled: false,
      wan: [],
    }));

  test("the gateway's security mode, rolling while its pods have not caught up; no gateway: null", () => {
    expect(networkStatus(deployment(["--security-mode=IntraClusterTrafficSegregation"], { generation: 2 }))).toEqual({
      securityMode: "IntraClusterTrafficSegregation",
      rolling: true,
      wireguardImplementation: null,
    });
    expect(networkStatus(deployment([]))).toEqual({
      securityMode: "FullPodToPod",
      rolling: false,
      wireguardImplementation: null,
    });
    expect(networkStatus(undefined)).toBeNull();
  });

  test("the WireGuard implementation the active gateway wrote on its Service", () => {
    const service = (implementation?: string): KubeObject => ({
      metadata: {
        name: "liqo-gateway",
        annotations: implementation ? { "net.liqo.io/wireguard-implementation": implementation } : {},
      },
    });
    expect(networkStatus(deployment([]), service("kernel"))?.wireguardImplementation).toBe("kernel");
    expect(networkStatus(deployment([]), service("userspace"))?.wireguardImplementation).toBe("userspace");
    expect(networkStatus(deployment([]), service())?.wireguardImplementation).toBeNull();
    expect(networkStatus(undefined, service("kernel"))).toBeNull();
  });
});

describe("status data: reflector plugins, policy, namespace overrides", () => {
  const rr = (labels: Record<string, string>, spec: object, status?: object) =>
    ({ metadata: { name: "rr", labels }, spec, status }) as ResourceRequest & KubeObject;

  test("each plugin per peering and direction; Waiting while the provider has not answered", () =>
    expect(
      pluginsStatus(
        [
          rr(
            { "liqo.io/replication": "true", "liqo.io/remote-cluster-id": MILAN },
            { reflectorPlugins: [{ name: "pdbs" }, { name: "crons" }] },
            { reflectorPlugins: [{ name: "pdbs", state: "Refused", message: "not offered" }] },
          ),
          rr(
            { "liqo.io/replicated": "true" },
            { clusterIdentity: { clusterID: "t-id", clusterName: "turin" }, reflectorPlugins: [{ name: "pdbs" }] },
            {
              reflectorPlugins: [{ name: "pdbs", state: "Granted" }],
            },
          ),
          rr({}, { reflectorPlugins: [{ name: "ignored" }] }),
        ],
        [milan],
      ),
    ).toEqual([
      { peer: "milan", direction: "outgoing", name: "pdbs", state: "Refused", message: "not offered" },
      { peer: "milan", direction: "outgoing", name: "crons", state: "Waiting" },
      { peer: "turin", direction: "incoming", name: "pdbs", state: "Granted" },
    ]));

  test("no plugins", () => expect(pluginsStatus([], [milan])).toEqual([]));

  test("the ConfigMap's policy, every kind", () =>
    expect(policyStatus({ metadata: { name: "liqo-reflection-policy" }, data: { secrets: "opt-in" } }, "liqo")).toEqual(
      {
        kinds: {
          configmaps: "all",
          secrets: "opt-in",
          services: "all",
          endpointslices: "all",
          ingresses: "all",
          events: "all",
        },
        source: "configmap",
        configMap: "liqo/liqo-reflection-policy",
      },
    ));

  test("no ConfigMap: the defaults", () => {
    const p = policyStatus(undefined, "liqo");
    expect(p.source).toBe("defaults");
    expect(p.kinds?.secrets).toBe("all");
    expect(p.error).toBeUndefined();
  });

  test("a refused ConfigMap: no kinds, and why", () =>
    expect(
      policyStatus({ metadata: { name: "liqo-reflection-policy" }, data: { deployments: "none" } }, "liqo"),
    ).toEqual({
      kinds: null,
      error:
        'ConfigMap liqo/liqo-reflection-policy: unknown kind "deployments"; reflection policies exist for configmaps, secrets, services, endpointslices, ingresses, events',
      source: "configmap",
      configMap: "liqo/liqo-reflection-policy",
    }));

  test("namespace overrides: each annotated one, a refused one with why; unannotated ones left out", () => {
    const ns = (name: string, policy?: string): KubeObject => ({
      metadata: { name, annotations: policy === undefined ? {} : { "liqo.io/reflection-policy": policy } },
    });
    expect(
      namespaceOverridesStatus([
        ns("default"),
        ns("blank", " "),
        ns("team-a", "secrets=none"),
        ns("team-c", "widgets=none"),
      ]),
    ).toEqual([
      { namespace: "team-a", policy: { secrets: "none" } },
      {
        namespace: "team-c",
        error:
          'namespace team-c: annotation liqo.io/reflection-policy=widgets=none: unknown kind "widgets"; reflection policies exist for configmaps, secrets, services, endpointslices, ingresses, events',
      },
    ]);
    expect(namespaceOverridesStatus([ns("default")])).toEqual([]);
  });
});

describe("status data: quotas", () => {
  const offer = (labels: Record<string, string>, hard: Record<string, string>, annotations = {}): Offer => ({
    metadata: { name: "o", labels, annotations },
    spec: { resourceQuota: { hard } },
  });
  const pod = (
    name: string,
    ns: string,
    requests: Record<string, string>,
    o: { node?: string; shadow?: boolean } = {},
  ): Pod => ({
    metadata: { name, namespace: ns, labels: o.shadow ? { "liqo.io/managed-by": "shadowpod" } : {} },
    spec: { nodeName: o.node, containers: [{ name: "c", resources: { requests } }] },
    status: { phase: "Running" },
  });

  test("per peering: the offer, what is used of it, named resources, cordoned, waiting; and what was asked", () => {
    const q = quotaStatus({
      fcs: [milan],
      offers: [
        offer({ "liqo.io/remoteID": ROME }, { cpu: "2000m", memory: "4Gi", "nvidia.com/gpu": "2" }),
        offer({ "liqo.io/originID": MILAN }, { cpu: "4", pods: "oops" }, { "liqo.io/tenant-cordoned": "true" }),
      ],
      pods: [
        pod("shadow", "rome-twin", { cpu: "500m", "nvidia.com/gpu": "1" }, { shadow: true }),
        pod("ours", "default", { cpu: "1" }, { node: "liqo-milan" }),
      ],
      namespaces: [{ metadata: { name: "rome-twin", labels: { "liqo.io/remote-cluster-id": ROME } } }],
      nodes: [{ metadata: { name: "liqo-milan", labels: { "liqo.io/remote-cluster-id": MILAN } } }],
      shadowPods: [{ metadata: { name: "s", namespace: "rome-twin" }, status: { quota: { phase: "Refused" } } }],
      mode: "soft",
      cordoned: new Set([ROME]),
      requests: [
        {
          metadata: { name: "r", labels: { "liqo.io/remoteID": MILAN } },
          status: { resourceGrants: [{ name: "cpu", asked: "8", granted: "4", capped: true }] },
        },
        { metadata: { name: "r2", labels: { "liqo.io/originID": ROME } }, status: { resourceRefusal: "bad amount" } },
      ],
    });
    expect(q.enforcement).toBe("soft");
    expect(q.peerings).toEqual([
      {
        peering: ROME,
        clusterID: ROME,
        direction: "incoming",
        cordoned: true,
        offered: { cpu: "2", memory: "4Gi", "nvidia.com/gpu": "2" },
        used: { cpu: "500m", memory: "0", pods: "1", "ephemeral-storage": "0", "nvidia.com/gpu": "1" },
        waiting: 1,
      },
      {
        peering: "milan",
        clusterID: MILAN,
        direction: "outgoing",
        cordoned: true,
        offered: { cpu: "4", pods: "oops" },
        used: { cpu: "1", memory: "0", pods: "1", "ephemeral-storage": "0" },
        waiting: 0,
      },
    ]);
    expect(q.asked).toEqual([
      {
        peering: "milan",
        direction: "outgoing",
        resources: [{ name: "cpu", asked: "8", granted: "4", capped: true }],
      },
      { peering: ROME, direction: "incoming", resources: [], refusal: "bad amount" },
    ]);
  });

  test("nothing offered: no peerings; the mode defaults to hard", () =>
    expect(quotaStatus({ fcs: [], offers: [], pods: [], namespaces: [], nodes: [], shadowPods: [] })).toEqual({
      enforcement: "hard",
      peerings: [],
      asked: [],
    }));
});

describe("status document", () => {
  const inputs = (over: Partial<StatusInputs> = {}): StatusInputs => ({
    identity: { clusterName: "rome", clusterId: ROME, clusterLabels: {} },
    authUrl: "https://rome.example.org:6443",
    namespace: "liqo",
    fcs: [],
    nodes: new Map(),
    virtualNodes: [],
    discovery: undefined,
    searchDomains: [],
    gateway: undefined,
    quota: { offers: [], pods: [], namespaces: [], nodes: [], shadowPods: [] },
    requests: [],
    policy: undefined,
    namespaces: [],
    workloads: { deployments: [], daemonSets: [] },
    ...over,
  });

  test("an empty cluster: every section present and empty", () =>
    expect(statusDocument(inputs())).toEqual({
      apiVersion: "liqoctl.liqo.io/v1alpha1",
      kind: "Status",
      clusterIdentity: { name: "rome", id: ROME, labels: {}, authUrl: "https://rome.example.org:6443" },
      installation: { namespace: "liqo", version: null, healthy: true, components: [] },
      peerings: [],
      virtualNodes: [],
      discovery: {
        lan: {
          enabled: false,
          advertisement: null,
          discovery: null,
          autojoin: null,
          ttlSeconds: null,
          ready: null,
          replicas: null,
        },
        wanEnabled: false,
        wan: [],
      },
      network: null,
      quotas: { enforcement: "hard", peerings: [], asked: [] },
      reflectorPlugins: [],
      reflectionPolicy: {
        kinds: {
          configmaps: "all",
          secrets: "all",
          services: "all",
          endpointslices: "all",
          ingresses: "all",
          events: "all",
        },
        source: "defaults",
        configMap: "liqo/liqo-reflection-policy",
      },
      namespaceOverrides: [],
    }));

  test("json and yaml carry the same document, and the text is made of it", () => {
    const doc = statusDocument(
      inputs({
        fcs: [milan],
        nodes: new Map([["liqo-milan", true]]),
        gateway: deployment([]),
        policy: { metadata: { name: "liqo-reflection-policy" }, data: { deployments: "none" } },
        namespaces: [{ metadata: { name: "team-a", annotations: { "liqo.io/reflection-policy": "secrets=none" } } }],
      }),
    );
    const json = JSON.parse(JSON.stringify(doc, null, 2));
    expect(json).toEqual(doc);
    expect(Bun.YAML.parse(Bun.YAML.stringify(doc, null, 2))).toEqual(json);
    const text = statusText(doc);
    expect(text).toStartWith("Cluster identity:\n  name:      rome\n");
    expect(text).toContain("\nmilan   milan-id     Pending    None");
    expect(text).toContain("Reflection policy: refused");
  });
});

describe("the installation's health", () => {
  const workload = (name: string, version: string, ready: number, desired: number, kind: "d" | "ds" = "d") => ({
    metadata: { name, labels: { "app.kubernetes.io/version": version } },
    ...(kind === "d"
      ? { spec: { replicas: desired }, status: { readyReplicas: ready || undefined } }
      : { status: { numberReady: ready, desiredNumberScheduled: desired } }),
  });

  test("every workload ready: healthy, one version", () => {
    const i = installationStatus(
      "liqo",
      [workload("liqo-gateway", "0.2.0", 1, 1), workload("liqo-auth", "0.2.0", 2, 2)],
      [workload("liqo-route", "0.2.0", 3, 3, "ds")],
    );
    expect(i).toEqual({
      namespace: "liqo",
      version: "0.2.0",
      healthy: true,
      components: [
        { name: "liqo-auth", kind: "Deployment", ready: 2, desired: 2, version: "0.2.0" },
        { name: "liqo-gateway", kind: "Deployment", ready: 1, desired: 1, version: "0.2.0" },
        { name: "liqo-route", kind: "DaemonSet", ready: 3, desired: 3, version: "0.2.0" },
      ],
    });
    expect(installationText(i)).toBe("Installation: liqo 0.2.0 in namespace liqo: healthy (3 workloads ready)");
  });

  test("a workload short of ready pods (none ready: no readyReplicas at all) is named with the command to look at it; mixed versions say an upgrade rolls out", () => {
    const i = installationStatus(
      "liqo",
      [workload("liqo-gateway", "0.1.0", 0, 1), workload("liqo-auth", "0.2.0", 1, 1)],
      [workload("liqo-route", "0.2.0", 1, 2, "ds")],
    );
    expect(i.healthy).toBe(false);
    expect(i.version).toBe("0.1.0, 0.2.0");
    expect(installationText(i)).toBe(
      [
        "Installation: liqo 0.1.0, 0.2.0 in namespace liqo (an upgrade is rolling out): NOT healthy",
        "  liqo-gateway (Deployment): 0 of 1 ready: kubectl -n liqo describe deployment liqo-gateway",
        "  liqo-route (DaemonSet): 1 of 2 ready: kubectl -n liqo describe daemonset liqo-route",
      ].join("\n"),
    );
  });

  test("nothing installed says so", () =>
    expect(installationText(installationStatus("liqo", [], []))).toBe(
      "Installation: no liqo Deployment in namespace liqo (liqoctl install --help)",
    ));
});

describe("status --output", () => {
  test("text by default; json and yaml", () => {
    expect(statusOutput(undefined)).toBe("text");
    expect(statusOutput("json")).toBe("json");
    expect(statusOutput("yaml")).toBe("yaml");
  });
  test("anything else refused, naming the allowed values", () =>
    expect(() => statusOutput("xml")).toThrow("--output xml: use json or yaml (or text, the default)"));
});
