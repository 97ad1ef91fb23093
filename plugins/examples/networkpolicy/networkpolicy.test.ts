import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { KubeObject } from "../../../core/reflection/abi.ts";
import { loadPlugin, type ReflectorPlugin } from "../../../core/reflection/host.ts";
import { ensureBuilt, wasmPath } from "../../../reflectors/build.ts";
import { testReflectorPlugin } from "../../conformance.ts";

await ensureBuilt(["networkpolicy"]);
const wasm = await Bun.file(wasmPath("networkpolicy")).bytes();
const ctx = { localClusterId: "home", remoteClusterId: "far", localNamespace: "shop", remoteNamespace: "shop-home" };
const policy: KubeObject = {
  apiVersion: "networking.k8s.io/v1",
  kind: "NetworkPolicy",
  metadata: { name: "allow-office", namespace: "shop", uid: "u", resourceVersion: "3", labels: { team: "a" } },
  spec: {
    podSelector: { matchLabels: { app: "web" } },
    policyTypes: ["Ingress", "Egress"],
    ingress: [{ from: [{ ipBlock: { cidr: "10.244.0.0/16", except: ["10.244.5.0/24"] } }, { podSelector: {} }] }],
    egress: [{ to: [{ ipBlock: { cidr: "192.168.1.10/32" } }] }],
  },
};
const translateIp = (ip: string) => ip.replace(/^10\.244\./, "10.60.");

let plugin: ReflectorPlugin;
let out: KubeObject;
beforeAll(async () => {
  // A drop-in: it runs in a worker, as the engine would run it.
  plugin = await loadPlugin(wasm, { trust: "dropin", translateIp, budgetMs: 5_000 });
  const d = await plugin.forward(policy, null, ctx);
  out = d.decision === "apply" ? d.object : {};
});
afterAll(() => plugin.close());

// biome-ignore lint/suspicious/noExplicitAny: a NetworkPolicy spec walked by path (ingress/egress peers)
const spec = () => out.spec as any;
describe("example networkpolicy plugin", () => {
  test("translates ingress ipBlock CIDRs, keeping the prefix", () =>
    expect(spec().ingress[0].from[0].ipBlock.cidr).toBe("10.60.0.0/16"));
  test("translates except CIDRs", () => expect(spec().ingress[0].from[0].ipBlock.except).toEqual(["10.60.5.0/24"]));
  test("translates egress ipBlock CIDRs", () => expect(spec().egress[0].to[0].ipBlock.cidr).toBe("192.168.1.10/32"));
  test("keeps non-ipBlock peers", () => expect(spec().ingress[0].from[1]).toEqual({ podSelector: {} }));
  test("lives in the remote namespace", () => expect(out.metadata?.namespace).toBe("shop-home"));
  test("keeps local labels and adds ownership", () =>
    expect(out.metadata?.labels).toEqual({
      team: "a",
      "liqo.io/managed-by": "reflection",
      "liqo.io/origin-cluster-id": "home",
    }));
  test("drops server metadata", () => expect(out.metadata).not.toHaveProperty("uid"));
  test("leaves the cached object alone", () =>
    // biome-ignore lint/suspicious/noExplicitAny: a NetworkPolicy spec walked by path (ingress/egress peers)
    expect((policy.spec as any).ingress[0].from[0].ipBlock.cidr).toBe("10.244.0.0/16"));
});

await testReflectorPlugin(wasm, { samples: [policy], trust: "dropin" });
