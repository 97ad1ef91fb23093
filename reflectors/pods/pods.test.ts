import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { CacheLookup, KubeObject } from "../../core/reflection/abi.ts";
import type { PodSpec, PodStatus } from "../../core/kube/types.ts";
import type { ReflectorPlugin } from "../../core/reflection/host.ts";
import { testReflectorPlugin } from "../../plugins/conformance.ts";
import { builtinWasm, loadBuiltin } from "../index.ts";
import { ctx, pod, remotePod, serviceAccount } from "../samples.ts";
import { localPodStatus, remotePodWith } from "./twin.ts";

const lookup: CacheLookup = (req) =>
  req.kind === "ServiceAccount" && req.name === "builder" && req.namespace === "shop" ? serviceAccount : null;
const translateIp = (ip: string, dir: string) => (dir === "backward" ? ip.replace(/^10\.250\./, "10.123.") : ip);
const statusCtx = { ...ctx, remoteRestarts: 2 };
let plugin: ReflectorPlugin;
let out: KubeObject;
let status: KubeObject;
beforeAll(async () => {
  plugin = await loadBuiltin("pods", { lookup, translateIp });
  const d = await plugin.forward(pod, null, ctx);
  out = d.decision === "apply" ? d.object : {};
  const s = await plugin.backward(remotePod, pod, statusCtx);
  status = s.decision === "apply" ? s.object : {};
});
afterAll(() => plugin.close());

const spec = () => out.spec as PodSpec;
describe("pods: remote pod spec", () => {
  for (const f of [
    "affinity",
    "nodeSelector",
    "nodeName",
    "schedulerName",
    "priority",
    "priorityClassName",
    "preemptionPolicy",
  ]) {
    test(`drops ${f}`, () => expect(spec()).not.toHaveProperty(f));
  }
  test("forces hostNetwork off", () => expect(spec().hostNetwork).toBe(false));
  test("forces hostIPC off", () => expect(spec().hostIPC).toBe(false));
  test("forces hostPID off", () => expect(spec().hostPID).toBe(false));
  test("does not automount the remote token", () => expect(spec().automountServiceAccountToken).toBe(false));
  test("drops the service account (absent remotely)", () => expect(spec()).not.toHaveProperty("serviceAccountName"));
  test("mounts the reflected token secret instead of the projected token", () =>
    expect(spec().volumes![1]).toEqual({
      name: "kube-api-access-9x8lq",
      secret: { secretName: "builder-token-x7k2" },
    }));
  test("keeps other volumes", () =>
    expect(spec().volumes![0]).toEqual({ name: "settings", configMap: { name: "settings" } }));
  test("keeps containers verbatim", () => expect(spec().containers).toEqual((pod.spec as PodSpec).containers));
  test("drops liqo's virtual-node toleration (the only one: the field goes)", () =>
    expect(spec()).not.toHaveProperty("tolerations"));
  test("drops status", () => expect(out).not.toHaveProperty("status"));
  test("matches the twin", () =>
    expect(out).toEqual(
      (
        remotePodWith((sa) =>
          lookup({ cluster: "local", apiVersion: "v1", kind: "ServiceAccount", namespace: "shop", name: sa }),
        )(pod, null, ctx) as { object: KubeObject }
      ).object,
    ));
  test("waits when the token secret is not cached yet", async () => {
    const p = await loadBuiltin("pods");
    const d = await p.forward(pod, null, ctx);
    await p.close();
    expect(d.decision === "skip" && d.reason).toContain("token secret");
  });
});

describe("pods: tolerations (no chained offloading)", () => {
  const ours = { key: "virtual-node.liqo.io/not-allowed", operator: "Exists", effect: "NoExecute" };
  const user = { key: "dedicated", operator: "Equal", value: "gpu", effect: "NoSchedule" };
  const withTolerations = (tolerations: unknown[] | undefined) => ({
    ...pod,
    spec: { ...(pod.spec as Record<string, unknown>), tolerations },
  });
  const forward = async (p: KubeObject) => {
    const d = await plugin.forward(p, null, ctx);
    return d.decision === "apply" ? (d.object.spec as PodSpec) : undefined;
  };
  const twin = (p: KubeObject) =>
    (
      remotePodWith((sa) =>
        lookup({ cluster: "local", apiVersion: "v1", kind: "ServiceAccount", namespace: "shop", name: sa }),
      )(p, null, ctx) as { object: KubeObject }
    ).object.spec;
  const cases: [string, unknown[] | undefined, unknown[] | undefined][] = [
    ["keeps the user's tolerations, drops liqo's", [user, ours], [user]],
    ["drops liqo's with another value or effect too", [{ ...ours, operator: "Equal", value: "true" }, user], [user]],
    ["keeps a list without liqo's as it is", [user], [user]],
    ["drops every copy of liqo's", [ours, ours], undefined],
    ["a pod without tolerations gets none", undefined, undefined],
  ];
  for (const [name, input, expected] of cases) {
    test(name, async () => {
      const spec = await forward(withTolerations(input));
      expect(spec?.tolerations).toEqual(expected);
      expect(twin(withTolerations(input)).tolerations).toEqual(expected);
    });
  }
});

const st = () => status.status as PodStatus;
describe("pods: local pod status (backward)", () => {
  test("translates podIP", () => expect(st().podIP).toBe("10.123.3.4"));
  test("translates podIPs", () => expect(st().podIPs).toEqual([{ ip: "10.123.3.4" }]));
  test("reports the virtual kubelet as hostIP", () => expect(st().hostIP).toBe("10.0.0.77"));
  test("reports the virtual kubelet as hostIPs", () => expect(st().hostIPs).toEqual([{ ip: "10.0.0.77" }]));
  test("adds remote re-creations to restart counts", () =>
    expect(st().containerStatuses!.map((c) => c.restartCount)).toEqual([3, 2]));
  test("keeps the phase", () => expect(st().phase).toBe("Running"));
  test("addresses the local pod", () => expect(status.metadata).toEqual({ name: "web-7d9-abcde", namespace: "shop" }));
  test("carries status only", () =>
    expect(Object.keys(status).sort()).toEqual(["apiVersion", "kind", "metadata", "status"]));
  test("matches the twin", () =>
    expect(status).toEqual(
      (localPodStatus(remotePod, pod, statusCtx, (ip) => translateIp(ip, "backward")) as { object: KubeObject }).object,
    ));
});

await testReflectorPlugin(await builtinWasm("pods"), { samples: [pod], context: ctx, lookup });
