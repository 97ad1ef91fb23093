// Reflection policies per namespace and per label selector, and EndpointSlices following their
// Service, on a real rig: rome (local) reflects namespaces pol-a, pol-b and pol-c into
// <ns>-rome on milan, through the engine wired to the policy as a virtual kubelet wires it
// (policyEngineHooks, requeueAll on change) and the policy source the controller manager runs
// (watchReflectionPolicy: the ConfigMap liqo/liqo-reflection-policy and the namespaces'
// annotation liqo.io/reflection-policy), and the one the standalone `liqo virtual-kubelet` runs
// (a fixed base from --reflection-policy, the same namespace annotations, no ConfigMap). The
// cluster policy's own tests, set at install and shown by liqoctl status, are in
// offloaded-api-access.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { createReflectionEngine, type ReflectionEngine } from "../../core/reflection/engine/engine.ts";
import { parseReflectionPolicy } from "../../core/reflection/policy.ts";
import {
  policyEngineHooks,
  POLICY_CONFIGMAP,
  watchReflectionPolicy,
  type ReflectionPolicySource,
} from "../../core/reflection/policy-watch.ts";
import { builtinWasm } from "../../reflectors/index.ts";
import type { BuiltinName } from "../../reflectors/build.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { namespace } from "../support/namespace.ts";

let rig: TestRig;
let local: KubeClient;
let remote: KubeClient;
let engine: ReflectionEngine;
let policy: ReflectionPolicySource;
const ids = { localClusterId: "rome-pol-id", remoteClusterId: "milan-pol-id" };
const NAMESPACES = ["pol-a", "pol-b", "pol-c"];
const ANNOTATION = "liqo.io/reflection-policy";
const builtins: BuiltinName[] = ["configmaps", "secrets", "services", "endpointslices"];
const WAIT = { timeoutMs: 120_000, intervalMs: 200 };

const remoteOf = (res: ResourceRef, ns: string, name: string): Promise<KubeObject | undefined> =>
  remote.find(res, name, `${ns}-rome`);
const reflected = (res: ResourceRef, ns: string, name: string) =>
  waitFor(`${res.kind} ${ns}/${name} reflected to milan`, () => remoteOf(res, ns, name), WAIT);
const removed = (res: ResourceRef, ns: string, name: string) =>
  waitFor(
    `the copy of ${res.kind} ${ns}/${name} removed from milan`,
    async () => !(await remoteOf(res, ns, name)),
    WAIT,
  );

const secret = (ns: string, name: string, labels: Record<string, string> = {}) =>
  local.create(Resources.secrets, { metadata: { name, namespace: ns, labels }, stringData: { k: name } } as KubeObject);
const configMap = (ns: string, name: string, annotations: Record<string, string> = {}) =>
  local.create(Resources.configMaps, { metadata: { name, namespace: ns, annotations }, data: { k: name } });
const annotateNamespace = (ns: string, value: string | null) =>
  local.mergePatch(Resources.namespaces, ns, undefined, { metadata: { annotations: { [ANNOTATION]: value } } });
const clusterPolicy = (data: Record<string, string | null>) =>
  local.mergePatch(Resources.configMaps, POLICY_CONFIGMAP, "liqo", { data });

/** A selector-less Service and one EndpointSlice of it, as a user maintains them for an external backend. */
async function serviceWithSlice(ns: string, name: string) {
  await local.create(Resources.services, {
    metadata: { name, namespace: ns },
    spec: { ports: [{ name: "http", port: 80, protocol: "TCP" }] },
  } as KubeObject);
  await local.create(Resources.endpointSlices, {
    metadata: { name: `${name}-1`, namespace: ns, labels: { "kubernetes.io/service-name": name } },
    addressType: "IPv4",
    ports: [{ name: "http", port: 80, protocol: "TCP" }],
    endpoints: [{ addresses: ["10.100.0.7"], conditions: { ready: true } }],
  } as KubeObject);
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  local = rig.client("rome");
  remote = rig.client("milan");
  await namespace(local, "liqo");
  await local.create(Resources.configMaps, { metadata: { name: POLICY_CONFIGMAP, namespace: "liqo" }, data: {} });
  for (const ns of NAMESPACES) {
    await namespace(local, ns);
    await namespace(remote, `${ns}-rome`);
  }
  policy = watchReflectionPolicy({ client: local, namespace: "liqo" });
  await policy.start();
  engine = createReflectionEngine({ local, remote, ...ids, workers: 2, ...policyEngineHooks(policy) });
  policy.onChange(() => engine.requeueAll());
  for (const b of builtins) await engine.addPlugin(await builtinWasm(b), { trust: "builtin", source: `builtin:${b}` });
  for (const ns of NAMESPACES) await engine.addNamespacePair({ localNamespace: ns, remoteNamespace: `${ns}-rome` });
}, 600_000);

afterAll(async () => {
  await engine?.stop();
  await policy?.stop();
  await rig?.down();
});

describe("a namespace overrides the cluster's policy with the annotation liqo.io/reflection-policy", () => {
  test("tightening (secrets=none while the cluster says all): that namespace's copies are removed, other namespaces and kinds untouched", async () => {
    for (const ns of ["pol-a", "pol-b"]) {
      await secret(ns, "token");
      await configMap(ns, "settings");
    }
    const before = await reflected(Resources.secrets, "pol-b", "token");
    await reflected(Resources.secrets, "pol-a", "token");
    await reflected(Resources.configMaps, "pol-a", "settings");

    await annotateNamespace("pol-a", "secrets=none");
    await removed(Resources.secrets, "pol-a", "token");
    // Reflection in pol-b goes on (a Secret created now arrives) and its earlier copy is the same object.
    await secret("pol-b", "later");
    await reflected(Resources.secrets, "pol-b", "later");
    expect((await remoteOf(Resources.secrets, "pol-b", "token"))?.metadata.uid).toBe(before.metadata.uid);
    // Kinds the annotation does not name follow the cluster.
    expect(await remoteOf(Resources.configMaps, "pol-a", "settings")).toBeDefined();
    // Dropping the annotation brings it back.
    await annotateNamespace("pol-a", null);
    await reflected(Resources.secrets, "pol-a", "token");
  });

  test("loosening (configmaps=all while the cluster says opt-in): that namespace keeps everything, the others only what opts in", async () => {
    await configMap("pol-b", "opted", { "liqo.io/allow-reflection": "true" });
    await reflected(Resources.configMaps, "pol-b", "opted");
    await clusterPolicy({ configmaps: "opt-in" });
    await removed(Resources.configMaps, "pol-a", "settings");
    await removed(Resources.configMaps, "pol-b", "settings");

    await annotateNamespace("pol-b", "configmaps=all");
    await reflected(Resources.configMaps, "pol-b", "settings");
    await secret("pol-a", "probe"); // pol-a was looked at again too: still opt-in for ConfigMaps there
    await reflected(Resources.secrets, "pol-a", "probe");
    expect(await remoteOf(Resources.configMaps, "pol-a", "settings")).toBeUndefined();
    expect(await remoteOf(Resources.configMaps, "pol-b", "opted")).toBeDefined();

    await clusterPolicy({ configmaps: null });
    await annotateNamespace("pol-b", null);
    await reflected(Resources.configMaps, "pol-a", "settings");
  });
});

describe("selector(...): only objects whose labels match", () => {
  test("an object relabelled into the selector is reflected, relabelled out its copy is removed", async () => {
    await secret("pol-c", "web-creds", { app: "web" });
    await secret("pol-c", "db-creds", { app: "db" });
    await reflected(Resources.secrets, "pol-c", "db-creds");
    await annotateNamespace("pol-c", "secrets=selector(app in (web,api))");
    await removed(Resources.secrets, "pol-c", "db-creds");
    expect(await remoteOf(Resources.secrets, "pol-c", "web-creds")).toBeDefined();

    await local.mergePatch(Resources.secrets, "db-creds", "pol-c", { metadata: { labels: { app: "api" } } });
    await reflected(Resources.secrets, "pol-c", "db-creds");
    await local.mergePatch(Resources.secrets, "web-creds", "pol-c", { metadata: { labels: { app: null } } });
    await removed(Resources.secrets, "pol-c", "web-creds");
  });

  test("in the cluster's ConfigMap too", async () => {
    await configMap("pol-c", "labelled-later");
    await reflected(Resources.configMaps, "pol-c", "labelled-later");
    await clusterPolicy({ configmaps: "selector(reflect=yes)" });
    await removed(Resources.configMaps, "pol-c", "labelled-later");
    await local.mergePatch(Resources.configMaps, "labelled-later", "pol-c", {
      metadata: { labels: { reflect: "yes" } },
    });
    await reflected(Resources.configMaps, "pol-c", "labelled-later");
    await clusterPolicy({ configmaps: null });
  });
});

describe("EndpointSlices follow their Service", () => {
  test("a Service the namespace's policy leaves out: its slices are removed; admitted again, they come back", async () => {
    await serviceWithSlice("pol-a", "api");
    await reflected(Resources.services, "pol-a", "api");
    await reflected(Resources.endpointSlices, "pol-a", "api-1");

    await annotateNamespace("pol-a", "services=opt-in");
    await removed(Resources.services, "pol-a", "api");
    await removed(Resources.endpointSlices, "pol-a", "api-1");

    // Only the Service changes: its slices are looked at again with it.
    await local.mergePatch(Resources.services, "api", "pol-a", {
      metadata: { annotations: { "liqo.io/allow-reflection": "true" } },
    });
    await reflected(Resources.services, "pol-a", "api");
    await reflected(Resources.endpointSlices, "pol-a", "api-1");
    await annotateNamespace("pol-a", null);
  });

  test("a Service annotated liqo.io/skip-reflection, or deleted: its slices go too", async () => {
    await serviceWithSlice("pol-b", "cache");
    await reflected(Resources.endpointSlices, "pol-b", "cache-1");
    await local.mergePatch(Resources.services, "cache", "pol-b", {
      metadata: { annotations: { "liqo.io/skip-reflection": "true" } },
    });
    await removed(Resources.endpointSlices, "pol-b", "cache-1");
    await local.mergePatch(Resources.services, "cache", "pol-b", {
      metadata: { annotations: { "liqo.io/skip-reflection": null } },
    });
    await reflected(Resources.endpointSlices, "pol-b", "cache-1");

    await local.delete(Resources.services, "cache", "pol-b");
    await removed(Resources.endpointSlices, "pol-b", "cache-1");
  });
});

describe("bad input in the annotation: a Warning Event on the namespace, nothing removed", () => {
  const warnings = async (ns: string) =>
    (
      await local.list<KubeObject & { reason?: string; message?: string; type?: string }>(Resources.events, {
        namespace: "default",
        fieldSelector: `involvedObject.kind=Namespace,involvedObject.name=${ns}`,
      })
    ).items.filter((e) => e.reason === "InvalidReflectionPolicy" && e.type === "Warning");

  test("an unknown kind: the namespace keeps its previous override", async () => {
    await annotateNamespace("pol-b", "secrets=none");
    await removed(Resources.secrets, "pol-b", "later");
    await removed(Resources.secrets, "pol-b", "token");
    await annotateNamespace("pol-b", "deployments=none,secrets=all");
    const [event] = await waitFor(
      "the InvalidReflectionPolicy Event on namespace pol-b",
      async () => {
        const w = await warnings("pol-b");
        return w.length ? w : undefined;
      },
      WAIT,
    );
    expect(event!.message).toContain(
      'annotation liqo.io/reflection-policy=deployments=none,secrets=all: unknown kind "deployments"',
    );
    expect(event!.message).toContain("this namespace keeps its previous override secrets=none");
    expect(policy.overrides().get("pol-b")).toEqual({ secrets: "none" });
    // Still secrets=none there (a Secret created now is not reflected), the other kinds untouched.
    await configMap("pol-b", "after-typo");
    await reflected(Resources.configMaps, "pol-b", "after-typo");
    expect(await remoteOf(Resources.secrets, "pol-b", "token")).toBeUndefined();
    await annotateNamespace("pol-b", null);
    await reflected(Resources.secrets, "pol-b", "token");
    // The override gone, liqo's record of it goes too.
    await waitFor(
      "pol-b without liqo's in-force annotation",
      async () =>
        (await local.get(Resources.namespaces, "pol-b")).metadata.annotations?.[
          "liqo.io/reflection-policy-in-force"
        ] === undefined,
      WAIT,
    );
  });

  test("a malformed selector: the namespace keeps its override, its copies stay", async () => {
    // pol-c reflects Secrets labelled app in (web,api): db-creds (app=api) is there.
    await annotateNamespace("pol-c", "secrets=selector(app in ())");
    const [event] = await waitFor(
      "the InvalidReflectionPolicy Event on namespace pol-c",
      async () => {
        const w = await warnings("pol-c");
        return w.length ? w : undefined;
      },
      WAIT,
    );
    expect(event!.message).toContain('secrets=selector(app in ()): "app in ()" lists no values');
    expect(policy.overrides().get("pol-c")).toEqual({ secrets: "selector(app in (web,api))" });
    await secret("pol-c", "after-typo", { app: "web" });
    await reflected(Resources.secrets, "pol-c", "after-typo");
    expect(await remoteOf(Resources.secrets, "pol-c", "db-creds")).toBeDefined();
  });

  test("a restart while the annotation is refused: the override in force, recorded on the namespace, is kept rather than the cluster's policy", async () => {
    const ns = await local.get(Resources.namespaces, "pol-c");
    expect(ns.metadata.annotations?.["liqo.io/reflection-policy-in-force"]).toBe("secrets=selector(app in (web,api))");
    // A controller manager starting now has never seen pol-c's good annotation.
    const fresh = watchReflectionPolicy({ client: local, namespace: "liqo" });
    await fresh.start();
    try {
      expect(fresh.overrides().get("pol-c")).toEqual({ secrets: "selector(app in (web,api))" });
      const labelled = (app: string) => ({ metadata: { name: `s-${app}`, namespace: "pol-c", labels: { app } } });
      expect([fresh.admits("Secret", labelled("api")), fresh.admits("Secret", labelled("other"))]).toEqual([
        true,
        false,
      ]);
    } finally {
      await fresh.stop();
    }
  });
});

describe("a fixed base (the standalone liqo virtual-kubelet's --reflection-policy): namespace annotations followed, the ConfigMap never read", () => {
  const base = parseReflectionPolicy("configmaps=none", "--reflection-policy configmaps=none");
  let vkEngine: ReflectionEngine | undefined;
  let vkPolicy: ReflectionPolicySource | undefined;
  afterAll(async () => {
    await vkEngine?.stop();
    await vkPolicy?.stop();
    await clusterPolicy({ secrets: null });
  });

  test("configmaps=none as base, configmaps=all on namespace pol-vk: followed; a malformed annotation keeps it with a Warning Event of liqo-virtual-kubelet; the ConfigMap's change does nothing", async () => {
    await namespace(local, "pol-vk");
    await namespace(remote, "pol-vk-rome");
    await configMap("pol-vk", "settings");
    await secret("pol-vk", "token");
    // What the role's policy source asks of the API server: namespaces only.
    const requests: string[] = [];
    const spied = new Proxy(local, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const res = args[0] as Partial<ResourceRef> | undefined;
          if (res?.plural) requests.push(`${String(key)} ${res.plural}`);
          return value.apply(target, args);
        };
      },
    });
    vkPolicy = watchReflectionPolicy({ client: spied, base });
    await vkPolicy.start();
    vkEngine = createReflectionEngine({
      local,
      remote,
      localClusterId: "rome-vk-id",
      remoteClusterId: "milan-vk-id",
      workers: 2,
      ...policyEngineHooks(vkPolicy),
    });
    vkPolicy.onChange(() => vkEngine!.requeueAll());
    for (const b of ["configmaps", "secrets"] as const)
      await vkEngine.addPlugin(await builtinWasm(b), { trust: "builtin", source: `builtin:${b}` });
    await vkEngine.addNamespacePair({ localNamespace: "pol-vk", remoteNamespace: "pol-vk-rome" });
    await reflected(Resources.secrets, "pol-vk", "token");
    expect(await remoteOf(Resources.configMaps, "pol-vk", "settings")).toBeUndefined();

    await annotateNamespace("pol-vk", "configmaps=all");
    await reflected(Resources.configMaps, "pol-vk", "settings");
    expect(vkPolicy.overrides().get("pol-vk")).toEqual({ configmaps: "all" });

    await annotateNamespace("pol-vk", "configmaps=selector(app in ())");
    const event = await waitFor(
      "the InvalidReflectionPolicy Event of liqo-virtual-kubelet on namespace pol-vk",
      async () =>
        (
          await local.list<
            KubeObject & { reason?: string; type?: string; message?: string; source?: { component?: string } }
          >(Resources.events, {
            namespace: "default",
            fieldSelector: "involvedObject.kind=Namespace,involvedObject.name=pol-vk",
          })
        ).items.find(
          (e) =>
            e.reason === "InvalidReflectionPolicy" &&
            e.type === "Warning" &&
            e.source?.component === "liqo-virtual-kubelet",
        ),
      WAIT,
    );
    expect(event.message).toContain("this namespace keeps its previous override configmaps=all");
    expect(vkPolicy.overrides().get("pol-vk")).toEqual({ configmaps: "all" });
    await configMap("pol-vk", "after-typo");
    await reflected(Resources.configMaps, "pol-vk", "after-typo");
    expect(await remoteOf(Resources.configMaps, "pol-vk", "settings")).toBeDefined();

    // The cluster's ConfigMap says secrets=none (the controller manager's source follows it): not this one.
    await clusterPolicy({ secrets: "none" });
    await waitFor(
      "the controller manager's policy to say secrets=none",
      () => policy.current().secrets === "none",
      WAIT,
    );
    await secret("pol-vk", "later");
    await reflected(Resources.secrets, "pol-vk", "later");
    expect(await remoteOf(Resources.secrets, "pol-vk", "token")).toBeDefined();
    expect(vkPolicy.current()).toEqual(base);
    // Without the annotation, pol-vk follows the base again: its ConfigMaps' copies go.
    await annotateNamespace("pol-vk", null);
    await removed(Resources.configMaps, "pol-vk", "settings");
    await removed(Resources.configMaps, "pol-vk", "after-typo");
    expect(requests.filter((r) => !r.endsWith(" namespaces") && !r.startsWith("create events"))).toEqual([]);
    expect(requests).toContain("watch namespaces");
  });
});
