import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { KubeObject } from "../../core/reflection/abi.ts";
import type { ReflectorPlugin } from "../../core/reflection/host.ts";
import { testReflectorPlugin } from "../../plugins/conformance.ts";
import { builtinWasm, loadBuiltin } from "../index.ts";
import { ctx, saSecret } from "../samples.ts";
import { remoteSecret } from "./twin.ts";

let plugin: ReflectorPlugin;
let out: KubeObject;
beforeAll(async () => {
  plugin = await loadBuiltin("secrets");
  const d = await plugin.forward(saSecret, null, ctx);
  out = d.decision === "apply" ? d.object : {};
});
afterAll(() => plugin.close());

describe("secrets: remote service-account token Secret", () => {
  test("keeps the name (a valid name remotely)", () => expect(out.metadata?.name).toBe("builder-token-x7k2"));
  test("becomes Opaque, which the remote token controller leaves alone", () => expect(out.type).toBe("Opaque"));
  test("keeps the token data", () => expect(out.data).toEqual(saSecret.data));
  test("keeps the service-account name annotation", () =>
    expect(out.metadata?.annotations?.["kubernetes.io/service-account.name"]).toBe("builder"));
  test("drops the origin service-account uid annotation", () =>
    expect(out.metadata?.annotations).not.toHaveProperty("kubernetes.io/service-account.uid"));
  test("matches the twin", () =>
    expect(out).toEqual((remoteSecret(saSecret, null, ctx) as { object: KubeObject }).object));
  test("an Opaque secret keeps its type", async () => {
    const d = await plugin.forward({ ...saSecret, type: "Opaque" }, null, ctx);
    expect(d.decision === "apply" && d.object.type).toBe("Opaque");
  });
  test("a TLS secret keeps its type", async () => {
    const d = await plugin.forward({ ...saSecret, type: "kubernetes.io/tls" }, null, ctx);
    expect(d.decision === "apply" && d.object.type).toBe("kubernetes.io/tls");
  });
});

await testReflectorPlugin(await builtinWasm("secrets"), { samples: [saSecret], context: ctx });
