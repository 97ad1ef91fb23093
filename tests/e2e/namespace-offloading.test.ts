// Namespace offloading on three real clusters: rome offloads to milan (region north) and naples
// (region south), represented in rome by two virtual Nodes. The NamespaceOffloading controller runs
// against rome; one NamespaceMap controller per peer creates twin namespaces in milan or naples.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  ForeignClusterResource,
  NamespaceMapResource,
  NamespaceOffloadingResource,
  installCrds,
  type NamespaceMap,
  type NamespaceOffloading,
} from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import {
  createNamespaceMapController,
  createNamespaceOffloadingController,
  NAMESPACE_MAP_FINALIZER,
  NAMESPACE_OFFLOADING_FINALIZER,
  ENFORCED_STRATEGY_ANNOTATION,
  remoteNamespaceName,
  tenantNamespaceName,
  uniqueName,
  type NamespaceMapController,
  type NamespaceOffloadingController,
} from "../../core/offloading/index.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";

type Offloading = NamespaceOffloading & KubeObject;
type NsMap = NamespaceMap & KubeObject;
type Peer = "milan" | "naples";

let rig: TestRig;
let rome: KubeClient;
const remote = {} as Record<Peer, KubeClient>;
const rome_ = { clusterID: crypto.randomUUID(), clusterName: "rome" };
const peers = {
  milan: { identity: { clusterID: crypto.randomUUID(), clusterName: "milan" }, region: "north" },
  naples: { identity: { clusterID: crypto.randomUUID(), clusterName: "naples" }, region: "south" },
};
const mapName = (p: Peer) => uniqueName(peers[p].identity);
const tenant = (p: Peer) => tenantNamespaceName(peers[p].identity);
/** What each peer's controller told the reflection engine: local namespace -> remote namespace. */
const enginePairs = { milan: new Map<string, string>(), naples: new Map<string, string>() };
let offloadingCtl: NamespaceOffloadingController;
const mapCtl = {} as Record<Peer, NamespaceMapController>;

function startControllers() {
  offloadingCtl = createNamespaceOffloadingController({ client: rome, localCluster: rome_ });
  for (const p of ["milan", "naples"] as const) {
    enginePairs[p].clear();
    mapCtl[p] = createNamespaceMapController({
      local: rome,
      remote: remote[p],
      localClusterId: rome_.clusterID,
      remoteClusterId: peers[p].identity.clusterID,
      remoteClusterName: p,
      addPair: (pair) => void enginePairs[p].set(pair.localNamespace, pair.remoteNamespace),
      removePair: (ns) => void enginePairs[p].delete(ns),
    });
  }
  return Promise.all([offloadingCtl.start(), mapCtl.milan.start(), mapCtl.naples.start()]);
}
const stopControllers = () => Promise.all([offloadingCtl.stop(), mapCtl.milan.stop(), mapCtl.naples.stop()]);

async function offload(namespace: string, spec: Record<string, unknown>, name = "offloading") {
  if (!(await rome.find(Resources.namespaces, namespace)))
    await rome.create(Resources.namespaces, { metadata: { name: namespace } });
  await rome.create(NamespaceOffloadingResource, {
    apiVersion: "offloading.liqo.io/v1alpha1",
    kind: "NamespaceOffloading",
    metadata: { name, namespace },
    spec,
  });
}
const getOffloading = (namespace: string, name = "offloading") =>
  rome.find<Offloading>(NamespaceOffloadingResource, name, namespace);
const region = (r: string) => ({
  nodeSelectorTerms: [{ matchExpressions: [{ key: "topology.liqo.io/region", operator: "In", values: [r] }] }],
});

async function waitPhase(namespace: string, phase: string, timeoutMs = 90_000) {
  return waitFor(
    `NamespaceOffloading ${namespace}/offloading to be ${phase}`,
    async () => {
      const o = await getOffloading(namespace);
      return o?.status?.offloadingPhase === phase && o.status.observedGeneration === o.metadata.generation
        ? o
        : undefined;
    },
    { timeoutMs, describe: async () => (await getOffloading(namespace))?.status },
  );
}
const condition = (o: Offloading, p: Peer, type: string) =>
  o.status?.remoteNamespacesConditions?.[mapName(p)]?.find((c) => c.type === type);
const twin = (p: Peer, name: string) => remote[p].find(Resources.namespaces, name);
const waitTwinGone = (p: Peer, name: string) =>
  waitFor(`namespace ${name} to be gone from ${p}`, async () => !(await twin(p, name)), { timeoutMs: 120_000 });
const getMap = (p: Peer) => rome.get<NsMap>(NamespaceMapResource, mapName(p), tenant(p));

async function eventsFor(namespace: string, name: string) {
  const list = await rome.list(Resources.events, { namespace, fieldSelector: `involvedObject.name=${name}` });
  return list.items as unknown as { reason: string; message: string; type: string }[];
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 3, names: ["rome", "milan", "naples"], nodes: 1 });
  rome = rig.client("rome");
  remote.milan = rig.client("milan");
  remote.naples = rig.client("naples");
  await installCrds(rome);
  for (const p of ["milan", "naples"] as const) {
    const { identity } = peers[p];
    // What peering leaves behind: the tenant namespace, the ForeignCluster and the virtual node.
    await rome.create(Resources.namespaces, { metadata: { name: tenant(p) } });
    await rome.create(ForeignClusterResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ForeignCluster",
      metadata: { name: p },
      spec: { clusterIdentity: identity, foreignAuthUrl: `https://auth.${p}.example.com:443` },
    });
    await rome.mergePatch(
      ForeignClusterResource,
      p,
      undefined,
      { status: { tenantNamespace: { local: tenant(p) } } },
      "status",
    );
    await rome.create(Resources.nodes, {
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name: `liqo-${p}`,
        labels: {
          "liqo.io/type": "virtual-node",
          "liqo.io/remote-cluster-id": identity.clusterID,
          "topology.liqo.io/region": peers[p].region,
        },
      },
      spec: { taints: [{ key: "virtual-node.liqo.io/not-allowed", value: "true", effect: "NoExecute" }] },
    });
  }
  await startControllers();
}, 600_000);

afterAll(async () => {
  // Only when beforeAll got as far as starting them.
  if (offloadingCtl) await stopControllers();
  await rig?.down();
});

describe("offloading a namespace", () => {
  test("DefaultName with no selector: a twin named <ns>-rome-<hash> in every cluster, Ready", async () => {
    await offload("shop", {});
    const o = await waitPhase("shop", "Ready");
    const name = remoteNamespaceName("shop", "DefaultName", rome_);
    expect(name).toMatch(/^shop-rome-[0-9a-f]{6}$/);
    expect(o.status!.remoteNamespaceName).toBe(name);
    expect(o.metadata.finalizers).toContain(NAMESPACE_OFFLOADING_FINALIZER);
    for (const p of ["milan", "naples"] as const) {
      expect(condition(o, p, "OffloadingRequired")).toMatchObject({ status: "True", reason: "ClusterSelected" });
      expect(condition(o, p, "Ready")).toMatchObject({
        status: "True",
        reason: "RemoteNamespaceCreated",
        message: "Namespace correctly offloaded on this cluster",
      });
      const ns = (await twin(p, name))!;
      expect(ns.metadata.labels?.["liqo.io/remote-cluster-id"]).toBe(rome_.clusterID);
      expect(ns.metadata.annotations?.["liqo.io/original-name"]).toBe("shop");
      expect(ns.metadata.annotations?.["liqo.io/managed-by-namespace-map"]).toBe(`${tenant(p)}/${mapName(p)}`);
      const nm = await getMap(p);
      expect(nm.spec?.desiredMapping?.shop).toBe(name);
      expect(nm.status?.currentMapping?.shop).toEqual({ remoteNamespace: name, phase: "Accepted" });
      expect(nm.metadata.labels?.["liqo.io/remote-cluster-id"]).toBe(peers[p].identity.clusterID);
      expect(nm.metadata.finalizers).toContain(NAMESPACE_MAP_FINALIZER);
      expect(nm.metadata.ownerReferences?.[0]).toMatchObject({ kind: "Node", name: `liqo-${p}` });
      expect(enginePairs[p].get("shop")).toBe(name);
    }
    const local = await rome.get(Resources.namespaces, "shop");
    expect(local.metadata.labels?.["liqo.io/scheduling-enabled"]).toBe("true");
  });

  test("EnforceSameName with region=north: only milan gets the twin, naples is reported as not selected", async () => {
    await offload("north-app", { namespaceMappingStrategy: "EnforceSameName", clusterSelector: region("north") });
    const o = await waitPhase("north-app", "Ready");
    expect(o.status!.remoteNamespaceName).toBe("north-app");
    expect(await twin("milan", "north-app")).toBeDefined();
    expect(await twin("naples", "north-app")).toBeUndefined();
    expect(o.status!.remoteNamespacesConditions![mapName("naples")]).toEqual([
      expect.objectContaining({
        type: "OffloadingRequired",
        status: "False",
        reason: "ClusterNotSelected",
        message: "You have not selected this cluster through ClusterSelector fields",
      }),
    ]);
    expect(enginePairs.milan.get("north-app")).toBe("north-app");
    expect(enginePairs.naples.has("north-app")).toBe(false);
  });

  test("changing the selector moves the twin: created in naples, removed from milan", async () => {
    await rome.mergePatch(NamespaceOffloadingResource, "offloading", "north-app", {
      spec: { clusterSelector: region("south") },
    });
    await waitFor("the twin in naples", () => twin("naples", "north-app"));
    await waitTwinGone("milan", "north-app");
    const o = await waitFor("milan's conditions to settle", async () => {
      const x = await waitPhase("north-app", "Ready");
      return condition(x, "milan", "Ready") === undefined ? x : undefined;
    });
    expect(condition(o, "milan", "OffloadingRequired")?.reason).toBe("ClusterNotSelected");
    expect(condition(o, "naples", "Ready")?.reason).toBe("RemoteNamespaceCreated");
    expect((await getMap("milan")).status?.currentMapping?.["north-app"]).toBeUndefined();
    await waitFor(
      "the engine pairs to follow",
      () => enginePairs.naples.get("north-app") === "north-app" && !enginePairs.milan.has("north-app"),
    );
  });

  test("a selector matching no cluster is NoClusterSelected; the Local strategy leaves the namespace unlabelled", async () => {
    await offload("west-app", { podOffloadingStrategy: "Local", clusterSelector: region("west") });
    const o = await waitPhase("west-app", "NoClusterSelected");
    for (const p of ["milan", "naples"] as const) {
      expect(o.status!.remoteNamespacesConditions![mapName(p)]!.map((c) => c.reason)).toEqual(["ClusterNotSelected"]);
      expect(await twin(p, o.status!.remoteNamespaceName!)).toBeUndefined();
    }
    expect(
      (await rome.get(Resources.namespaces, "west-app")).metadata.labels?.["liqo.io/scheduling-enabled"],
    ).toBeUndefined();
  });
});

describe("conflicts and removal", () => {
  test("a namespace someone else made in naples is not adopted: SomeFailed with CreationLoopBackOff", async () => {
    await remote.naples.create(Resources.namespaces, {
      metadata: { name: "clash", labels: { owner: "someone-else" } },
    });
    await offload("clash", { namespaceMappingStrategy: "EnforceSameName" });
    // SomeFailed as soon as naples fails, maybe before milan's twin is there: wait for that too.
    const o = await waitFor("milan's twin of clash created", async () => {
      const x = await waitPhase("clash", "SomeFailed");
      return condition(x, "milan", "Ready")?.reason === "RemoteNamespaceCreated" ? x : undefined;
    });
    expect(condition(o, "naples", "Ready")).toMatchObject({ status: "False", reason: "CreationLoopBackOff" });
    expect(condition(o, "naples", "Ready")?.message).toContain(`NamespaceMap ${tenant("naples")}/${mapName("naples")}`);
    expect((await getMap("naples")).status?.currentMapping?.clash).toEqual({
      remoteNamespace: "clash",
      phase: "CreationLoopBackOff",
    });
    const foreign = (await twin("naples", "clash"))!;
    expect(foreign.metadata.annotations?.["liqo.io/managed-by-namespace-map"]).toBeUndefined();
    expect(foreign.metadata.labels?.["liqo.io/remote-cluster-id"]).toBeUndefined();
    expect(enginePairs.naples.has("clash")).toBe(false);
    const events = await waitFor("a warning on the NamespaceMap", async () => {
      const list = await eventsFor(tenant("naples"), mapName("naples"));
      return list.find((e) => e.reason === "RemoteNamespaceCreationFailed");
    });
    expect(events.message).toContain("already exists in cluster naples");
  });

  test("deleting the NamespaceOffloading removes our twins, leaves the foreign namespace, then releases the finalizer", async () => {
    await rome.delete(NamespaceOffloadingResource, "offloading", "clash");
    await waitFor("the NamespaceOffloading to be gone", async () => !(await getOffloading("clash")), {
      timeoutMs: 120_000,
    });
    expect(await twin("milan", "clash")).toBeUndefined();
    expect((await twin("naples", "clash"))?.metadata.labels?.owner).toBe("someone-else");
    for (const p of ["milan", "naples"] as const) {
      const nm = await getMap(p);
      expect(nm.spec?.desiredMapping?.clash).toBeUndefined();
      expect(nm.status?.currentMapping?.clash).toBeUndefined();
      expect(enginePairs[p].has("clash")).toBe(false);
    }
    expect(
      (await rome.get(Resources.namespaces, "clash")).metadata.labels?.["liqo.io/scheduling-enabled"],
    ).toBeUndefined();
  });

  test("once the foreign namespace goes, the retried mapping creates our twin and turns Ready", async () => {
    await offload("clash", { namespaceMappingStrategy: "EnforceSameName" });
    await waitPhase("clash", "SomeFailed");
    await remote.naples.delete(Resources.namespaces, "clash");
    const o = await waitPhase("clash", "Ready", 180_000);
    expect(condition(o, "naples", "Ready")?.reason).toBe("RemoteNamespaceCreated");
    expect((await twin("naples", "clash"))?.metadata.labels?.["liqo.io/remote-cluster-id"]).toBe(rome_.clusterID);
  });

  test("deleting the local namespace removes every twin and the NamespaceOffloading", async () => {
    const name = remoteNamespaceName("shop", "DefaultName", rome_);
    await rome.delete(Resources.namespaces, "shop");
    await waitTwinGone("milan", name);
    await waitTwinGone("naples", name);
    await waitFor("the local namespace to be gone", async () => !(await rome.find(Resources.namespaces, "shop")), {
      timeoutMs: 300_000,
    });
    expect(enginePairs.milan.has("shop") || enginePairs.naples.has("shop")).toBe(false);
  });
});

describe("wrong input is reported, not fatal", () => {
  test("a NamespaceOffloading not named offloading is ignored with an Event and a status saying why", async () => {
    await offload("typo", {}, "offload-me");
    const o = await waitFor("the status of the wrongly named object", async () => {
      const x = await getOffloading("typo", "offload-me");
      return x?.status?.offloadingPhase ? x : undefined;
    });
    expect(o.status!.offloadingPhase).toBe("NoClusterSelected");
    expect(o.status!.remoteNamespacesConditions![mapName("milan")]![0]).toMatchObject({
      status: "False",
      reason: "InvalidName",
    });
    expect(o.metadata.finalizers ?? []).not.toContain(NAMESPACE_OFFLOADING_FINALIZER);
    const event = await waitFor("an InvalidName event", async () =>
      (await eventsFor("typo", "offload-me")).find((e) => e.reason === "InvalidName"),
    );
    expect(event.message).toContain('only the one named "offloading"');
    expect((await getMap("milan")).spec?.desiredMapping?.typo).toBeUndefined();
  });

  test("an invalid selector is reported with the field and changes nothing until fixed", async () => {
    await offload("badsel", {
      clusterSelector: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "topology.liqo.io/region", operator: "Gt", values: ["many"] }] },
        ],
      },
    });
    const event = await waitFor("an Invalid event", async () =>
      (await eventsFor("badsel", "offloading")).find((e) => e.reason === "Invalid"),
    );
    expect(event.message).toContain("spec.clusterSelector.nodeSelectorTerms[0].matchExpressions[0]");
    expect(event.message).toContain("operator Gt needs exactly one integer value");
    const o = (await getOffloading("badsel"))!;
    expect(o.status!.offloadingPhase).toBe("NoClusterSelected");
    expect(condition(o, "milan", "OffloadingRequired")?.reason).toBe("InvalidSpec");
    expect(o.status!.observedGeneration).toBeUndefined();
    expect((await getMap("milan")).spec?.desiredMapping?.badsel).toBeUndefined();

    await rome.mergePatch(NamespaceOffloadingResource, "offloading", "badsel", {
      spec: { clusterSelector: region("north") },
    });
    await waitPhase("badsel", "Ready");
  });

  test("a namespace too long for a DefaultName twin is reported as invalid", async () => {
    const long = `n${"x".repeat(55)}`;
    await offload(long, {});
    const event = await waitFor("an Invalid event", async () =>
      (await eventsFor(long, "offloading")).find((e) => e.reason === "Invalid"),
    );
    expect(event.message).toContain("more than the 63");
    expect(event.message).toContain("use a shorter namespace name");
  });
});

describe("crash safety", () => {
  test("controllers restarted mid-way converge, and a second pass writes nothing", async () => {
    await stopControllers();
    await offload("restart-app", {});
    // Half the work, as if the process died: the mappings are written, only milan's twin exists.
    await offloadingCtl.handle("restart-app/offloading");
    await mapCtl.milan.handle(`${tenant("milan")}/${mapName("milan")}`);
    expect((await getOffloading("restart-app"))!.status!.offloadingPhase).toBe("InProgress");
    expect(await twin("naples", remoteNamespaceName("restart-app", "DefaultName", rome_))).toBeUndefined();

    await startControllers();
    await waitPhase("restart-app", "Ready");
    const name = remoteNamespaceName("restart-app", "DefaultName", rome_);
    await waitFor(
      "the new controllers to rebuild the engine pairs",
      () =>
        enginePairs.milan.get("restart-app") === name &&
        enginePairs.naples.get("restart-app") === name &&
        enginePairs.naples.get("clash") === "clash",
    );

    await offloadingCtl.idle();
    const before = (await getOffloading("restart-app"))!.metadata.resourceVersion;
    const mapBefore = (await getMap("naples")).metadata.resourceVersion;
    await offloadingCtl.handle("restart-app/offloading");
    await mapCtl.naples.handle(`${tenant("naples")}/${mapName("naples")}`);
    expect((await getOffloading("restart-app"))!.metadata.resourceVersion).toBe(before);
    expect((await getMap("naples")).metadata.resourceVersion).toBe(mapBefore);
  });
});

describe("tightening the pod offloading strategy", () => {
  const ns = "tighten";
  const podOn = (name: string, nodeName: string) =>
    rome.create(Resources.pods, {
      metadata: { name, namespace: ns },
      spec: {
        nodeName,
        containers: [{ name: "c", image: "nginx" }],
        tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" }],
      },
    });
  const evicted = (name: string) =>
    waitFor(
      `pod ${ns}/${name} to be evicted`,
      async () => {
        const pod = await rome.find(Resources.pods, name, ns);
        return !pod || pod.metadata.deletionTimestamp !== undefined;
      },
      { timeoutMs: 90_000 },
    );
  const stillThere = async (name: string) => {
    const pod = await rome.find(Resources.pods, name, ns);
    expect(pod).toBeDefined();
    expect(pod!.metadata.deletionTimestamp).toBeUndefined();
  };
  const enforced = (strategy: string) =>
    waitFor(
      `strategy ${strategy} to be enforced`,
      async () => (await getOffloading(ns))?.metadata.annotations?.[ENFORCED_STRATEGY_ANNOTATION] === strategy,
      { timeoutMs: 90_000 },
    );

  test("the first offloading evicts nothing: pods that predate it stay", async () => {
    const physical = (await rome.list(Resources.nodes)).items.find(
      (n) => n.metadata.labels?.["liqo.io/type"] !== "virtual-node",
    )!.metadata.name!;
    await rome.create(Resources.namespaces, { metadata: { name: ns } });
    await podOn("on-virtual", "liqo-milan");
    await podOn("on-physical", physical);
    await podOn("early-physical", physical);
    await offload(ns, { podOffloadingStrategy: "Remote" });
    await enforced("Remote");
    await stillThere("early-physical");
    await stillThere("on-virtual");
  });

  test("LocalAndRemote → Local evicts the pod on the virtual node, with an Event saying why; physical pods stay", async () => {
    await rome.mergePatch(NamespaceOffloadingResource, "offloading", ns, {
      spec: { podOffloadingStrategy: "LocalAndRemote" },
    });
    await enforced("LocalAndRemote");
    await stillThere("on-virtual");
    await stillThere("on-physical");
    await rome.mergePatch(NamespaceOffloadingResource, "offloading", ns, { spec: { podOffloadingStrategy: "Local" } });
    await evicted("on-virtual");
    await enforced("Local");
    await stillThere("on-physical");
    const event = await waitFor("an EvictedByOffloadingStrategy Event", async () =>
      (await eventsFor(ns, "on-virtual")).find((e) => e.reason === "EvictedByOffloadingStrategy"),
    );
    expect(event.message).toContain("virtual node liqo-milan");
    expect(event.message).toContain("from LocalAndRemote to Local");
    expect(
      (
        await waitFor("a PodsEvicted Event", async () =>
          (await eventsFor(ns, "offloading")).find((e) => e.reason === "PodsEvicted"),
        )
      ).message,
    ).toContain("on-virtual");
  });

  test("→ Remote evicts the pods on physical nodes", async () => {
    await rome.mergePatch(NamespaceOffloadingResource, "offloading", ns, { spec: { podOffloadingStrategy: "Remote" } });
    await evicted("on-physical");
    await evicted("early-physical");
    await enforced("Remote");
  });
});
