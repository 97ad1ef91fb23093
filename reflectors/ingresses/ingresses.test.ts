import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { KubeObject } from "../../core/reflection/abi.ts";
import type { ReflectorPlugin } from "../../core/reflection/host.ts";
import { testReflectorPlugin } from "../../plugins/conformance.ts";
import { builtinWasm, loadBuiltin } from "../index.ts";
import { ctx, ingress } from "../samples.ts";
import { remoteIngress } from "./twin.ts";

let plugin: ReflectorPlugin;
let out: KubeObject;
beforeAll(async () => {
  plugin = await loadBuiltin("ingresses");
  const d = await plugin.forward(ingress, null, ctx);
  out = d.decision === "apply" ? d.object : {};
});
afterAll(() => plugin.close());

describe("ingresses: remote Ingress", () => {
  test("lives in the remote namespace", () => expect(out.metadata?.namespace).toBe(ctx.remoteNamespace));
  test("empties ingressClassName", () => expect(out.spec).not.toHaveProperty("ingressClassName"));
  test("keeps rules verbatim", () =>
    expect((out.spec as Record<string, unknown>).rules).toEqual((ingress.spec as Record<string, unknown>).rules));
  test("carries the origin label", () =>
    expect(out.metadata?.labels?.["liqo.io/origin-cluster-id"]).toBe(ctx.localClusterId));
  test("matches the twin", () =>
    expect(out).toEqual((remoteIngress(ingress, null, ctx) as { object: KubeObject }).object));
});

await testReflectorPlugin(await builtinWasm("ingresses"), { samples: [ingress], context: ctx });
