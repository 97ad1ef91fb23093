import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { KubeObject } from "../../core/reflection/abi.ts";
import { PluginError } from "../../core/reflection/errors.ts";
import type { ReflectorPlugin } from "../../core/reflection/host.ts";
import { testReflectorPlugin } from "../../plugins/conformance.ts";
import { builtinWasm, loadBuiltin } from "../index.ts";
import { ctx, pvc } from "../samples.ts";
import { remotePvc } from "./twin.ts";

let plugin: ReflectorPlugin;
let claim: KubeObject;
beforeAll(async () => {
  plugin = await loadBuiltin("storage");
  const c = await plugin.forward(pvc, null, ctx);
  claim = c.decision === "apply" ? c.object : {};
});
afterAll(() => plugin.close());

describe("storage: remote PersistentVolumeClaim", () => {
  test("uses the negotiated storage class", () =>
    expect((claim.spec as Record<string, unknown>).storageClassName).toBe("remote-ssd"));
  test("drops the local volumeName", () => expect(claim.spec).not.toHaveProperty("volumeName"));
  test("keeps the requested size", () =>
    expect((claim.spec as Record<string, unknown>).resources).toEqual({ requests: { storage: "5Gi" } }));
  test("drops the local selected-node annotation", () =>
    expect(claim.metadata?.annotations).not.toHaveProperty("volume.kubernetes.io/selected-node"));
  test("keeps other annotations", () => expect(claim.metadata?.annotations?.keep).toBe("me"));
  test("matches the twin", () => expect(claim).toEqual((remotePvc(pvc, null, ctx) as { object: KubeObject }).object));
  test("a copy keeps its class when the offered class changes (a claim's class is immutable)", async () => {
    const newClass = { ...ctx, storageClass: "fast" };
    const d = await plugin.forward(pvc, claim, newClass);
    expect(d.decision).toBe("apply");
    expect(((d as { object: KubeObject }).object.spec as Record<string, unknown>).storageClassName).toBe("remote-ssd");
    expect(
      ((remotePvc(pvc, claim, newClass) as { object: KubeObject }).object.spec as Record<string, unknown>)
        .storageClassName,
    ).toBe("remote-ssd");
  });
  test("a new claim after the change gets the new class", async () => {
    const d = (await plugin.forward(pvc, null, { ...ctx, storageClass: "fast" })) as { object: KubeObject };
    expect((d.object.spec as Record<string, unknown>).storageClassName).toBe("fast");
  });
  test("a copy keeps being reflected (a grown request) after the provider stops offering a class", async () => {
    const grown = { ...pvc, spec: { ...(pvc.spec as object), resources: { requests: { storage: "9Gi" } } } };
    const d = (await plugin.forward(grown, claim, { ...ctx, storageClass: undefined })) as { object: KubeObject };
    expect(d.object.spec).toMatchObject({
      storageClassName: "remote-ssd",
      resources: { requests: { storage: "9Gi" } },
    });
  });
  test("without a negotiated class, an input error (not quarantine)", async () => {
    const err = await plugin.forward(pvc, null, { ...ctx, storageClass: undefined }).catch((e) => e);
    expect(err).toBeInstanceOf(PluginError);
    expect(err.code).toBe("invalid-input");
    expect(plugin.state).toBe("ready");
  });
});

describe("storage: what stays home", () => {
  const other = (spec: Record<string, unknown>, annotations: Record<string, string>) =>
    ({ ...pvc, metadata: { ...pvc.metadata, annotations }, spec: { ...(pvc.spec as object), ...spec } }) as KubeObject;
  test("a claim of another storage class", async () => {
    const d = await plugin.forward(other({ storageClassName: "local-path" }, pvc.metadata!.annotations!), null, ctx);
    expect(d).toMatchObject({ decision: "skip", reason: "not a claim of the virtual storage class" });
  });
  test("a claim of the class bound to another node", async () => {
    const d = await plugin.forward(other({}, { "volume.kubernetes.io/selected-node": "rome-node-1" }), null, ctx);
    expect(d).toMatchObject({ decision: "skip", reason: "not bound to this virtual node" });
  });
  test("a claim placed elsewhere whose name had a copy here (made again): the stale copy goes", async () => {
    const stale = ((await plugin.forward(pvc, null, ctx)) as { object: KubeObject }).object;
    const d = await plugin.forward(other({}, { "volume.kubernetes.io/selected-node": "rome-node-1" }), stale, ctx);
    expect(d).toMatchObject({ decision: "delete", reason: "the claim is placed on another node" });
    expect(remotePvc(other({}, { "volume.kubernetes.io/selected-node": "rome-node-1" }), stale, ctx).decision).toBe(
      "delete",
    );
  });
  test("a claim not yet placed, with a copy here: kept (never deleted on a missing annotation)", async () => {
    const copy = ((await plugin.forward(pvc, null, ctx)) as { object: KubeObject }).object;
    expect((await plugin.forward(other({}, {}), copy, ctx)).decision).toBe("skip");
  });
  test("a claim not yet placed", async () => {
    expect((await plugin.forward(other({}, {}), null, ctx)).decision).toBe("skip");
  });
  test("a renamed virtual class is honoured", async () => {
    const d = await plugin.forward(other({ storageClassName: "virtual" }, pvc.metadata!.annotations!), null, {
      ...ctx,
      virtualStorageClass: "virtual",
    });
    expect(d.decision).toBe("apply");
  });
  test("the twin agrees on every case", async () => {
    for (const [obj, c] of [
      [other({ storageClassName: "local-path" }, pvc.metadata!.annotations!), ctx],
      [other({}, {}), ctx],
    ] as const) {
      expect((await plugin.forward(obj, null, c)).decision).toBe(remotePvc(obj, null, c).decision);
    }
  });
  test("a copy names the claim it was made for (its UID)", () => {
    expect(claim.metadata?.annotations?.["storage.liqo.io/origin-claim-uid"]).toBe(pvc.metadata!.uid!);
  });
  test("a copy of an earlier claim of that name (deleted and made again) goes, never reused", async () => {
    const again = { ...pvc, metadata: { ...pvc.metadata, uid: "made-again" } } as KubeObject;
    const d = await plugin.forward(again, claim, ctx);
    expect(d).toMatchObject({ decision: "delete", reason: expect.stringContaining("an earlier claim of that name") });
    expect(remotePvc(again, claim, ctx)).toEqual(d);
    // Once it is gone, the new claim gets its own copy.
    const fresh = (await plugin.forward(again, null, ctx)) as { object: KubeObject };
    expect(fresh.object.metadata?.annotations?.["storage.liqo.io/origin-claim-uid"]).toBe("made-again");
  });
  test("a copy made before copies named their claim is adopted: marked, not deleted", async () => {
    const annotations = { ...claim.metadata!.annotations };
    delete annotations["storage.liqo.io/origin-claim-uid"];
    const unmarked = { ...claim, metadata: { ...claim.metadata, annotations } } as KubeObject;
    const d = (await plugin.forward(pvc, unmarked, ctx)) as { decision: string; object: KubeObject };
    expect(d.decision).toBe("apply");
    expect(d.object.metadata?.annotations?.["storage.liqo.io/origin-claim-uid"]).toBe(pvc.metadata!.uid!);
    expect(remotePvc(pvc, unmarked, ctx)).toEqual(d);
  });
  test("a local claim deleted deletes the remote one", async () => {
    const remote = (await plugin.forward(pvc, null, ctx)) as { object: KubeObject };
    expect((await plugin.forward(null, remote.object, ctx)).decision).toBe("delete");
  });
});

await testReflectorPlugin(await builtinWasm("storage"), { samples: [pvc], context: ctx });
