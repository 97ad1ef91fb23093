import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { KubeObject } from "../../core/reflection/abi.ts";
import type { ReflectorPlugin } from "../../core/reflection/host.ts";
import { testReflectorPlugin } from "../../plugins/conformance.ts";
import { builtinWasm, loadBuiltin } from "../index.ts";
import { ctx, endpointSlice } from "../samples.ts";
import { remoteEndpointSlice } from "./twin.ts";

// A non-identity translator, to see the addresses really go through it.
const translateIp = (ip: string) => ip.replace(/^10\.244\./, "10.99.");
let plugin: ReflectorPlugin;
let out: KubeObject;
beforeAll(async () => {
  plugin = await loadBuiltin("endpointslices", { translateIp });
  const d = await plugin.forward(endpointSlice, null, ctx);
  out = d.decision === "apply" ? d.object : {};
});
afterAll(() => plugin.close());

const eps = () => out.endpoints as { addresses?: string[]; conditions?: unknown }[];
describe("endpointslices: remote EndpointSlice", () => {
  test("drops endpoints on the virtual node (already in the destination)", () => expect(eps().length).toBe(1));
  test("translates addresses", () => expect(eps()[0]!.addresses).toEqual(["10.99.1.5"]));
  test("keeps conditions", () => expect(eps()[0]!.conditions).toEqual({ ready: true }));
  test("drops nodeName", () => expect(eps()[0]).not.toHaveProperty("nodeName"));
  test("drops targetRef", () => expect(eps()[0]).not.toHaveProperty("targetRef"));
  test("keeps the service-name label", () => expect(out.metadata?.labels?.["kubernetes.io/service-name"]).toBe("web"));
  test("is not managed by the remote endpointslice controller", () =>
    expect(out.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"]).toBe("endpointslice.reflection.liqo.io"));
  test("keeps ports and addressType", () =>
    expect([out.ports, out.addressType]).toEqual([endpointSlice.ports, "IPv4"]));
  test("matches the twin", () =>
    expect(out).toEqual((remoteEndpointSlice(endpointSlice, null, ctx, translateIp) as { object: KubeObject }).object));
});

await testReflectorPlugin(await builtinWasm("endpointslices"), { samples: [endpointSlice], context: ctx });
