// Namespace offloading policies on three clusters with liqo's roles as processes: rome (north)
// consumes, milan (center) and naples (south) provide. Cluster selectors, EnforceSameName, the Local
// strategy (services without pods), a namespace's reflection policy reaching the virtual kubelets,
// bad input of every kind, and an unoffload that leaves nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  NamespaceMapResource,
  NamespaceOffloadingResource,
  ShadowPodResource,
  type NamespaceOffloading,
} from "../../core/apis/index.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { tenantNamespaceName } from "../../core/offloading/index.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { HOST_NAMESPACES_DROPPED } from "../../core/virtualkubelet/pods/offloader.ts";
import { waitFor } from "../support/wait.ts";
import { startOffloadingRig, type ClusterInfo, type OffloadingRig } from "./offloading-rig.ts";
import type { Event } from "../../core/kube/types.ts";

type Offloading = NamespaceOffloading & KubeObject;
// biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters, asserted on a few fields
type Pod = KubeObject & { spec: Record<string, any>; status?: Record<string, any> };

let r: OffloadingRig;
let rome: ClusterInfo, milan: ClusterInfo, naples: ClusterInfo;
const south = {
  nodeSelectorTerms: [{ matchExpressions: [{ key: "topology.liqo.io/region", operator: "In", values: ["south"] }] }],
};

async function offload(namespace: string, spec: Record<string, unknown>, name = "offloading") {
  if (!(await rome.client.find(Resources.namespaces, namespace)))
    await rome.client.create(Resources.namespaces, { metadata: { name: namespace } });
  return rome.client.create(NamespaceOffloadingResource, {
    apiVersion: "offloading.liqo.io/v1alpha1",
    kind: "NamespaceOffloading",
    metadata: { name, namespace },
    spec,
  });
}
const getOffloading = (ns: string, name = "offloading") =>
  rome.client.find<Offloading>(NamespaceOffloadingResource, name, ns);
// An invalid spec is never "observed" (observedGeneration stays behind), so those wait on the phase alone.
const waitPhase = (ns: string, phase: string, observed = true) =>
  waitFor(
    `NamespaceOffloading ${ns}/offloading to be ${phase}`,
    async () => {
      const o = await getOffloading(ns);
      return o?.status?.offloadingPhase === phase &&
        (!observed || o.status.observedGeneration === o.metadata.generation)
        ? o
        : undefined;
    },
    { timeoutMs: 120_000, describe: async () => (await getOffloading(ns))?.status },
  );
const conditions = (o: Offloading, p: ClusterInfo) => o.status?.remoteNamespacesConditions?.[r.mapName(p)] ?? [];
const pod = (
  name: string,
  namespace: string,
  spec: Record<string, unknown> = {},
  labels: Record<string, string> = { app: name },
): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace, labels },
  spec: { containers: [{ name: "nginx", image: "nginx" }], ...spec },
});
const running = (c: ClusterInfo, name: string, ns: string) =>
  waitFor(
    `pod ${ns}/${name} in ${c.name} to be Running`,
    async () => {
      const p = await c.client.find<Pod>(Resources.pods, name, ns);
      return p?.status?.phase === "Running" ? p : undefined;
    },
    { timeoutMs: 120_000 },
  );
const eventsOf = async (c: ClusterInfo, ns: string, uid: string) =>
  (await c.client.list<Event>(Resources.events, { namespace: ns, fieldSelector: `involvedObject.uid=${uid}` }))
    .items as {
    reason: string;
    message: string;
  }[];

beforeAll(async () => {
  r = await startOffloadingRig([
    { name: "rome", region: "north" },
    { name: "milan", region: "center" },
    { name: "naples", region: "south" },
  ]);
  rome = r.consumer;
  [milan, naples] = r.providers as [ClusterInfo, ClusterInfo];
}, 600_000);

afterAll(async () => {
  await r?.rig.down();
});

describe("cluster selector and EnforceSameName", () => {
  test("only the south cluster gets the twin namespace, and the status reads as Liqo documents it", async () => {
    await offload("policies", {
      namespaceMappingStrategy: "EnforceSameName",
      podOffloadingStrategy: "LocalAndRemote",
      clusterSelector: south,
    });
    const o = await waitPhase("policies", "Ready");
    expect(o.status!.remoteNamespaceName).toBe("policies");
    expect(
      conditions(o, milan).map(({ type, status, reason, message }) => ({ type, status, reason, message })),
    ).toEqual([
      {
        type: "OffloadingRequired",
        status: "False",
        reason: "ClusterNotSelected",
        message: "You have not selected this cluster through ClusterSelector fields",
      },
    ]);
    expect(
      conditions(o, naples).map(({ type, status, reason, message }) => ({ type, status, reason, message })),
    ).toEqual([
      {
        type: "OffloadingRequired",
        status: "True",
        reason: "ClusterSelected",
        message: "The remote cluster has been selected through the ClusterSelector field",
      },
      {
        type: "Ready",
        status: "True",
        reason: "RemoteNamespaceCreated",
        message: "Namespace correctly offloaded on this cluster",
      },
    ]);
    expect(await naples.client.find(Resources.namespaces, "policies")).toBeDefined();
    expect(await milan.client.find(Resources.namespaces, "policies")).toBeUndefined();
  });

  test("a pod forced to south runs in naples; a pod forced to center stays Pending, unschedulable", async () => {
    await rome.client.create(
      Resources.pods,
      pod("to-south", "policies", { nodeSelector: { "topology.liqo.io/region": "south" } }),
    );
    await rome.client.create(
      Resources.pods,
      pod("to-center", "policies", { nodeSelector: { "topology.liqo.io/region": "center" } }),
    );
    const local = await running(rome, "to-south", "policies");
    expect(local.spec.nodeName).toBe("liqo-naples");
    await running(naples, "to-south", "policies");
    const stuck = await waitFor(
      "to-center to be reported unschedulable",
      async () => {
        const p = await rome.client.get<Pod>(Resources.pods, "to-center", "policies");
        return p.status?.conditions?.find(
          // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters, asserted on a few fields
          (c: any) => c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable",
        )
          ? p
          : undefined;
      },
      { timeoutMs: 120_000 },
    );
    expect(stuck.status!.phase).toBe("Pending");
    expect(stuck.spec.nodeName).toBeUndefined();
    expect(await milan.client.find(Resources.namespaces, "policies")).toBeUndefined();
    expect((await milan.client.list(ShadowPodResource)).items).toEqual([]);
  });
});

describe("service offloading with podOffloadingStrategy Local", () => {
  test("the Service and its EndpointSlice appear in every twin namespace, with no pod there", async () => {
    await offload("svc-local", { podOffloadingStrategy: "Local" });
    const o = await waitPhase("svc-local", "Ready");
    const twin = o.status!.remoteNamespaceName!;
    expect(twin).toMatch(/^svc-local-rome-[0-9a-f]{6}$/);
    // Local: the webhook leaves pods alone (no scheduling label), so the pod stays on a physical node.
    expect(
      (await rome.client.get(Resources.namespaces, "svc-local")).metadata.labels?.["liqo.io/scheduling-enabled"],
    ).toBeUndefined();
    await rome.client.create(Resources.pods, pod("backend", "svc-local"));
    await rome.client.create(Resources.services, {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "backend", namespace: "svc-local" },
      spec: { selector: { app: "backend" }, ports: [{ port: 80 }] },
    });
    const local = await running(rome, "backend", "svc-local");
    expect(local.spec.nodeName).not.toMatch(/^liqo-/);
    for (const provider of [milan, naples]) {
      await waitFor(
        `the Service in ${provider.name}`,
        () => provider.client.find(Resources.services, "backend", twin),
        { timeoutMs: 120_000 },
      );
      const slice = await waitFor(
        `the reflected EndpointSlice in ${provider.name} with the local pod`,
        async () => {
          // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters, asserted on a few fields
          const slices = await provider.client.list<any>(Resources.endpointSlices, {
            namespace: twin,
            labelSelector: "liqo.io/managed-by=reflection",
          });
          // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters, asserted on a few fields
          return slices.items.find((s) => s.endpoints?.some((e: any) => e.addresses.includes(local.status!.podIP)));
        },
        { timeoutMs: 120_000 },
      );
      expect(slice.metadata.labels["kubernetes.io/service-name"]).toBe("backend");
      expect((await provider.client.list(Resources.pods, { namespace: twin })).items).toEqual([]);
      expect((await provider.client.list(ShadowPodResource, { namespace: twin })).items).toEqual([]);
    }
  });
});

describe("reflection policy per namespace", () => {
  test("the annotation liqo.io/reflection-policy reaches the virtual kubelets run as processes (over their --reflection-policy)", async () => {
    const twin = (await getOffloading("svc-local"))!.status!.remoteNamespaceName!;
    await rome.client.create(Resources.configMaps, {
      metadata: { name: "settings", namespace: "svc-local" },
      data: {},
    });
    const copy = (p: ClusterInfo) => p.client.find(Resources.configMaps, "settings", twin);
    for (const p of [milan, naples]) await waitFor(`the ConfigMap in ${p.name}`, () => copy(p), { timeoutMs: 120_000 });
    const annotate = (value: string | null) =>
      rome.client.mergePatch(Resources.namespaces, "svc-local", undefined, {
        metadata: { annotations: { "liqo.io/reflection-policy": value } },
      });
    await annotate("configmaps=none");
    for (const p of [milan, naples])
      await waitFor(`the ConfigMap's copy gone from ${p.name}`, async () => !(await copy(p)), { timeoutMs: 120_000 });
    await annotate(null);
    for (const p of [milan, naples])
      await waitFor(`the ConfigMap back in ${p.name}`, () => copy(p), { timeoutMs: 120_000 });
  });
});

describe("bad input gets a clear error or condition, and nothing else breaks", () => {
  test("an unknown strategy is rejected by the CRD, naming the field and the allowed values", async () => {
    const err = await offload("bad-strategy", { podOffloadingStrategy: "Sometimes" }).catch((e) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.status).toBe(422);
    expect(err.message).toContain("spec.podOffloadingStrategy");
    expect(err.message).toContain('"LocalAndRemote"');
  });

  test("an invalid selector is reported in the conditions and an Event, and selects nothing", async () => {
    await offload("bad-selector", {
      clusterSelector: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "topology.liqo.io/region", operator: "Equals", values: ["south"] }] },
        ],
      },
    });
    const o = await waitPhase("bad-selector", "NoClusterSelected", false);
    const c = conditions(o, naples)[0]!;
    expect(c.reason).toBe("InvalidSpec");
    expect(c.message).toContain("matchExpressions.0.operator: must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt");
    const events = await waitFor("an Invalid Event", async () =>
      (await eventsOf(rome, "bad-selector", o.metadata.uid!)).find((e) => e.reason === "Invalid"),
    );
    expect(events.message).toContain("fix it and apply it again");
    for (const p of [milan, naples])
      expect(
        (await p.client.list(Resources.namespaces)).items.some((n) => n.metadata.name!.startsWith("bad-selector")),
      ).toBe(false);
  });

  test("a NamespaceOffloading with another name says it must be named offloading", async () => {
    const created = await offload("bad-name", {}, "my-offloading");
    const ev = await waitFor(
      "an InvalidName Event",
      async () => (await eventsOf(rome, "bad-name", created.metadata.uid!)).find((e) => e.reason === "InvalidName"),
      { timeoutMs: 60_000 },
    );
    expect(ev.message).toContain('only the one named "offloading"');
    const o = await getOffloading("bad-name", "my-offloading");
    expect(o!.status?.offloadingPhase).toBe("NoClusterSelected");
    expect(conditions(o!, milan)[0]!.reason).toBe("InvalidName");
  });

  test("a pod asking for host networking: refused where it could only be offloaded, offloaded without it (and told) otherwise", async () => {
    await offload("remote-only", { podOffloadingStrategy: "Remote", clusterSelector: south });
    await waitPhase("remote-only", "Ready");
    const err = await rome.client
      .create(Resources.pods, pod("hostnet", "remote-only", { hostNetwork: true }))
      .catch((e) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.message).toContain("pod asks for hostNetwork");
    expect(err.message).toContain("podOffloadingStrategy Remote");
    const created = await rome.client.create(
      Resources.pods,
      pod("hostnet", "policies", { hostNetwork: true, nodeSelector: { "topology.liqo.io/region": "south" } }),
    );
    const remote = await running(naples, "hostnet", "policies");
    expect(remote.spec.hostNetwork ?? false).toBe(false); // the API server omits false
    const ev = await waitFor("a HostNamespacesDropped Event", async () =>
      (await eventsOf(rome, "policies", created.metadata.uid!)).find((e) => e.reason === HOST_NAMESPACES_DROPPED),
    );
    expect(ev.message).toContain("hostNetwork");
  });

  test("a remote namespace Liqo did not create is a reported conflict, never adopted", async () => {
    await naples.client.create(Resources.namespaces, {
      metadata: { name: "taken", labels: { owner: "someone-else" } },
    });
    await offload("taken", { namespaceMappingStrategy: "EnforceSameName", clusterSelector: south });
    const o = await waitPhase("taken", "AllFailed");
    const ready = conditions(o, naples).find((c) => c.type === "Ready")!;
    expect(ready.reason).toBe("CreationLoopBackOff");
    expect(ready.message).toContain("see the events of NamespaceMap");
    const mapEvents = await waitFor("a NamespaceMap Event naming the conflict", async () => {
      const evs = await rome.client.list<Event>(Resources.events, {
        fieldSelector: `involvedObject.kind=NamespaceMap,involvedObject.name=${r.mapName(naples)}`,
      });
      return evs.items.find((e) => e.message!.includes("namespace taken already exists"));
    });
    expect(mapEvents.message).toContain("was not created by Liqo");
    const ns = await naples.client.get(Resources.namespaces, "taken");
    expect(ns.metadata.labels).toEqual({ owner: "someone-else", "kubernetes.io/metadata.name": "taken" });
    expect(ns.metadata.deletionTimestamp).toBeUndefined();
    // Nothing else broke: the offloaded pod still runs.
    expect((await rome.client.get<Pod>(Resources.pods, "to-south", "policies")).status!.phase).toBe("Running");
  });
});

describe("unoffload", () => {
  test("leaves nothing behind in any cluster, and offloaded pods are rescheduled locally", async () => {
    // Cordoned physical nodes push the Deployment's pods to the virtual node; uncordoned, they can come back.
    const physical = (await rome.client.list(Resources.nodes)).items.filter(
      (n) => !n.metadata.name!.startsWith("liqo-"),
    );
    for (const n of physical)
      await rome.client.mergePatch(Resources.nodes, n.metadata.name!, undefined, { spec: { unschedulable: true } });
    await rome.client.create(
      { group: "apps", version: "v1", kind: "Deployment", plural: "deployments", namespaced: true },
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "web", namespace: "policies" },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: "web" } },
          template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "nginx", image: "nginx" }] } },
        },
      },
    );
    await waitFor(
      "both web pods Running on liqo-naples",
      async () => {
        const pods = (await rome.client.list<Pod>(Resources.pods, { namespace: "policies", labelSelector: "app=web" }))
          .items;
        return (
          pods.length === 2 && pods.every((p) => p.spec.nodeName === "liqo-naples" && p.status?.phase === "Running")
        );
      },
      { timeoutMs: 120_000 },
    );
    for (const n of physical)
      await rome.client.mergePatch(Resources.nodes, n.metadata.name!, undefined, { spec: { unschedulable: false } });

    const out = await r.liqoctl("unoffload", "namespace", "policies");
    expect(out.code).toBe(0);
    await waitFor(
      "the twin namespace to be gone from naples",
      async () => !(await naples.client.find(Resources.namespaces, "policies")),
      { timeoutMs: 180_000 },
    );
    await waitFor(
      "the NamespaceOffloading to be gone (finalizer released)",
      async () => !(await getOffloading("policies")),
      { timeoutMs: 60_000 },
    );
    await waitFor(
      "web rescheduled on physical nodes",
      async () => {
        const pods = (await rome.client.list<Pod>(Resources.pods, { namespace: "policies", labelSelector: "app=web" }))
          .items;
        return (
          pods.length === 2 &&
          pods.every(
            (p) =>
              !p.metadata.deletionTimestamp && !p.spec.nodeName?.startsWith("liqo-") && p.status?.phase === "Running",
          )
        );
      },
      { timeoutMs: 180_000 },
    );
    for (const p of [milan, naples]) {
      expect(await p.client.find(Resources.namespaces, "policies")).toBeUndefined();
      const shadows = (await p.client.list(ShadowPodResource)).items.filter(
        (s) => s.metadata.annotations?.["liqo.io/local-namespace"] === "policies",
      );
      expect(shadows).toEqual([]);
      // biome-ignore lint/suspicious/noExplicitAny: objects read back from the clusters, asserted on a few fields
      const map = await rome.client.get<any>(
        NamespaceMapResource,
        r.mapName(p),
        tenantNamespaceName({ clusterID: p.clusterID, clusterName: p.name }),
      );
      expect(map.spec?.desiredMapping?.policies).toBeUndefined();
      expect(map.status?.currentMapping?.policies).toBeUndefined();
    }
    expect(
      (await rome.client.get(Resources.namespaces, "policies")).metadata.labels?.["liqo.io/scheduling-enabled"],
    ).toBeUndefined();
    // The other offloadings are untouched.
    expect((await getOffloading("svc-local"))?.status?.offloadingPhase).toBe("Ready");
  }, 600_000);
});
