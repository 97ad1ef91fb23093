import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Decision, KubeObject } from "../../core/reflection/abi.ts";
import type { ReflectorPlugin } from "../../core/reflection/host.ts";
import { testReflectorPlugin } from "../../plugins/conformance.ts";
import { builtinWasm, loadBuiltin } from "../index.ts";
import { ctx, service } from "../samples.ts";
import { remoteService } from "./twin.ts";
import type { ServiceSpec } from "../../core/kube/types.ts";

let plugin: ReflectorPlugin;
let out: KubeObject;
beforeAll(async () => {
  plugin = await loadBuiltin("services");
  const d = await plugin.forward(service, null, ctx);
  if (d.decision !== "apply") throw new Error(`expected apply, got ${d.decision}: ${d.reason}`);
  out = d.object;
});
afterAll(() => plugin.close());

const spec = () => out.spec as ServiceSpec;

describe("services: remote Service", () => {
  test("lives in the remote namespace", () => expect(out.metadata?.namespace).toBe(ctx.remoteNamespace));
  test("keeps the local labels", () => expect(out.metadata?.labels?.app).toBe("shop"));
  test("is labelled managed-by reflection", () =>
    expect(out.metadata?.labels?.["liqo.io/managed-by"]).toBe("reflection"));
  test("is labelled with the origin cluster", () =>
    expect(out.metadata?.labels?.["liqo.io/origin-cluster-id"]).toBe(ctx.localClusterId));
  test("keeps annotations", () => expect(out.metadata?.annotations?.owner).toBe("team-a"));
  test("drops uid", () => expect(out.metadata).not.toHaveProperty("uid"));
  test("drops resourceVersion", () => expect(out.metadata).not.toHaveProperty("resourceVersion"));
  test("drops managedFields", () => expect(out.metadata).not.toHaveProperty("managedFields"));
  test("drops ownerReferences", () => expect(out.metadata).not.toHaveProperty("ownerReferences"));
  test("drops status", () => expect(out).not.toHaveProperty("status"));
  test("empties clusterIP", () => expect(spec()).not.toHaveProperty("clusterIP"));
  test("empties clusterIPs", () => expect(spec()).not.toHaveProperty("clusterIPs"));
  test("empties loadBalancerIP", () => expect(spec()).not.toHaveProperty("loadBalancerIP"));
  test("empties healthCheckNodePort", () => expect(spec()).not.toHaveProperty("healthCheckNodePort"));
  test("empties nodePorts", () => expect(spec().ports!.map((p) => p.nodePort)).toEqual([undefined, undefined]));
  test("keeps ports otherwise", () =>
    expect(spec().ports![1]).toEqual({ name: "https", port: 443, targetPort: 8443, protocol: "TCP" }));
  test("keeps type and selector verbatim", () =>
    expect([spec().type, spec().selector]).toEqual(["LoadBalancer", { app: "shop" }]));
  test("does not mutate the cached local object", () =>
    expect((service.spec as ServiceSpec).ports![0]!.nodePort).toBe(30080));
  test("matches the plain-TypeScript twin", () =>
    expect(out).toEqual((remoteService(service, null, ctx) as Extract<Decision, { decision: "apply" }>).object));
  test("keeps nodePorts with liqo.io/force-remote-node-port=true", async () => {
    const forced = {
      ...service,
      metadata: { ...service.metadata, annotations: { "liqo.io/force-remote-node-port": "true" } },
    };
    const d = await plugin.forward(forced, null, ctx);
    expect(d.decision === "apply" && (d.object.spec as ServiceSpec).ports![0]!.nodePort).toBe(30080);
  });
});

await testReflectorPlugin(await builtinWasm("services"), { samples: [service], context: ctx });
