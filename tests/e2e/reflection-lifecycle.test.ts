// The whole life of a reflected object, for every built-in kind, on a real rig: rome (local)
// reflects namespace "life" into "life-rome" on milan (remote). Each kind goes through
// created → reflected with its documented changes, updated locally → remote updated, remote
// edited by hand → repaired, annotated liqo.io/skip-reflection → remote copy removed,
// annotation removed → reflected again, deleted locally → remote copy removed.
// Claims of the liqo class placed on the virtual node travel forward; their volumes stay there (core/storage binds the local claim).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { createReflectionEngine, type ReflectionEngine } from "../../core/reflection/engine/engine.ts";
import { builtinWasm } from "../../reflectors/index.ts";
import type { BuiltinName } from "../../reflectors/build.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { namespace } from "../support/namespace.ts";
import type { Event } from "../../core/kube/types.ts";

let rig: TestRig;
let local: KubeClient;
let remote: KubeClient;
const ids = { localClusterId: "rome-life-id", remoteClusterId: "milan-life-id" };
const LNS = "life";
const RNS = "life-rome";
const SKIP = "liqo.io/skip-reflection";
const VIRTUAL_NODE = "liqo-milan";
// The identity translator of a peering whose pod CIDR 10.100/16 is remapped to 10.199/16 on the peer.
const translateIp = (ip: string) => ip.replace(/^10\.100\./, "10.199.");
const context = { storageClass: "standard", virtualNodeName: VIRTUAL_NODE };
const builtins: BuiltinName[] = ["configmaps", "secrets", "services", "endpointslices", "ingresses", "storage"];

async function startEngine(
  nsPair: { localNamespace: string; remoteNamespace: string },
  ctx: Record<string, unknown>,
  names = builtins,
): Promise<ReflectionEngine> {
  const engine = createReflectionEngine({ local, remote, ...ids, context: ctx, translateIp, workers: 4 });
  for (const b of names) await engine.addPlugin(await builtinWasm(b), { trust: "builtin", source: `builtin:${b}` });
  await engine.addNamespacePair(nsPair);
  return engine;
}

// `any`: the assertions read kind-specific fields; a missing object is undefined.
// biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
const remoteOf = (res: ResourceRef, name: string): Promise<any> =>
  remote.find(res, name, res.namespaced ? RNS : undefined);
const gone = (res: ResourceRef, name: string) => async () => !(await remoteOf(res, name));

interface Lifecycle {
  res: ResourceRef;
  name: string;
  /** A local merge patch, and how the remote copy shows it. */
  update: Record<string, unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
  updated(copy: any): boolean;
  /** A hand edit of the remote copy (merge patch), and how the repaired copy looks. */
  vandalise: Record<string, unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
  repaired(copy: any): boolean;
}

/** Steps 2–6 of the life of a forward-reflected object whose remote copy already exists. */
async function lifecycle(l: Lifecycle) {
  const kind = l.res.kind;
  await local.mergePatch(l.res, l.name, LNS, l.update);
  await waitFor(
    `the local update of ${kind} ${l.name} to reach the remote copy`,
    async () => l.updated(await remoteOf(l.res, l.name)),
    { timeoutMs: 120_000, describe: () => remoteOf(l.res, l.name) },
  );

  await remote.mergePatch(l.res, l.name, RNS, l.vandalise);
  await waitFor(
    `the hand-edited remote ${kind} ${l.name} to be repaired`,
    async () => l.repaired(await remoteOf(l.res, l.name)),
    { timeoutMs: 120_000, describe: () => remoteOf(l.res, l.name) },
  );

  await local.mergePatch(l.res, l.name, LNS, { metadata: { annotations: { [SKIP]: "true" } } });
  await waitFor(`the remote ${kind} ${l.name} to be removed after ${SKIP}=true`, gone(l.res, l.name), {
    timeoutMs: 120_000,
  });

  await local.mergePatch(l.res, l.name, LNS, { metadata: { annotations: { [SKIP]: null } } });
  const back = await waitFor(
    `the remote ${kind} ${l.name} to come back once ${SKIP} is gone`,
    () => remoteOf(l.res, l.name),
    { timeoutMs: 120_000 },
  );
  expect(back.metadata.annotations?.[SKIP]).toBeUndefined();
  expect(l.repaired(back)).toBe(true);

  await local.delete(l.res, l.name, LNS);
  await waitFor(`the remote ${kind} ${l.name} to be deleted with the local one`, gone(l.res, l.name), {
    timeoutMs: 120_000,
  });
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  local = rig.client("rome");
  remote = rig.client("milan");
  await namespace(local, LNS);
  await namespace(remote, RNS);
}, 600_000);

afterAll(async () => {
  await rig?.down();
});

describe("every built-in kind, created to deleted", () => {
  let engine: ReflectionEngine;
  beforeAll(async () => {
    engine = await startEngine({ localNamespace: LNS, remoteNamespace: RNS }, context);
  }, 300_000);
  afterAll(() => engine?.stop());

  test("ConfigMap", async () => {
    await local.create(Resources.configMaps, {
      metadata: { name: "settings", namespace: LNS, labels: { app: "shop" } },
      data: { color: "blue" },
    });
    const copy = await waitFor("the remote ConfigMap", () => remoteOf(Resources.configMaps, "settings"));
    expect(copy.data).toEqual({ color: "blue" });
    expect(copy.metadata.labels.app).toBe("shop");
    expect(copy.metadata.labels["liqo.io/managed-by"]).toBe("reflection");
    expect(copy.metadata.labels["liqo.io/origin-cluster-id"]).toBe(ids.localClusterId);
    await lifecycle({
      res: Resources.configMaps,
      name: "settings",
      update: { data: { color: "red" } },
      updated: (c) => c?.data?.color === "red",
      vandalise: { data: { color: "green" } },
      repaired: (c) => c?.data?.color === "red",
    });
  });

  test("kube-root-ca.crt is never reflected: each cluster keeps its own", async () => {
    // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    const mine = await local.get<any>(Resources.configMaps, "kube-root-ca.crt", LNS);
    const theirs = await waitFor("milan's own root CA ConfigMap", () =>
      remoteOf(Resources.configMaps, "kube-root-ca.crt"),
    );
    expect(theirs.metadata.labels?.["liqo.io/managed-by"]).toBeUndefined();
    expect(theirs.data["ca.crt"]).not.toBe(mine.data["ca.crt"]);
  });

  test("Secret", async () => {
    await local.create(Resources.secrets, {
      metadata: { name: "db", namespace: LNS },
      type: "kubernetes.io/basic-auth",
      stringData: { username: "u", password: "p" },
    });
    const copy = await waitFor("the remote Secret", () => remoteOf(Resources.secrets, "db"));
    expect(copy.type).toBe("kubernetes.io/basic-auth");
    expect(Buffer.from(copy.data.password, "base64").toString()).toBe("p");
    expect(copy.metadata.labels["liqo.io/origin-cluster-id"]).toBe(ids.localClusterId);
    const b64 = (s: string) => Buffer.from(s).toString("base64");
    await lifecycle({
      res: Resources.secrets,
      name: "db",
      update: { data: { password: b64("p2") } },
      updated: (c) => c?.data?.password === b64("p2"),
      vandalise: { data: { password: b64("stolen") } },
      repaired: (c) => c?.data?.password === b64("p2"),
    });
  });

  test("ServiceAccount token Secret: reflected as Opaque with the token the origin cluster minted", async () => {
    await local.create(Resources.serviceAccounts, { metadata: { name: "robot", namespace: LNS } });
    await local.create(Resources.secrets, {
      metadata: { name: "robot-token", namespace: LNS, annotations: { "kubernetes.io/service-account.name": "robot" } },
      type: "kubernetes.io/service-account-token",
    });
    const minted = await waitFor(
      "the local token controller to fill the token",
      async () => {
        // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
        const s = await local.get<any>(Resources.secrets, "robot-token", LNS);
        return s.data?.token ? s : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const copy = await waitFor(
      "the remote copy to carry the token",
      async () => {
        const c = await remoteOf(Resources.secrets, "robot-token");
        return c?.data?.token ? c : undefined;
      },
      { timeoutMs: 120_000 },
    );
    expect(copy.type).toBe("Opaque");
    expect(copy.data.token).toBe(minted.data.token);
    expect(copy.data["ca.crt"]).toBe(minted.data["ca.crt"]);
    expect(copy.metadata.annotations["kubernetes.io/service-account.name"]).toBe("robot");
    expect(copy.metadata.annotations["kubernetes.io/service-account.uid"]).toBeUndefined();
    await lifecycle({
      res: Resources.secrets,
      name: "robot-token",
      update: { metadata: { labels: { rotated: "1" } } },
      updated: (c) => c?.metadata.labels?.rotated === "1",
      vandalise: { data: { token: Buffer.from("forged").toString("base64") } },
      repaired: (c) => c?.data?.token === minted.data.token,
    });
  });

  test("Service: cluster IP and node ports left to the peer", async () => {
    // The peer allocates its own node port, at random: 31090 taken there first, a copy that carried
    // the source's port would be refused, and one the peer allocated cannot equal it by chance.
    await remote.create(Resources.services, {
      metadata: { name: "holds-31090", namespace: RNS },
      spec: { type: "NodePort", selector: { app: "none" }, ports: [{ port: 80, nodePort: 31090 }] },
    });
    await local.create(Resources.services, {
      metadata: { name: "web", namespace: LNS },
      spec: { type: "NodePort", selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080, nodePort: 31090 }] },
    });
    // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    const mine = await local.get<any>(Resources.services, "web", LNS);
    const copy = await waitFor("the remote Service", () => remoteOf(Resources.services, "web"));
    expect(copy.spec.type).toBe("NodePort");
    expect(copy.spec.ports[0].port).toBe(80);
    expect(copy.spec.ports[0].targetPort).toBe(8080);
    expect(copy.spec.selector).toEqual({ app: "web" });
    expect(copy.spec.clusterIP).not.toBe(mine.spec.clusterIP);
    expect(copy.spec.ports[0].nodePort).not.toBe(31090);
    await lifecycle({
      res: Resources.services,
      name: "web",
      update: { spec: { selector: { app: "web2" } } },
      updated: (c) => c?.spec.selector.app === "web2",
      vandalise: { spec: { selector: { app: "elsewhere" } } },
      repaired: (c) => c?.spec.selector.app === "web2",
    });
  });

  test("the peer's own EndpointSlices of a reflected Service carry our labels, yet are left alone", async () => {
    await local.create(Resources.services, {
      metadata: { name: "api", namespace: LNS },
      spec: { selector: { app: "api" }, ports: [{ port: 8080 }] },
    });
    // biome-ignore-start lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    const peerSlice = async () =>
      (
        await remote.list<any>(Resources.endpointSlices, {
          namespace: RNS,
          labelSelector:
            "kubernetes.io/service-name=api,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io",
        })
      ).items[0];
    // biome-ignore-end lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    const first = await waitFor(
      "milan's EndpointSlice controller to make a slice for the reflected Service",
      peerSlice,
      { timeoutMs: 120_000 },
    );
    // It inherits the Service's labels, ours included: it looks reflected, but it has an owner.
    expect(first.metadata.labels["liqo.io/managed-by"]).toBe("reflection");
    expect(first.metadata.ownerReferences[0].kind).toBe("Service");
    await waitFor("the reflectors to handle it", () => engine.reflectors().every((r) => r.queueDepth === 0));
    // A new label on the local Service reaches the peer's slice through its controller: handled again.
    await local.mergePatch(Resources.services, "api", LNS, { metadata: { labels: { version: "2" } } });
    await waitFor(
      "the peer's slice to take the new label",
      async () => (await peerSlice())?.metadata.labels.version === "2",
      { timeoutMs: 120_000 },
    );
    await waitFor("the reflectors to handle it", () => engine.reflectors().every((r) => r.queueDepth === 0));
    expect((await peerSlice()).metadata.uid).toBe(first.metadata.uid);
    await local.delete(Resources.services, "api", LNS);
  });

  test("Service with liqo.io/force-remote-node-port=true keeps its node port", async () => {
    const annotations = { "liqo.io/force-remote-node-port": "true" };
    await local.create(Resources.services, {
      metadata: { name: "fixed", namespace: LNS, annotations },
      spec: { type: "NodePort", selector: { app: "x" }, ports: [{ port: 81, nodePort: 31091 }] },
    });
    const copy = await waitFor("the remote Service", () => remoteOf(Resources.services, "fixed"));
    expect(copy.spec.ports[0].nodePort).toBe(31091);
    await lifecycle({
      res: Resources.services,
      name: "fixed",
      update: { spec: { ports: [{ port: 81, nodePort: 31092 }] } },
      updated: (c) => c?.spec.ports[0].nodePort === 31092,
      vandalise: { spec: { selector: { app: "elsewhere" } } },
      repaired: (c) => c?.spec.selector.app === "x",
    });
  });

  test("Service forcing a node port the peer already uses: a ReflectionFailed Event names the port", async () => {
    await remote.create(Resources.services, {
      metadata: { name: "squatter", namespace: RNS },
      spec: { type: "NodePort", selector: { app: "q" }, ports: [{ port: 82, nodePort: 31093 }] },
    });
    const mine = await local.create(Resources.services, {
      metadata: { name: "clash", namespace: LNS, annotations: { "liqo.io/force-remote-node-port": "true" } },
      spec: { type: "NodePort", selector: { app: "c" }, ports: [{ port: 82, nodePort: 31093 }] },
    });
    const event = await waitFor(
      "a ReflectionFailed Event on the local Service",
      async () => {
        const evs = await local.list<Event>(Resources.events, {
          namespace: LNS,
          fieldSelector: `involvedObject.uid=${mine.metadata.uid}`,
        });
        return evs.items.find((e) => e.reason === "ReflectionFailed");
      },
      { timeoutMs: 120_000 },
    );
    expect(event.type).toBe("Warning");
    expect(event.message).toContain("31093");
    expect(await remoteOf(Resources.services, "clash")).toBeUndefined();
    await local.delete(Resources.services, "clash", LNS);
  });

  test("EndpointSlice: addresses translated, the peer's own endpoints not duplicated", async () => {
    await local.create(Resources.endpointSlices, {
      metadata: { name: "ext-1", namespace: LNS, labels: { "kubernetes.io/service-name": "ext" } },
      addressType: "IPv4",
      ports: [{ name: "http", port: 80, protocol: "TCP" }],
      endpoints: [
        {
          addresses: ["10.100.0.7"],
          conditions: { ready: true },
          nodeName: "rome-worker",
          targetRef: { kind: "Pod", name: "p1", namespace: LNS },
        },
        // A pod offloaded to milan: milan already has its own endpoint for it.
        { addresses: ["10.100.0.9"], conditions: { ready: true }, nodeName: VIRTUAL_NODE },
      ],
    } as KubeObject);
    const copy = await waitFor("the remote EndpointSlice", () => remoteOf(Resources.endpointSlices, "ext-1"));
    expect(copy.endpoints.length).toBe(1);
    expect(copy.endpoints[0].addresses).toEqual(["10.199.0.7"]);
    expect(copy.endpoints[0].nodeName).toBeUndefined();
    expect(copy.endpoints[0].targetRef).toBeUndefined();
    expect(copy.ports[0].port).toBe(80);
    expect(copy.metadata.labels["kubernetes.io/service-name"]).toBe("ext");
    expect(copy.metadata.labels["endpointslice.kubernetes.io/managed-by"]).toBe("endpointslice.reflection.liqo.io");
    // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    const addrs = (c: any) => (c?.endpoints ?? []).map((e: any) => e.addresses[0]).join(",");
    await lifecycle({
      res: Resources.endpointSlices,
      name: "ext-1",
      update: {
        endpoints: [
          { addresses: ["10.100.0.8"], conditions: { ready: true } },
          { addresses: ["10.100.0.9"], nodeName: VIRTUAL_NODE },
        ],
      },
      updated: (c) => addrs(c) === "10.199.0.8",
      vandalise: { endpoints: [{ addresses: ["192.168.0.1"] }] },
      repaired: (c) => addrs(c) === "10.199.0.8",
    });
  });

  test("Ingress: class left to the peer's default", async () => {
    const rule = (host: string) => [
      {
        host,
        http: {
          paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }],
        },
      },
    ];
    await local.create(Resources.ingresses, {
      metadata: { name: "front", namespace: LNS },
      spec: { ingressClassName: "nginx", rules: rule("shop.example.com") },
    });
    const copy = await waitFor("the remote Ingress", () => remoteOf(Resources.ingresses, "front"));
    expect(copy.spec.ingressClassName).toBeUndefined();
    expect(copy.spec.rules[0].host).toBe("shop.example.com");
    expect(copy.spec.rules[0].http.paths[0].backend.service.name).toBe("web");
    await lifecycle({
      res: Resources.ingresses,
      name: "front",
      update: { spec: { rules: rule("v2.example.com") } },
      updated: (c) => c?.spec.rules[0].host === "v2.example.com",
      vandalise: { spec: { rules: rule("evil.example.com") } },
      repaired: (c) => c?.spec.rules[0].host === "v2.example.com",
    });
  });

  test("PersistentVolumeClaim: the negotiated storage class, local binding annotations dropped", async () => {
    await local.create(Resources.persistentVolumeClaims, {
      metadata: {
        name: "data",
        namespace: LNS,
        labels: { tier: "db" },
        annotations: { "volume.kubernetes.io/selected-node": VIRTUAL_NODE, note: "kept" },
      },
      spec: { storageClassName: "liqo", accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
    });
    const copy = await waitFor("the remote PersistentVolumeClaim", () =>
      remoteOf(Resources.persistentVolumeClaims, "data"),
    );
    expect(copy.spec.storageClassName).toBe("standard");
    expect(copy.spec.resources.requests.storage).toBe("1Gi");
    expect(copy.metadata.annotations.note).toBe("kept");
    expect(copy.metadata.annotations["volume.kubernetes.io/selected-node"]).toBeUndefined();
    // A claim's spec is immutable once created: updates and repairs are about its metadata.
    await lifecycle({
      res: Resources.persistentVolumeClaims,
      name: "data",
      update: { metadata: { labels: { tier: "db2" } } },
      updated: (c) => c?.metadata.labels.tier === "db2",
      vandalise: { metadata: { labels: { tier: "hacked" } } },
      repaired: (c) => c?.metadata.labels.tier === "db2",
    });
  });

  test("PersistentVolumeClaims of another class, or placed on another node, stay home", async () => {
    const claim = (name: string, cls: string, node: string) =>
      local.create(Resources.persistentVolumeClaims, {
        metadata: { name, namespace: LNS, annotations: { "volume.kubernetes.io/selected-node": node } },
        spec: { storageClassName: cls, accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
      });
    const claims = () => engine.reflectors().find((r) => r.kind === "PersistentVolumeClaim")!;
    const before = claims().handled;
    await claim("other-class", "local-path", VIRTUAL_NODE);
    await claim("other-node", "liqo", "rome-worker");
    await claim("marker", "liqo", VIRTUAL_NODE);
    await waitFor("the marker claim reflected", () => remoteOf(Resources.persistentVolumeClaims, "marker"));
    // All three handled (the reflector's count, its queue empty), so the two others were looked at and left home.
    await waitFor("the three claims handled", () => claims().handled >= before + 3 && claims().queueDepth === 0);
    expect(await remoteOf(Resources.persistentVolumeClaims, "other-class")).toBeUndefined();
    expect(await remoteOf(Resources.persistentVolumeClaims, "other-node")).toBeUndefined();
  });
});

describe("wrong inputs", () => {
  test("a claim reflected by a peering that negotiated no storage class gets a ReflectionFailed Event saying so", async () => {
    await namespace(local, "nosc");
    await namespace(remote, "nosc-rome");
    const engine = await startEngine(
      { localNamespace: "nosc", remoteNamespace: "nosc-rome" },
      { virtualNodeName: VIRTUAL_NODE },
      ["storage"],
    );
    try {
      const claim = await local.create(Resources.persistentVolumeClaims, {
        metadata: {
          name: "orphan",
          namespace: "nosc",
          annotations: { "volume.kubernetes.io/selected-node": VIRTUAL_NODE },
        },
        spec: { storageClassName: "liqo", accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
      });
      const event = await waitFor(
        "a ReflectionFailed Event on the claim",
        async () => {
          const evs = await local.list<Event>(Resources.events, {
            namespace: "nosc",
            fieldSelector: `involvedObject.uid=${claim.metadata.uid}`,
          });
          return evs.items.find((e) => e.reason === "ReflectionFailed");
        },
        { timeoutMs: 120_000 },
      );
      expect(event.message).toContain("storageClass");
      expect(await remote.find(Resources.persistentVolumeClaims, "orphan", "nosc-rome")).toBeUndefined();
    } finally {
      await engine.stop();
    }
  });

  test("a claim deleted and made again under its name while reflection was down: the copy of the earlier one is deleted, never reused, and a new copy follows", async () => {
    await namespace(local, "again");
    await namespace(remote, "again-rome");
    const pair = { localNamespace: "again", remoteNamespace: "again-rome" };
    const claim = () =>
      local.create(Resources.persistentVolumeClaims, {
        metadata: {
          name: "data",
          namespace: "again",
          annotations: { "volume.kubernetes.io/selected-node": VIRTUAL_NODE },
        },
        spec: { storageClassName: "liqo", accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
      });
    const copy = () => remote.find(Resources.persistentVolumeClaims, "data", "again-rome");
    const madeFor = (c: KubeObject | undefined) => c?.metadata.annotations?.["storage.liqo.io/origin-claim-uid"];
    const first = await claim();
    let engine = await startEngine(pair, context, ["storage"]);
    const earlier = await waitFor("the copy of the first claim", async () => {
      const c = await copy();
      return madeFor(c) === first.metadata.uid ? c : undefined;
    });
    // A pod in the peer still mounts it: the copy stays while being deleted (as pvc-protection holds it).
    await remote.mergePatch(Resources.persistentVolumeClaims, "data", "again-rome", {
      metadata: { finalizers: ["liqo.test/in-use"] },
    });
    await engine.stop();
    await local.delete(Resources.persistentVolumeClaims, "data", "again");
    await waitFor(
      "the first claim gone",
      async () => !(await local.find(Resources.persistentVolumeClaims, "data", "again")),
    );
    const second = await claim();
    engine = await startEngine(pair, context, ["storage"]);
    try {
      const held = await waitFor("the earlier copy being deleted", async () => {
        const c = await copy();
        return c?.metadata.deletionTimestamp ? c : undefined;
      });
      // Never adopted: still the earlier copy, naming the earlier claim.
      expect(held.metadata.uid).toBe(earlier.metadata.uid);
      expect(madeFor(held)).toBe(first.metadata.uid);
      await remote.mergePatch(Resources.persistentVolumeClaims, "data", "again-rome", {
        metadata: { finalizers: null },
      });
      const fresh = await waitFor("a new copy for the claim made again", async () => {
        const c = await copy();
        return c && c.metadata.uid !== earlier.metadata.uid && !c.metadata.deletionTimestamp ? c : undefined;
      });
      expect(madeFor(fresh)).toBe(second.metadata.uid);
    } finally {
      await engine.stop();
    }
  });
});
