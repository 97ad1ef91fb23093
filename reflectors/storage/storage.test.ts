import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { KubeObject } from "../../core/reflection/abi.ts";
import { PluginError } from "../../core/reflection/errors.ts";
import type { ReflectorPlugin } from "../../core/reflection/host.ts";
import { testReflectorPlugin } from "../../plugins/conformance.ts";
import { builtinWasm, loadBuiltin } from "../index.ts";
import { ctx, pvc, remotePv } from "../samples.ts";
import { localPv, remotePvc } from "./twin.ts";

let plugin: ReflectorPlugin;
let claim: KubeObject;
let volume: KubeObject;
beforeAll(async () => {
  plugin = await loadBuiltin("storage");
  const c = await plugin.forward(pvc, null, ctx);
  claim = c.decision === "apply" ? c.object : {};
  const v = await plugin.backward(remotePv, null, ctx);
  volume = v.decision === "apply" ? v.object : {};
});
afterAll(() => plugin.close());

describe("storage: remote PersistentVolumeClaim", () => {
  test("uses the negotiated storage class", () => expect((claim.spec as any).storageClassName).toBe("remote-ssd"));
  test("drops the local volumeName", () => expect(claim.spec).not.toHaveProperty("volumeName"));
  test("keeps the requested size", () => expect((claim.spec as any).resources).toEqual({ requests: { storage: "5Gi" } }));
  test("drops the local selected-node annotation", () => expect(claim.metadata?.annotations).not.toHaveProperty("volume.kubernetes.io/selected-node"));
  test("keeps other annotations", () => expect(claim.metadata?.annotations?.keep).toBe("me"));
  test("matches the twin", () => expect(claim).toEqual((remotePvc(pvc, null, ctx) as any).object));
  test("without a negotiated class, an input error (not quarantine)", async () => {
    const err = await plugin.forward(pvc, null, { ...ctx, storageClass: undefined }).catch((e) => e);
    expect(err).toBeInstanceOf(PluginError);
    expect(err.code).toBe("invalid-input");
    expect(plugin.state).toBe("ready");
  });
});

describe("storage: local PersistentVolume (backward)", () => {
  const terms = () => (volume.spec as any).nodeAffinity.required.nodeSelectorTerms;
  test("is cluster-scoped", () => expect(volume.metadata).not.toHaveProperty("namespace"));
  test("is pinned to the virtual node's cluster", () => expect(terms()).toEqual([{ matchExpressions: [{ key: "liqo.io/remote-cluster-id", operator: "In", values: [ctx.remoteClusterId] }] }]));
  test("binds to the local claim", () => expect((volume.spec as any).claimRef).toEqual({ apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: ctx.localNamespace, name: "data" }));
  test("uses the local liqo storage class", () => expect((volume.spec as any).storageClassName).toBe("liqo"));
  test("keeps capacity", () => expect((volume.spec as any).capacity).toEqual({ storage: "5Gi" }));
  test("is owned by the remote cluster", () => expect(volume.metadata?.labels?.["liqo.io/origin-cluster-id"]).toBe(ctx.remoteClusterId));
  test("matches the twin", () => expect(volume).toEqual((localPv(remotePv, null, ctx) as any).object));
});

await testReflectorPlugin(await builtinWasm("storage"), { samples: [pvc, remotePv], context: ctx });
