// The fast paths of the host and the SDK must not change what a plugin answers: the context
// decoded once and kept across calls, input JSON cached per object and resourceVersion,
// look-up answers cached the same way, raw JSON objects indexed once (a deep change still
// reaches the answer), keys with escapes. Each test would fail if a cache answered stale data.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ensureBuilt, wasmPath } from "../../reflectors/build.ts";
import { loadBuiltin } from "../../reflectors/index.ts";
import { remotePvc } from "../../reflectors/storage/twin.ts";
import * as s from "../../reflectors/samples.ts";
import type { KubeObject, ReflectionContext } from "./abi.ts";
import { loadPlugin, type ReflectorPlugin } from "./host.ts";

await ensureBuilt(["fixture-sdkprobe", "storage", "pods", "endpointslices"]);

const base: ReflectionContext = {
  localClusterId: "home",
  remoteClusterId: "far",
  localNamespace: "a",
  remoteNamespace: "a-far",
};
const cm = (data: Record<string, string>, rv?: string): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "cfg", namespace: "a", ...(rv ? { resourceVersion: rv } : {}) },
  data,
});
const applied = (d: { decision: string; object?: KubeObject }) => {
  expect(d.decision).toBe("apply");
  // biome-ignore lint/suspicious/noExplicitAny: the plugin's answer, walked by the paths the SDK writes
  return d.object as KubeObject & { data: Record<string, unknown>; spec: Record<string, any> };
};

let probe: ReflectorPlugin;
beforeAll(async () => {
  probe = await loadPlugin(await Bun.file(wasmPath("fixture-sdkprobe")).bytes(), { trust: "builtin" });
});
afterAll(async () => {
  await probe.close();
});

describe("context kept across calls", () => {
  test("a new context replaces the kept one; switching back and forth never answers a stale field", () => {
    const contexts = ["one", "two", "three"].map((tag) => ({ ...base, tag }));
    for (let i = 0; i < 300; i++) {
      const ctx = contexts[i % 3]!;
      // Payloads of varying size in between: the per-call arena must not overwrite the kept context.
      const data: Record<string, string> = { n: String(i), pad: "x".repeat(i % 97) };
      expect(applied(probe.forwardSync(cm(data), null, ctx)).data.tag).toBe(ctx.tag);
    }
  });

  test("the storage class of the PVC follows the context of each call", async () => {
    const storage = await loadBuiltin("storage");
    try {
      for (const sc of ["fast", "slow", "fast", "archive"]) {
        const ctx = { ...s.ctx, storageClass: sc };
        const got = applied(storage.forwardSync(s.pvc, null, ctx));
        expect(got.spec.storageClassName).toBe(sc);
        expect(got).toEqual(applied(remotePvc(s.pvc, null, ctx) as never));
      }
    } finally {
      await storage.close();
    }
  });
});

describe("input and look-up caches follow the resourceVersion", () => {
  test("an object with a new resourceVersion is serialized again", () => {
    const v1 = cm({ keep: "first" }, "10");
    const ctx = { ...base, mode: "deep-edit", tag: "t" };
    expect(applied(probe.forwardSync(v1, null, ctx)).data.seen).toBe("first|t");
    expect(applied(probe.forwardSync(v1, null, ctx)).data.seen).toBe("first|t");
    const v2 = cm({ keep: "second" }, "11");
    expect(applied(probe.forwardSync(v2, null, ctx)).data.seen).toBe("second|t");
  });

  test("an object without a resourceVersion (built by hand) is never cached: an in-place change is seen", () => {
    const obj = cm({ keep: "before" });
    const ctx = { ...base, mode: "deep-edit", tag: "t" };
    expect(applied(probe.forwardSync(obj, null, ctx)).data.seen).toBe("before|t");
    (obj.data as Record<string, string>).keep = "after";
    expect(applied(probe.forwardSync(obj, null, ctx)).data.seen).toBe("after|t");
  });

  test("the looked-up ServiceAccount is re-read when its resourceVersion changes", async () => {
    let sa: KubeObject = {
      ...s.serviceAccount,
      metadata: { ...s.serviceAccount.metadata, resourceVersion: "1" },
      secrets: [{ name: "token-one" }],
    };
    const pods = await loadBuiltin("pods", { lookup: (req) => (req.kind === "ServiceAccount" ? sa : null) });
    const tokenSecret = (d: ReturnType<ReflectorPlugin["forwardSync"]>) =>
      (applied(d).spec.volumes as Array<{ secret?: { secretName: string } }>).find((v) => v.secret)?.secret?.secretName;
    try {
      expect(tokenSecret(pods.forwardSync(s.pod, null, s.ctx))).toBe("token-one");
      sa = { ...sa, metadata: { ...sa.metadata, resourceVersion: "2" }, secrets: [{ name: "token-two" }] };
      expect(tokenSecret(pods.forwardSync(s.pod, null, s.ctx))).toBe("token-two");
    } finally {
      await pods.close();
    }
  });
});

describe("translate_ip answers", () => {
  const addresses = (d: ReturnType<ReflectorPlugin["forwardSync"]>) =>
    (applied(d) as unknown as { endpoints: Array<{ addresses: string[] }> }).endpoints.flatMap((e) => e.addresses);
  const slice: KubeObject = {
    ...s.endpointSlice,
    endpoints: [
      { addresses: ["10.244.1.5"], conditions: { ready: true } },
      { addresses: ["192.168.7.7", "10.244.2.9"], conditions: { ready: true } },
    ],
  };

  test("the identity translation (answered 0, unchanged) keeps every address", async () => {
    const p = await loadBuiltin("endpointslices");
    try {
      expect(addresses(p.forwardSync(slice, null, s.ctx))).toEqual(["10.244.1.5", "192.168.7.7", "10.244.2.9"]);
    } finally {
      await p.close();
    }
  });

  test("a remapping changes the addresses it maps and keeps the others (answered 0)", async () => {
    const p = await loadBuiltin("endpointslices", { translateIp: (ip) => ip.replace(/^10\.244\./, "10.99.") });
    try {
      expect(addresses(p.forwardSync(slice, null, s.ctx))).toEqual(["10.99.1.5", "192.168.7.7", "10.99.2.9"]);
    } finally {
      await p.close();
    }
  });
});

describe("lazy JSON in the SDK", () => {
  test("a change deep inside an object that was read reaches the answer; the rest is copied unchanged", () => {
    const data = { keep: "k", nested: '{"a":[1,2,{"b":"c"}]}', quote: 'say "hi"\n' };
    const got = applied(probe.forwardSync(cm(data, "20"), null, { ...base, mode: "deep-edit", tag: "x" }));
    expect(got.metadata?.namespace).toBe("a-far");
    expect(got.data).toEqual({ ...data, seen: "k|x" });
  });

  test("keys with escapes and multi-byte characters are found; a longer key is not mistaken for a shorter one", () => {
    const data = { 'quote"back\\slash': "q", "clé-ключ": "u", kk: "longer", "k\u00e9": "é" };
    const got = applied(probe.forwardSync(cm(data), null, { ...base, mode: "keys" }));
    expect(got.data.escaped).toBe("q");
    expect(got.data.unicode).toBe("u");
    expect(got.data.longer).toBe(false);
    expect(got.data.count).toBe(4);
  });
});
