// The conformance kit: one suite every reflector plugin, built-in or dropped in, must pass.
// Use it from a test file:   await testReflectorPlugin("path/to/plugin.wasm", { samples: [...] })
// It loads the plugin once to read its manifest, then registers bun:test cases per resource;
// each case loads a fresh instance, so one failure cannot quarantine the next case.
import { describe, expect, test } from "bun:test";
import { ANNOTATION_SKIP, LABEL_MANAGED_BY, LABEL_ORIGIN, MANAGED_BY_REFLECTION, apiVersionOf, type CacheLookup, type Decision, type KubeObject, type Manifest, type ReflectionContext, type Resource } from "../core/reflection/abi.ts";
import { PluginError } from "../core/reflection/errors.ts";
import { loadPlugin, type LoadOptions, type ReflectorPlugin, type Trust } from "../core/reflection/host.ts";

export interface ConformanceOptions {
  /** Realistic objects of the plugin's kinds; a bare object per declared kind is made otherwise. */
  samples?: KubeObject[];
  /** Extra context fields the plugin needs (storageClass, virtualNodeName...). */
  context?: Partial<ReflectionContext>;
  lookup?: CacheLookup;
  trust?: Trust;
}

const SERVER_FIELDS = ["uid", "resourceVersion", "creationTimestamp", "managedFields", "ownerReferences", "generation"];

export async function testReflectorPlugin(wasm: string | Uint8Array, options: ConformanceOptions = {}): Promise<void> {
  const bytes = typeof wasm === "string" ? await Bun.file(wasm).bytes() : wasm;
  const ctx: ReflectionContext = {
    localClusterId: "conformance-local", remoteClusterId: "conformance-remote", localNamespace: "ns-local", remoteNamespace: "ns-remote",
    virtualNodeName: "liqo-conformance-remote", virtualKubeletIp: "10.0.0.1", storageClass: "standard", ...options.context,
  };
  // A generous budget: the kit checks behaviour, and a cold worker on a busy machine is slow.
  // The decision memo is off: every call must reach the plugin (determinism is checked by calling twice).
  const load = (extra: LoadOptions = {}) => loadPlugin(bytes, { trust: options.trust ?? "builtin", lookup: options.lookup, budgetMs: 5_000, memoEntries: 0, ...extra });
  let manifest: Manifest;
  try {
    const probe = await load();
    manifest = probe.manifest;
    await probe.close();
  } catch (err) {
    describe(`reflector plugin conformance (${typeof wasm === "string" ? wasm : "bytes"})`, () => {
      test("loads, speaks ABI v1 and has a valid manifest", () => { throw err; });
    });
    return;
  }

  const withPlugin = async (fn: (p: ReflectorPlugin) => Promise<void>) => {
    const p = await load();
    try { await fn(p); } finally { await p.close(); }
  };
  const owned = (obj: KubeObject, origin: string, namespace?: string): KubeObject => ({
    ...obj, metadata: { ...obj.metadata, namespace, labels: { ...obj.metadata?.labels, [LABEL_MANAGED_BY]: MANAGED_BY_REFLECTION, [LABEL_ORIGIN]: origin } },
  });
  const foreign = (obj: KubeObject, namespace?: string): KubeObject => ({ ...obj, metadata: { ...obj.metadata, namespace, labels: { app: "theirs" } } });

  describe(`reflector plugin conformance: ${manifest.name} ${manifest.version}`, () => {
    test("manifest: ABI v1, DNS-label name, at least one resource", () => {
      expect(manifest.abiVersion).toBe(1);
      expect(manifest.name).toMatch(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/);
      expect(manifest.resources.length).toBeGreaterThan(0);
    });

    for (const r of manifest.resources) {
      const namespaced = r.namespaced !== false;
      const sample = sampleFor(r, options.samples, namespaced ? ctx.localNamespace : undefined);
      const fwd = r.direction !== "backward";
      const bwd = r.direction !== "forward";
      const what = `${apiVersionOf(r)}/${r.kind}`;

      if (fwd) {
        test(`${what} forward: applies into the remote namespace with ownership labels and no server metadata`, () => withPlugin(async (p) => {
          const d = await p.forward(sample, null, ctx);
          if (d.decision !== "apply") return void expect(d.reason).not.toBe(""); // a skip must say why
          expect(d.object.metadata?.namespace).toBe(namespaced ? ctx.remoteNamespace : undefined);
          expect(d.object.metadata?.labels?.[LABEL_MANAGED_BY]).toBe(MANAGED_BY_REFLECTION);
          expect(d.object.metadata?.labels?.[LABEL_ORIGIN]).toBe(ctx.localClusterId);
          for (const f of SERVER_FIELDS) expect(d.object.metadata).not.toHaveProperty(f);
          expect(p.state).toBe("ready");
        }));
        test(`${what} forward: deterministic`, () => withPlugin(async (p) => {
          const a = await p.forward(sample, null, ctx);
          const b = await p.forward(sample, null, ctx);
          expect(b).toEqual(a);
          // What the engine runs: the host's decision memo answers the second call; it must agree.
          const memo = await load({ memoEntries: 1024 });
          try {
            await memo.forward(sample, null, ctx);
            expect(await memo.forward(sample, null, ctx)).toEqual(a);
            expect(memo.stats().memoHits).toBe(1);
          } finally {
            await memo.close();
          }
        }));
        test(`${what} forward: ${ANNOTATION_SKIP} removes the remote copy`, () => withPlugin(async (p) => {
          const skipped = { ...sample, metadata: { ...sample.metadata, annotations: { ...sample.metadata?.annotations, [ANNOTATION_SKIP]: "true" } } };
          const d = await p.forward(skipped, owned(sample, ctx.localClusterId, namespaced ? ctx.remoteNamespace : undefined), ctx);
          expect(d.decision).toBe("delete");
        }));
        test(`${what} forward: a remote object it does not own is left alone (conflict)`, () => withPlugin(async (p) => {
          const d = await p.forward(sample, foreign(sample, namespaced ? ctx.remoteNamespace : undefined), ctx);
          expect(d.decision).toBe("skip");
          expect(d.reason).toContain("conflict");
          const gone = await p.forward(null, foreign(sample, namespaced ? ctx.remoteNamespace : undefined), ctx);
          expect(gone.decision).toBe("skip");
        }));
        test(`${what} forward: an owned remote copy is updated, and deleted with the local object`, () => withPlugin(async (p) => {
          const remote = owned(sample, ctx.localClusterId, namespaced ? ctx.remoteNamespace : undefined);
          expect(["apply", "skip"]).toContain((await p.forward(sample, remote, ctx)).decision);
          expect((await p.forward(null, remote, ctx)).decision).toBe("delete");
        }));
        test(`${what} forward: malformed input yields an error or a decision, never a crash`, () => withPlugin(async (p) => {
          const bad = { apiVersion: sample.apiVersion, kind: sample.kind, metadata: { name: "bad", namespace: sample.metadata?.namespace, annotations: "oops" as never, labels: [] as never }, spec: "garbage", data: 7, endpoints: "x", status: null };
          const outcome = await p.forward(bad as KubeObject, null, ctx).catch((e: unknown) => e);
          if (outcome instanceof PluginError) expect(outcome.code).toBe("invalid-input");
          else expect(["apply", "skip", "delete"]).toContain((outcome as Decision).decision);
          expect(p.state).toBe("ready");
          const wrongKind = await p.forward({ apiVersion: "v0", kind: "NoSuchKind", metadata: { name: "x" } }, null, ctx).catch((e: PluginError) => e);
          expect(wrongKind).toBeInstanceOf(PluginError);
          expect((wrongKind as PluginError).code).toBe("invalid-input");
        }));
      }

      if (bwd) {
        const remote = { ...sample, metadata: { ...sample.metadata, namespace: namespaced ? ctx.remoteNamespace : undefined } };
        test(`${what} backward: stays in the local namespace, deterministic`, () => withPlugin(async (p) => {
          const local = r.kind === "Pod" ? sample : null;
          const a = await p.backward(remote, local, ctx);
          const b = await p.backward(remote, local, ctx);
          expect(b).toEqual(a);
          if (a.decision === "apply") expect(a.object.metadata?.namespace).toBe(namespaced ? ctx.localNamespace : undefined);
          else expect(a.reason).not.toBe("");
          expect(p.state).toBe("ready");
        }));
        if (r.kind !== "Pod") test(`${what} backward: a local object it does not own is left alone (conflict)`, () => withPlugin(async (p) => {
          const d = await p.backward(remote, foreign(sample, namespaced ? ctx.localNamespace : undefined), ctx);
          expect(d.decision).toBe("skip");
          expect(d.reason).toContain("conflict");
        }));
      }
    }
  });
}

function sampleFor(r: Resource, samples: KubeObject[] | undefined, namespace: string | undefined): KubeObject {
  const given = samples?.find((s) => s.kind === r.kind && s.apiVersion === apiVersionOf(r));
  const base = given ?? { apiVersion: apiVersionOf(r), kind: r.kind, metadata: { name: "conformance-sample" }, spec: {} };
  return { ...base, metadata: { ...base.metadata, namespace } };
}
