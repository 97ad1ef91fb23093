import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { KubeObject } from "../../core/reflection/abi.ts";
import type { ReflectorPlugin } from "../../core/reflection/host.ts";
import { testReflectorPlugin } from "../../plugins/conformance.ts";
import { builtinWasm, loadBuiltin } from "../index.ts";
import { configMap, ctx } from "../samples.ts";
import { remoteConfigMap } from "./twin.ts";

let plugin: ReflectorPlugin;
let out: KubeObject;
beforeAll(async () => {
  plugin = await loadBuiltin("configmaps");
  const d = await plugin.forward(configMap, null, ctx);
  out = d.decision === "apply" ? d.object : {};
});
afterAll(() => plugin.close());

describe("configmaps: remote ConfigMap", () => {
  test("keeps the name", () => expect(out.metadata?.name).toBe("settings"));
  test("lives in the remote namespace", () => expect(out.metadata?.namespace).toBe(ctx.remoteNamespace));
  test("keeps data verbatim", () => expect(out.data).toEqual(configMap.data));
  test("drops creationTimestamp", () => expect(out.metadata).not.toHaveProperty("creationTimestamp"));
  test("drops generation", () => expect(out.metadata).not.toHaveProperty("generation"));
  test("matches the twin", () =>
    expect(out).toEqual((remoteConfigMap(configMap, null, ctx) as { object: KubeObject }).object));
  test("never reflects kube-root-ca.crt", async () => {
    const d = await plugin.forward(
      { ...configMap, metadata: { ...configMap.metadata, name: "kube-root-ca.crt" } },
      null,
      ctx,
    );
    expect(d.decision).toBe("skip");
  });
  test("the peer's own kube-root-ca.crt is not reported as a conflict", async () => {
    const rootCa = { ...configMap, metadata: { ...configMap.metadata, name: "kube-root-ca.crt" } };
    const theirs = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "kube-root-ca.crt", namespace: ctx.remoteNamespace },
    };
    const d = await plugin.forward(rootCa, theirs, ctx);
    expect(d.decision).toBe("skip");
    expect(d.reason).not.toMatch(/conflict/i);
    expect(d.reason).toContain("kube-root-ca.crt");
  });
  test("skip-reflection=false reflects; any other value (even a near miss) deletes", async () => {
    // The SDK compares the annotation's input bytes in place (Value.is): check it both ways.
    const with_ = (v: string) => ({
      ...configMap,
      metadata: { ...configMap.metadata, annotations: { "liqo.io/skip-reflection": v } },
    });
    expect((await plugin.forward(with_("false"), null, ctx)).decision).toBe("apply");
    for (const v of ["falsey", "fals", "False", "f\u0061lse-ish", '"false"']) {
      expect((await plugin.forward(with_(v), null, ctx)).decision).toBe("delete");
    }
  });
  test("skip-reflection deletes the remote copy", async () => {
    const d = await plugin.forward(
      { ...configMap, metadata: { ...configMap.metadata, annotations: { "liqo.io/skip-reflection": "" } } },
      null,
      ctx,
    );
    expect(d.decision).toBe("delete");
  });
});

await testReflectorPlugin(await builtinWasm("configmaps"), { samples: [configMap], context: ctx });
