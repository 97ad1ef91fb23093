// The decision memo: a call equal in everything the plugin sees to an earlier one is answered
// without running the plugin; anything the plugin reads that changed (a read field, the target
// state, the context, a looked-up object, an IP translation) runs it again. One memo (memo.ts)
// for both wires: built-ins run live by default; `live: false` takes the JSON wire, which drop-ins
// in workers use.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ensureBuilt } from "../../reflectors/build.ts";
import { builtinWasm, loadBuiltin } from "../../reflectors/index.ts";
import { configMap, ctx, pod, remotePod, service, serviceAccount } from "../../reflectors/samples.ts";
import type { CacheLookup, KubeObject } from "./abi.ts";
import { type ReflectorPlugin, loadPlugin } from "./host.ts";
import { LABEL_MANAGED_BY, LABEL_ORIGIN, MANAGED_BY_REFLECTION } from "./abi.ts";
import type { PodStatus, ServiceSpec } from "../kube/types.ts";

await ensureBuilt(["configmaps", "services", "pods"]);

const version = (obj: KubeObject, rv: string, extra: Partial<KubeObject> = {}): KubeObject => ({
  ...obj,
  ...extra,
  metadata: { ...obj.metadata, resourceVersion: rv, ...extra.metadata },
});

describe("decision memo", () => {
  let services: ReflectorPlugin;
  beforeAll(async () => {
    services = await loadBuiltin("services", { memoEntries: 8192 });
  });
  afterAll(() => services.close());

  test("an update outside the declared fields is answered from the memo, with this version's content", () => {
    const before = services.stats();
    const first = services.forwardSync(version(service, "1"), null, ctx);
    // services declares ["/spec/ports"]: a status or selector change is invisible to it.
    const changed = version(service, "2", { spec: { ...(service.spec as object), selector: { app: "other" } } });
    const second = services.forwardSync(changed, null, ctx);
    const after = services.stats();
    expect(after.calls - before.calls).toBe(1);
    expect(after.memoHits - before.memoHits).toBe(1);
    expect(first.decision).toBe("apply");
    expect(second.decision).toBe("apply");
    // The memoized edits are applied to the new object, not a copy of the old answer.
    expect(second.decision === "apply" && (second.object.spec as ServiceSpec).selector).toEqual({ app: "other" });
    expect(second.decision === "apply" && (second.object.spec as ServiceSpec).clusterIP).toBeUndefined();
  });

  test("a change to a declared field runs the plugin", () => {
    const before = services.stats();
    const ports = [{ name: "http", port: 8080, nodePort: 30111 }];
    const d = services.forwardSync(version(service, "3", { spec: { ...(service.spec as object), ports } }), null, ctx);
    expect(services.stats().calls - before.calls).toBe(1);
    expect(d.decision === "apply" && (d.object.spec as ServiceSpec).ports).toEqual([{ name: "http", port: 8080 }]);
  });

  test("a change of target state or context runs the plugin", () => {
    const obj = version(service, "4");
    services.forwardSync(obj, null, ctx);
    const before = services.stats();
    const foreign: KubeObject = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: ctx.remoteNamespace },
    };
    expect(services.forwardSync(obj, foreign, ctx).decision).toBe("skip");
    const owned: KubeObject = {
      ...foreign,
      metadata: {
        ...foreign.metadata,
        labels: { [LABEL_MANAGED_BY]: MANAGED_BY_REFLECTION, [LABEL_ORIGIN]: ctx.localClusterId },
      },
    };
    expect(services.forwardSync(obj, owned, ctx).decision).toBe("apply");
    const d = services.forwardSync(obj, null, { ...ctx, remoteNamespace: "elsewhere" });
    expect(d.decision === "apply" && d.object.metadata?.namespace).toBe("elsewhere");
    expect(services.stats().calls - before.calls).toBe(3);
    expect(services.stats().memoHits - before.memoHits).toBe(0);
  });

  test("the skip annotation is always seen (metadata is always sent)", () => {
    services.forwardSync(version(service, "5"), null, ctx);
    const skipped = version(service, "6", {
      metadata: { ...service.metadata, annotations: { "liqo.io/skip-reflection": "true" } },
    });
    expect(services.forwardSync(skipped, null, ctx).decision).toBe("delete");
  });

  test("memoEntries: 0 runs the plugin every time", async () => {
    const p = await loadBuiltin("configmaps", { memoEntries: 0 });
    try {
      for (let i = 0; i < 3; i++) p.forwardSync(configMap, null, ctx);
      expect(p.stats().calls).toBe(3);
      expect(p.stats().memoHits).toBe(0);
    } finally {
      await p.close();
    }
  });

  test("by default a built-in runs every call (no memo), a drop-in remembers", async () => {
    const builtin = await loadBuiltin("configmaps");
    const dropin = await loadPlugin(await builtinWasm("configmaps"), { trust: "dropin" });
    try {
      for (const p of [builtin, dropin]) for (let i = 0; i < 3; i++) await p.forward(configMap, null, ctx);
      expect([builtin.stats().calls, builtin.stats().memoHits]).toEqual([3, 0]);
      expect([dropin.stats().calls, dropin.stats().memoHits]).toEqual([1, 2]);
    } finally {
      await builtin.close();
      await dropin.close();
    }
  });

  test("a closed plugin answers nothing from the memo", async () => {
    const p = await loadBuiltin("configmaps", { memoEntries: 8192 });
    p.forwardSync(configMap, null, ctx);
    await p.close();
    expect(() => p.forwardSync(configMap, null, ctx)).toThrow(/closed/);
  });
});

describe("decision memo: host-function answers are inputs too", () => {
  test("a look-up that finds something else (or a newer version) runs the plugin again", async () => {
    let sa: KubeObject | null = null;
    const lookup: CacheLookup = (req) => (req.kind === "ServiceAccount" && req.name === "builder" ? sa : null);
    const p = await loadBuiltin("pods", { lookup, memoEntries: 8192 });
    try {
      const local = version(pod, "10");
      expect(p.forwardSync(local, null, ctx).decision).toBe("skip"); // no token secret yet
      sa = serviceAccount;
      expect(p.forwardSync(local, null, ctx).decision).toBe("apply");
      const calls = p.stats().calls;
      expect(p.forwardSync(local, null, ctx).decision).toBe("apply");
      expect(p.stats().calls).toBe(calls); // nothing changed: memo
      sa = {
        ...serviceAccount,
        metadata: { ...serviceAccount.metadata, resourceVersion: "5121" },
        secrets: [{ name: "builder-token-new" }],
      };
      const d = p.forwardSync(local, null, ctx);
      expect(p.stats().calls).toBe(calls + 1);
      expect(JSON.stringify(d)).toContain("builder-token-new");
    } finally {
      await p.close();
    }
  });

  test("a remapped IP translation runs the plugin again", async () => {
    let prefix = "10.123.";
    const p = await loadBuiltin("pods", { translateIp: (ip) => ip.replace(/^10\.250\./, prefix), memoEntries: 8192 });
    try {
      const remote = version(remotePod, "20");
      const a = p.backwardSync(remote, pod, { ...ctx, remoteRestarts: 0 });
      expect(a.decision === "apply" && (a.object.status as PodStatus).podIP).toBe("10.123.3.4");
      const calls = p.stats().calls;
      p.backwardSync(remote, pod, { ...ctx, remoteRestarts: 0 });
      expect(p.stats().calls).toBe(calls);
      prefix = "10.124.";
      const b = p.backwardSync(remote, pod, { ...ctx, remoteRestarts: 0 });
      expect(p.stats().calls).toBe(calls + 1);
      expect(b.decision === "apply" && (b.object.status as PodStatus).podIP).toBe("10.124.3.4");
    } finally {
      await p.close();
    }
  });
  test("objects of one name in two namespaces, and a version going back, are told apart (JSON wire)", async () => {
    const services = await loadBuiltin("services", { live: false, memoEntries: 8192 });
    // The memo is keyed by name (memo.ts) and compares the whole payload: a same-named object
    // elsewhere must run the plugin, and a version whose read content returns to an earlier
    // one's is not confused with the version it replaced.
    const a = version(service, "30");
    const b = version(service, "31", { metadata: { namespace: "other" } });
    const before = services.stats();
    const da = services.forwardSync(a, null, ctx);
    const db = services.forwardSync(b, null, ctx);
    expect(services.stats().calls - before.calls).toBe(2);
    expect(da.decision).toBe("apply");
    expect(db.decision).toBe("apply");
    const forced = version(service, "32", { metadata: { annotations: { "liqo.io/force-remote-node-port": "true" } } });
    const df = services.forwardSync(forced, null, ctx);
    expect(df.decision === "apply" && (df.object.spec as ServiceSpec).ports![0]!.nodePort).toBe(30080);
    const back = services.forwardSync(version(service, "33"), null, ctx);
    expect(back.decision === "apply" && (back.object.spec as ServiceSpec).ports![0]!.nodePort).toBeUndefined();
    expect(services.stats().calls - before.calls).toBe(4);
    await services.close();
  });

  test("a full memo keeps answering: old generations are dropped whole, entries in use survive (JSON wire)", async () => {
    const p = await loadBuiltin("configmaps", { memoEntries: 8, live: false });
    try {
      const hot = version(configMap, "1");
      p.forwardSync(hot, null, ctx);
      for (let i = 0; i < 50; i++) {
        p.forwardSync(version(configMap, `x${i}`, { metadata: { name: `cm-${i}` } }), null, ctx);
        // Read between every insertion: the hot entry keeps moving to the young generation.
        const calls = p.stats().calls;
        expect(p.forwardSync(hot, null, ctx).decision).toBe("apply");
        expect(p.stats().calls).toBe(calls);
      }
      // A name evicted long ago runs the plugin again.
      const calls = p.stats().calls;
      p.forwardSync(version(configMap, "x0", { metadata: { name: "cm-0" } }), null, ctx);
      expect(p.stats().calls).toBe(calls + 1);
    } finally {
      await p.close();
    }
  });
});
