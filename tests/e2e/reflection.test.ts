// The reflection engine on a real rig: rome (local) reflects into milan (remote) through the
// built-in WASM reflectors; drop-ins come and go; a faulty plugin is quarantined alone; an
// engine killed mid-flight and restarted converges with nothing duplicated or lost.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { createReflectionEngine, type ReflectionEngine } from "../../core/reflection/engine/engine.ts";
import { watchPluginDir } from "../../core/reflection/engine/dropins.ts";
import { builtinWasm } from "../../reflectors/index.ts";
import type { BuiltinName } from "../../reflectors/build.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { namespace } from "../support/namespace.ts";
import type { Event } from "../../core/kube/types.ts";

let rig: TestRig;
let local: KubeClient;
let remote: KubeClient;
const ids = { localClusterId: "rome-0000-id", remoteClusterId: "milan-0000-id" };
const root = join(import.meta.dir, "../..");
const pluginDir = mkdtempSync(join(tmpdir(), "dropins-"));
const engines: ReflectionEngine[] = [];

async function engineWith(builtins: BuiltinName[], context: Record<string, unknown> = {}) {
  const engine = createReflectionEngine({ local, remote, ...ids, context, workers: 4 });
  engines.push(engine);
  for (const b of builtins) await engine.addPlugin(await builtinWasm(b), { trust: "builtin", source: `builtin:${b}` });
  return engine;
}

async function stopEngine(engine: ReflectionEngine) {
  await engine.stop();
  engines.splice(engines.indexOf(engine), 1);
}

const remoteGet = (res: typeof Resources.configMaps, ns: string, name: string) => remote.find(res, name, ns);

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  local = rig.client("rome");
  remote = rig.client("milan");
}, 600_000);

afterAll(async () => {
  for (const e of [...engines]) await e.stop();
  await rig?.down();
  rmSync(pluginDir, { recursive: true, force: true });
});

describe("built-in reflectors", () => {
  let engine: ReflectionEngine;
  beforeAll(async () => {
    for (const [c, ns] of [
      [local, "shop"],
      [remote, "shop-rome"],
    ] as const)
      await namespace(c, ns);
    engine = await engineWith(["configmaps", "secrets", "services", "endpointslices", "ingresses"]);
    await engine.addNamespacePair({ localNamespace: "shop", remoteNamespace: "shop-rome" });
  }, 120_000);
  afterAll(() => stopEngine(engine));

  test("a ConfigMap is reflected, updated, skipped by annotation and deleted", async () => {
    await local.create(Resources.configMaps, {
      metadata: { name: "settings", namespace: "shop" },
      data: { color: "blue" },
    });
    const copy = await waitFor("the remote ConfigMap", () => remoteGet(Resources.configMaps, "shop-rome", "settings"));
    // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    expect((copy as any).data).toEqual({ color: "blue" });
    expect(copy.metadata.labels?.["liqo.io/managed-by"]).toBe("reflection");
    expect(copy.metadata.labels?.["liqo.io/origin-cluster-id"]).toBe(ids.localClusterId);

    await local.mergePatch(Resources.configMaps, "settings", "shop", { data: { color: "red" } });
    await waitFor(
      "the update to reach the remote copy",
      // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
      async () => ((await remoteGet(Resources.configMaps, "shop-rome", "settings")) as any)?.data?.color === "red",
    );

    await local.mergePatch(Resources.configMaps, "settings", "shop", {
      metadata: { annotations: { "liqo.io/skip-reflection": "true" } },
    });
    await waitFor(
      "the remote copy to be removed after skip-reflection",
      async () => !(await remoteGet(Resources.configMaps, "shop-rome", "settings")),
    );

    await local.mergePatch(Resources.configMaps, "settings", "shop", {
      metadata: { annotations: { "liqo.io/skip-reflection": null } },
    });
    await waitFor("the copy to come back once the annotation is gone", () =>
      remoteGet(Resources.configMaps, "shop-rome", "settings"),
    );
    await local.delete(Resources.configMaps, "settings", "shop");
    await waitFor(
      "the remote copy to be deleted with the local one",
      async () => !(await remoteGet(Resources.configMaps, "shop-rome", "settings")),
    );
  });

  test("a Secret is reflected verbatim, type included", async () => {
    await local.create(Resources.secrets, {
      metadata: { name: "db", namespace: "shop" },
      type: "kubernetes.io/basic-auth",
      stringData: { username: "u", password: "p" },
    });
    // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    const copy = (await waitFor("the remote Secret", () => remoteGet(Resources.secrets, "shop-rome", "db"))) as any;
    expect(copy.type).toBe("kubernetes.io/basic-auth");
    expect(Buffer.from(copy.data.password, "base64").toString()).toBe("p");
  });

  test("a Service loses its cluster IP and node ports; the remote cluster allocates its own", async () => {
    await local.create(Resources.services, {
      metadata: { name: "web", namespace: "shop" },
      spec: { type: "NodePort", selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080, nodePort: 31080 }] },
    });
    // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    const localSvc = await local.get<any>(Resources.services, "web", "shop");
    // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    const copy = (await waitFor("the remote Service", () => remoteGet(Resources.services, "shop-rome", "web"))) as any;
    expect(copy.spec.type).toBe("NodePort");
    expect(copy.spec.ports[0].port).toBe(80);
    expect(copy.spec.clusterIP).not.toBe(localSvc.spec.clusterIP);
    expect(copy.spec.ports[0].nodePort).not.toBe(31080);
  });

  test("liqo.io/force-remote-node-port keeps the node port", async () => {
    await local.create(Resources.services, {
      metadata: { name: "fixed", namespace: "shop", annotations: { "liqo.io/force-remote-node-port": "true" } },
      spec: { type: "NodePort", selector: { app: "x" }, ports: [{ port: 81, nodePort: 31081 }] },
    });
    const copy = (await waitFor(
      "the remote Service",
      () => remoteGet(Resources.services, "shop-rome", "fixed"),
      // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    )) as any;
    expect(copy.spec.ports[0].nodePort).toBe(31081);
  });

  test("an Ingress is reflected with its class left empty", async () => {
    await local.create(Resources.ingresses, {
      metadata: { name: "front", namespace: "shop" },
      spec: {
        ingressClassName: "nginx",
        rules: [
          {
            host: "shop.example.com",
            http: {
              paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }],
            },
          },
        ],
      },
    });
    const copy = (await waitFor(
      "the remote Ingress",
      () => remoteGet(Resources.ingresses, "shop-rome", "front"),
      // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    )) as any;
    expect(copy.spec.ingressClassName).toBeUndefined();
    expect(copy.spec.rules[0].host).toBe("shop.example.com");
  });

  test("a user's EndpointSlice is propagated with its endpoints", async () => {
    await local.create(Resources.endpointSlices, {
      metadata: { name: "ext-1", namespace: "shop", labels: { "kubernetes.io/service-name": "ext" } },
      addressType: "IPv4",
      ports: [{ name: "http", port: 80, protocol: "TCP" }],
      endpoints: [{ addresses: ["10.100.0.7"], conditions: { ready: true } }],
    } as KubeObject);
    const copy = (await waitFor(
      "the remote EndpointSlice",
      () => remoteGet(Resources.endpointSlices, "shop-rome", "ext-1"),
      // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    )) as any;
    // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    expect(copy.endpoints.map((e: any) => e.addresses[0])).toEqual(["10.100.0.7"]);
  });

  test("a remote object we did not create is a conflict: left untouched, reported as an Event", async () => {
    await remote.create(Resources.configMaps, {
      metadata: { name: "taken", namespace: "shop-rome" },
      data: { owner: "milan" },
    });
    const mine = await local.create(Resources.configMaps, {
      metadata: { name: "taken", namespace: "shop" },
      data: { owner: "rome" },
    });
    const event = await waitFor("a ReflectionConflict Event on the local ConfigMap", async () => {
      const evs = await local.list<Event>(Resources.events, {
        namespace: "shop",
        fieldSelector: `involvedObject.uid=${mine.metadata.uid}`,
      });
      return evs.items.find((e) => e.reason === "ReflectionConflict");
    });
    expect(event.type).toBe("Warning");
    // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
    expect(((await remoteGet(Resources.configMaps, "shop-rome", "taken")) as any).data).toEqual({ owner: "milan" });
    await local.delete(Resources.configMaps, "taken", "shop");
    // Deleting ours must not delete theirs.
    await waitFor("the reflector to handle the deletion", () => engine.reflectors().every((r) => r.queueDepth === 0));
    expect(await remoteGet(Resources.configMaps, "shop-rome", "taken")).toBeDefined();
  });

  test("a foreign object created at the same moment as ours is never overwritten, whatever the cache saw", async () => {
    const all = Array.from({ length: 10 }, (_, i) => `race-${i}`);
    // Where reflection wins the race the foreign create gets AlreadyExists: that name is ours, fairly.
    const foreignWon = await Promise.all(
      all.map(async (n) => {
        const [theirs] = await Promise.all([
          remote
            .create(Resources.configMaps, { metadata: { name: n, namespace: "shop-rome" }, data: { owner: "milan" } })
            .then(
              () => true,
              () => false,
            ),
          local.create(Resources.configMaps, { metadata: { name: n, namespace: "shop" }, data: { owner: "rome" } }),
        ]);
        return theirs;
      }),
    );
    const names = all.filter((_, i) => foreignWon[i]);
    expect(names.length).toBeGreaterThan(0);
    await waitFor("every racing object to be handled", async () => {
      const evs = await local.list<Event>(Resources.events, { namespace: "shop" });
      return names.every((n) =>
        evs.items.some((e) => e.reason === "ReflectionConflict" && e.involvedObject.name === n),
      );
    });
    for (const n of names)
      expect(((await remoteGet(Resources.configMaps, "shop-rome", n)) as { data?: unknown }).data).toEqual({
        owner: "milan",
      });
  });

  test("removing the namespace pair stops reflection for it", async () => {
    await engine.removeNamespacePair("shop");
    await local.create(Resources.configMaps, { metadata: { name: "after-unpair", namespace: "shop" } });
    await engine.addNamespacePair({ localNamespace: "shop", remoteNamespace: "shop-rome" });
    // Re-adding the pair reconciles what happened meanwhile: level-triggered, not event-triggered.
    await waitFor("the object created while unpaired to be reflected", () =>
      remoteGet(Resources.configMaps, "shop-rome", "after-unpair"),
    );
  });
});

describe("drop-in plugins and isolation", () => {
  test("a drop-in .wasm is loaded at run time, reflects NetworkPolicies with CIDRs translated, and is unloaded when removed", async () => {
    for (const [c, ns] of [
      [local, "net"],
      [remote, "net-rome"],
    ] as const)
      await namespace(c, ns);
    const engine = createReflectionEngine({
      local,
      remote,
      ...ids,
      translateIp: (ip) => ip.replace(/^10\.100\./, "10.199."),
    });
    engines.push(engine);
    await engine.addNamespacePair({ localNamespace: "net", remoteNamespace: "net-rome" });
    const dropins = watchPluginDir(engine, pluginDir, { intervalMs: 500 });
    try {
      copyFileSync(
        join(root, "plugins/examples/networkpolicy/networkpolicy.wasm"),
        join(pluginDir, "networkpolicy.wasm"),
      );
      await waitFor("the drop-in to load", () =>
        engine.plugins().find((p) => p.name === "networkpolicies" && p.state === "ready"),
      );
      await local.create(Resources.networkPolicies, {
        metadata: { name: "allow-db", namespace: "net" },
        spec: { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: "10.100.3.0/24" } }] }] },
      } as KubeObject);
      const copy = (await waitFor(
        "the remote NetworkPolicy",
        () => remoteGet(Resources.networkPolicies, "net-rome", "allow-db"),
        // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
      )) as any;
      expect(copy.spec.ingress[0].from[0].ipBlock.cidr).toBe("10.199.3.0/24");

      unlinkSync(join(pluginDir, "networkpolicy.wasm"));
      await waitFor("the drop-in to unload", () => !engine.plugins().some((p) => p.name === "networkpolicies"));
      await local.create(Resources.networkPolicies, {
        metadata: { name: "later", namespace: "net" },
        spec: { podSelector: {} },
      } as KubeObject);
      // Nothing reflects NetworkPolicies any more: prove it by reflecting something else after it.
      await engine.addPlugin(await builtinWasm("configmaps"), { trust: "builtin", source: "builtin:configmaps" });
      await local.create(Resources.configMaps, { metadata: { name: "marker", namespace: "net" } });
      await waitFor("a later object of another kind to be reflected", () =>
        remoteGet(Resources.configMaps, "net-rome", "marker"),
      );
      expect(await remoteGet(Resources.networkPolicies, "net-rome", "later")).toBeUndefined();
    } finally {
      dropins.stop();
      await stopEngine(engine);
    }
  });

  test("a plugin that traps is quarantined with its reason, and the other reflectors go on", async () => {
    for (const [c, ns] of [
      [local, "faulty"],
      [remote, "faulty-rome"],
    ] as const)
      await namespace(c, ns);
    const engine = await engineWith(["secrets"], { mode: "trap" });
    await engine.addPlugin(await Bun.file(join(root, "plugins/sdk/test-plugins/misbehave.wasm")).bytes(), {
      trust: "dropin",
      source: "test:misbehave",
    });
    await engine.addNamespacePair({ localNamespace: "faulty", remoteNamespace: "faulty-rome" });
    await local.create(Resources.configMaps, { metadata: { name: "boom", namespace: "faulty" } });
    const bad = await waitFor("the plugin to be quarantined", () =>
      engine.plugins().find((p) => p.name === "misbehave" && p.state === "quarantined"),
    );
    expect(bad.quarantineReason).toMatch(/trap/i);
    // The Event lands on whichever local ConfigMap was handled first (kube-root-ca.crt or ours);
    // every local object of a quarantined plugin gets one, even when the call that tripped had none.
    const event = await waitFor("a quarantine Event on a local ConfigMap", async () => {
      const evs = await local.list<Event>(Resources.events, { namespace: "faulty" });
      return evs.items.find((e) => e.reason === "ReflectionPluginQuarantined" && e.involvedObject.kind === "ConfigMap");
    });
    expect(event.message).toContain("misbehave");
    // Ours in particular, although it may have been created after the quarantine.
    await waitFor("a quarantine Event on the ConfigMap the test created", async () => {
      const evs = await local.list<Event>(Resources.events, { namespace: "faulty" });
      return evs.items.find((e) => e.reason === "ReflectionPluginQuarantined" && e.involvedObject.name === "boom");
    });
    const metrics = await engine.registry.expose();
    expect(metrics).toContain('liqo_reflection_plugin_quarantined{plugin="misbehave"} 1');
    await local.create(Resources.secrets, {
      metadata: { name: "still-works", namespace: "faulty" },
      stringData: { a: "b" },
    });
    await waitFor("secrets to keep reflecting", () => remoteGet(Resources.secrets, "faulty-rome", "still-works"));
    expect(await remoteGet(Resources.configMaps, "faulty-rome", "boom")).toBeUndefined();
    await stopEngine(engine);
  });

  test("a second plugin for a kind already reflected is refused with the owner's name", async () => {
    const engine = await engineWith(["configmaps"]);
    const err = await engine
      .addPlugin(await Bun.file(join(root, "plugins/sdk/test-plugins/misbehave.wasm")).bytes(), {
        trust: "dropin",
        source: "test:misbehave",
      })
      .catch((e) => e);
    expect(err.message).toContain("already reflected by configmaps");
    await stopEngine(engine);
  });
});

test("an engine stopped mid-flight and restarted converges: nothing duplicated, nothing lost", async () => {
  for (const [c, ns] of [
    [local, "bulk"],
    [remote, "bulk-rome"],
  ] as const)
    await namespace(c, ns);
  const names = Array.from({ length: 300 }, (_, i) => `item-${i}`);
  let engine = await engineWith(["configmaps"]);
  await engine.addNamespacePair({ localNamespace: "bulk", remoteNamespace: "bulk-rome" });
  for (let i = 0; i < names.length; i += 20) {
    await Promise.all(
      names
        .slice(i, i + 20)
        .map((n) => local.create(Resources.configMaps, { metadata: { name: n, namespace: "bulk" }, data: { v: "1" } })),
    );
  }
  // Kill it while it is still working through the queue.
  await waitFor(
    "some objects reflected",
    async () =>
      (await remote.list(Resources.configMaps, { namespace: "bulk-rome", labelSelector: "liqo.io/managed-by" })).items
        .length > 0,
  );
  await stopEngine(engine);
  // Changes while no engine runs: deletions and updates.
  const removed = names.filter((_, i) => i % 3 === 0);
  await Promise.all(removed.map((n) => local.delete(Resources.configMaps, n, "bulk")));
  const changed = names.filter((_, i) => i % 3 === 1);
  await Promise.all(changed.map((n) => local.mergePatch(Resources.configMaps, n, "bulk", { data: { v: "2" } })));

  engine = await engineWith(["configmaps"]);
  await engine.addNamespacePair({ localNamespace: "bulk", remoteNamespace: "bulk-rome" });
  const expected = new Map(names.filter((_, i) => i % 3 !== 0).map((n, _) => [n, changed.includes(n) ? "2" : "1"]));
  await waitFor(
    "the remote namespace to match the local one exactly",
    async () => {
      const got =
        // biome-ignore lint/suspicious/noExplicitAny: reflected objects of every kind read back from the clusters, asserted on a few fields
        (await remote.list<any>(Resources.configMaps, { namespace: "bulk-rome", labelSelector: "liqo.io/managed-by" }))
          .items;
      return got.length === expected.size && got.every((cm) => expected.get(cm.metadata.name) === cm.data?.v);
    },
    { timeoutMs: 120_000 },
  );
  await stopEngine(engine);
}, 300_000);
