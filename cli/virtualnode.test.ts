import { afterEach, describe, expect, spyOn, test } from "bun:test";
import type { KubeClient } from "../core/kube/client.ts";
import type { ForeignClusterObject } from "../core/peering/foreigncluster/index.ts";
import { CliError, ExitCode } from "./errors.ts";
import {
  checkVirtualNodeName,
  outgoingProblem,
  parseLabelPairs,
  parseResources,
  parseTaints,
  pickPeering,
  pickVirtualNode,
  verdict,
  virtualNodeManifest,
  waitDrained,
  waitReady,
  type VirtualNodeObject,
} from "./virtualnode.ts";

/** The CliError a call throws (its message and exit code), or undefined. */
function refusal(f: () => unknown): { message: string; code: number } | undefined {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(CliError);
    return { message: (err as CliError).message, code: (err as CliError).code };
  }
  return undefined;
}

describe("the virtual node's name", () => {
  test("a DNS-1123 subdomain passes", () => {
    for (const n of ["milan-gpu", "a", "gpu.milan.example", "x".repeat(253)])
      expect({ n, r: refusal(() => checkVirtualNodeName(n)) }).toEqual({ n, r: undefined });
  });
  test("anything else is a usage error saying what a name may hold", () => {
    for (const n of ["Milan", "gpu_1", "-gpu", "gpu-", "a..b", "x".repeat(254)]) {
      const r = refusal(() => checkVirtualNodeName(n))!;
      expect(r.code).toBe(ExitCode.Usage);
      expect(r.message).toBe(
        `virtual node name "${n}" must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), e.g. milan-gpu`,
      );
    }
  });
});

describe("parseResources", () => {
  test("--cpu, --memory, --pods and --resource as typed, in that order", () =>
    expect(
      parseResources({ cpu: "1500m", memory: "4Gi", pods: "20", resource: "nvidia.com/gpu=1, ephemeral-storage=10Gi" }),
    ).toEqual({ cpu: "1500m", memory: "4Gi", pods: "20", "nvidia.com/gpu": "1", "ephemeral-storage": "10Gi" }));
  test("one resource is enough", () => expect(parseResources({ memory: "512Mi" })).toEqual({ memory: "512Mi" }));
  const bad: [Parameters<typeof parseResources>[0], string][] = [
    [
      {},
      "a virtual node needs a share of the provider's offer: pass at least one of --cpu, --memory, --pods or --resource",
    ],
    [{ cpu: "two" }, '--cpu: "two" is not a quantity; use e.g. 2, 500m (cpu), 4Gi (memory), 110 (pods)'],
    [{ memory: "4GB" }, '--memory: "4GB" is not a quantity'],
    [{ cpu: "0" }, "--cpu: cpu must be more than zero (leave it out to ask for none)"],
    [{ cpu: "-1" }, "--cpu: cpu must be more than zero"],
    [{ pods: "2.5" }, '--pods: "2.5" must be a whole number of pods, e.g. 20'],
    [{ pods: "1k" }, '--pods: "1k" must be a whole number of pods'],
    [{ resource: "gpu" }, '--resource: "gpu" is not name=quantity, e.g. nvidia.com/gpu=1'],
    [
      { resource: "my gpu=1" },
      '--resource: "my gpu" is not a resource name such as ephemeral-storage or nvidia.com/gpu',
    ],
    [{ resource: "nvidia.com/gpu=lots" }, '--resource nvidia.com/gpu: "lots" is not a quantity'],
    [{ cpu: "2", resource: "cpu=3" }, "--resource: cpu is given twice (also by --cpu)"],
    [{ resource: "a.io/x=1,a.io/x=2" }, "--resource: a.io/x is given twice"],
  ];
  test.each(bad)("%p is refused: %s", (flags, message) => {
    const r = refusal(() => parseResources(flags))!;
    expect(r.message).toStartWith(message);
    expect(r.code).toBe(ExitCode.Usage);
  });
});

describe("parseTaints", () => {
  test("key=value:Effect and key:Effect, as kubectl taint writes them", () =>
    expect(parseTaints("accelerator=gpu:NoSchedule, example.com/spot:PreferNoSchedule,dedicated=:NoExecute")).toEqual([
      { key: "accelerator", value: "gpu", effect: "NoSchedule" },
      { key: "example.com/spot", effect: "PreferNoSchedule" },
      { key: "dedicated", value: "", effect: "NoExecute" },
    ]));
  test("nothing: no taints", () => expect(parseTaints(undefined)).toEqual([]));
  const bad: [string, string][] = [
    ["gpu=yes", '--taints: "gpu=yes" is not key=value:Effect or key:Effect, e.g. accelerator=gpu:NoSchedule'],
    [
      "gpu=yes:NoSchedul",
      '--taints: "gpu=yes:NoSchedul": the effect "NoSchedul" must be one of NoSchedule, PreferNoSchedule, NoExecute',
    ],
    ["gpu=yes:", '--taints: "gpu=yes:": the effect "" must be one of'],
    ["bad key=x:NoSchedule", '--taints: "bad key=x:NoSchedule": taint key "bad key": the name must be 1-63 letters'],
    ["gpu=a b:NoSchedule", '--taints: "gpu=a b:NoSchedule": taint "gpu": value "a b" must be at most 63'],
    ["gpu=a:NoSchedule,gpu=b:NoSchedule", '--taints: "gpu" with effect NoSchedule is given twice'],
  ];
  test.each(bad)("%p is refused: %s", (text, message) =>
    expect(refusal(() => parseTaints(text))!.message).toStartWith(message),
  );
  test("the same key with another effect is another taint", () =>
    expect(parseTaints("gpu=a:NoSchedule,gpu=a:NoExecute")).toHaveLength(2));
});

describe("parseLabelPairs", () => {
  test("Kubernetes labels, prefixes allowed, empty values too", () =>
    expect(parseLabelPairs("accelerator=gpu, topology.kubernetes.io/zone=eu-1,empty=", "labels")).toEqual({
      accelerator: "gpu",
      "topology.kubernetes.io/zone": "eu-1",
      empty: "",
    }));
  test("bad pairs name the flag and the pair", () => {
    expect(refusal(() => parseLabelPairs("gpu", "labels"))!.message).toBe(
      '--labels: "gpu" is not key=value, e.g. example.com/zone=a',
    );
    expect(refusal(() => parseLabelPairs("Bad_Prefix.com/x=1", "remote-node-selector"))!.message).toBe(
      '--remote-node-selector: label key "Bad_Prefix.com/x": the prefix must be a DNS subdomain such as example.com',
    );
    expect(refusal(() => parseLabelPairs("a=1,a=2", "labels"))!.message).toBe(
      '--labels: "a" is given twice with different values',
    );
  });
});

describe("virtualNodeManifest", () => {
  const base = {
    name: "milan-gpu",
    namespace: "liqo-tenant-milan-3f1c2a",
    clusterID: "milan-id",
    resources: { cpu: "2" },
    labels: {},
    taints: [],
    nodeSelector: {},
  };
  test("the spec the flags say; the cluster ID as a label too", () =>
    expect(
      virtualNodeManifest({
        ...base,
        labels: { accelerator: "gpu" },
        taints: [{ key: "accelerator", value: "gpu", effect: "NoSchedule" }],
        nodeSelector: { "example.com/gpu": "true" },
      }),
    ).toEqual({
      apiVersion: "virtualkubelet.liqo.io/v1alpha1",
      kind: "VirtualNode",
      metadata: {
        name: "milan-gpu",
        namespace: "liqo-tenant-milan-3f1c2a",
        labels: { "liqo.io/remote-cluster-id": "milan-id" },
      },
      spec: {
        clusterID: "milan-id",
        resourceQuota: { hard: { cpu: "2" } },
        labels: { accelerator: "gpu" },
        taints: [{ key: "accelerator", value: "gpu", effect: "NoSchedule" }],
        offloadingPatch: { nodeSelector: { "example.com/gpu": "true" } },
      },
    } as never));
  test("what was not asked for is left out", () =>
    expect(virtualNodeManifest(base).spec).toEqual({ clusterID: "milan-id", resourceQuota: { hard: { cpu: "2" } } }));
});

const fc = (name: string, id: string, conditions: Record<string, string> = {}, extra: object = {}) =>
  ({
    metadata: { name },
    spec: { clusterIdentity: { clusterID: id, clusterName: name }, outgoingPeeringEnabled: "Yes" },
    status: {
      tenantNamespace: { local: `liqo-tenant-${name}` },
      peeringConditions: Object.entries(conditions).map(([type, status]) => ({ type, status })),
    },
    ...extra,
  }) as unknown as ForeignClusterObject;

describe("the peering", () => {
  const fcs = [fc("milan", "milan-id"), fc("paris", "paris-id")];
  test("found by ForeignCluster name or cluster ID", () => {
    expect(pickPeering(fcs, { name: "paris" }).metadata.name).toBe("paris");
    expect(pickPeering(fcs, { id: "milan-id" }).metadata.name).toBe("milan");
  });
  test("none: an error listing the peerings there are", () => {
    expect(refusal(() => pickPeering(fcs, { name: "naples" }))).toEqual({
      message:
        "ForeignCluster naples does not exist: the peerings here are milan (milan-id), paris (paris-id); peer first (liqoctl peer out-of-band ...)",
      code: ExitCode.Failure,
    });
    expect(refusal(() => pickPeering([], { id: "x" }))!.message).toBe(
      "no ForeignCluster has cluster ID x; it does not exist: this cluster has no peering; peer first (liqoctl peer out-of-band ...)",
    );
  });
  test("only an established outgoing peering will do, and the message says what to do", () => {
    expect(outgoingProblem(fc("milan", "m", { OutgoingPeering: "Established" }))).toBeUndefined();
    expect(outgoingProblem(fc("milan", "m", { OutgoingPeering: "None", IncomingPeering: "Established" }))).toBe(
      "the peering with milan is incoming only (milan uses this cluster's resources); a virtual node needs an outgoing peering, where milan offers resources: liqoctl peer milan",
    );
    expect(outgoingProblem(fc("milan", "m", { OutgoingPeering: "Pending" }))).toBe(
      "the outgoing peering with milan is Pending, not Established; wait for it (liqoctl status)",
    );
    expect(outgoingProblem(fc("milan", "m", {}))).toBe(
      "the outgoing peering with milan is None, not Established; peer first (liqoctl peer milan)",
    );
    expect(
      outgoingProblem(
        fc("milan", "m", { OutgoingPeering: "Established" }, { metadata: { name: "milan", deletionTimestamp: "x" } }),
      ),
    ).toContain("ForeignCluster milan is being deleted (unpeering)");
  });
});

const vn = (name: string, namespace: string, clusterID: string, ready?: [string, string, string?]): VirtualNodeObject =>
  ({
    apiVersion: "virtualkubelet.liqo.io/v1alpha1",
    kind: "VirtualNode",
    metadata: { name, namespace, uid: `${namespace}/${name}` },
    spec: { clusterID, resourceQuota: { hard: { cpu: "1" } } },
    status: ready ? { conditions: [{ type: "Ready", status: ready[0], reason: ready[1], message: ready[2] }] } : {},
  }) as VirtualNodeObject;

describe("verdict: what --wait makes of the Ready condition", () => {
  test("True is ready; OfferExceeded, NameTaken, NoPeering and InvalidSpec are refusals; anything else is waited on", () => {
    expect(verdict(vn("a", "n", "c", ["True", "NodeReady"])).state).toBe("ready");
    for (const reason of ["OfferExceeded", "NameTaken", "NoPeering", "InvalidSpec"])
      expect({ reason, v: verdict(vn("a", "n", "c", ["False", reason])).state }).toEqual({ reason, v: "refused" });
    for (const reason of ["NodeNotReady", "Pending", "Draining", "constructor"])
      expect({ reason, v: verdict(vn("a", "n", "c", ["False", reason])).state }).toEqual({ reason, v: "waiting" });
    expect(verdict(vn("a", "n", "c", ["Unknown", "OfferExceeded"])).state).toBe("waiting");
    expect(verdict(vn("a", "n", "c")).state).toBe("waiting");
  });
});

describe("pickVirtualNode", () => {
  const fcs = [fc("milan", "milan-id"), fc("paris", "paris-id")];
  const all = [
    vn("gpu", "liqo-tenant-milan", "milan-id"),
    vn("gpu", "liqo-tenant-paris", "paris-id"),
    vn("big", "x", "paris-id"),
  ];
  test("by name alone when it is unique", () =>
    expect(pickVirtualNode(all, "big", fcs, {}).metadata.namespace).toBe("x"));
  test("ambiguous: every match with its peering, and the flag that picks one", () =>
    expect(refusal(() => pickVirtualNode(all, "gpu", fcs, {}))).toEqual({
      message:
        "2 VirtualNodes are named gpu: liqo-tenant-milan/gpu (peering milan), liqo-tenant-paris/gpu (peering paris); pass --namespace to pick one",
      code: ExitCode.Failure,
    }));
  test("narrowed by namespace or peering", () => {
    expect(pickVirtualNode(all, "gpu", fcs, { namespace: "liqo-tenant-paris" }).spec.clusterID).toBe("paris-id");
    expect(pickVirtualNode(all, "gpu", fcs, { clusterID: "milan-id", peering: "milan" }).metadata.namespace).toBe(
      "liqo-tenant-milan",
    );
  });
  test("none: where it looked", () => {
    expect(refusal(() => pickVirtualNode(all, "cpu", fcs, {}))!.message).toBe(
      "VirtualNode cpu does not exist in any namespace; liqoctl status lists the virtual nodes of each peering",
    );
    expect(
      refusal(() => pickVirtualNode(all, "big", fcs, { namespace: "y", clusterID: "milan-id", peering: "milan" }))!
        .message,
    ).toStartWith("VirtualNode big does not exist in namespace y for the peering with milan;");
  });
});

describe("waiting", () => {
  const stderr = spyOn(process.stderr, "write").mockImplementation(() => true);
  afterEach(() => stderr.mockClear());
  const written = () => stderr.mock.calls.map((c) => String(c[0])).join("");
  /** A client whose find answers the given objects one after the other (the last one from then on). */
  const clientSeeing = (...seen: (VirtualNodeObject | undefined)[]) => {
    let i = 0;
    return { find: async () => seen[Math.min(i++, seen.length - 1)] } as unknown as KubeClient;
  };
  const o = { timeoutMs: 300, liqoNamespace: "liqo", pollMs: 5, hintAfterMs: 100 };
  const made = vn("gpu", "t", "c");

  test("Ready after Pending: returns the node, progress shown", async () => {
    const ready = {
      ...vn("gpu", "t", "c", ["True", "NodeReady"]),
      status: { conditions: [{ type: "Ready", status: "True", reason: "NodeReady" }], resources: { cpu: "1" } },
    } as VirtualNodeObject;
    const got = await waitReady(
      clientSeeing(vn("gpu", "t", "c", ["False", "Pending", "not yet handled"]), ready),
      made,
      o,
    );
    expect(got.status?.resources).toEqual({ cpu: "1" });
    expect(written()).toContain("Virtual node gpu is Ready (cpu=1)");
  });

  test("a refusal ends the wait at once with the controller's message and how to delete the object", async () => {
    const err = await waitReady(
      clientSeeing(
        vn("gpu", "t", "c", ["False", "OfferExceeded", "asks cpu=8 but cpu=2 is left of milan's offer (cpu=6)"]),
      ),
      made,
      { ...o, timeoutMs: 60_000 },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(CliError);
    expect(err.code).toBe(ExitCode.Failure);
    expect(err.message).toBe(
      "virtual node gpu was refused (OfferExceeded): asks cpu=8 but cpu=2 is left of milan's offer (cpu=6); ask for less, or free some of the offer (liqoctl status lists the peering's virtual nodes). the VirtualNode is left in place: delete it with liqoctl delete virtualnode gpu --namespace t",
    );
  });

  test("the timeout names the last condition; no status at all says no controller seems to run", async () => {
    const late = await waitReady(
      clientSeeing(vn("gpu", "t", "c", ["False", "NodeNotReady", "milan unreachable"])),
      made,
      o,
    ).catch((e) => e);
    expect(late.message).toStartWith(
      "virtual node gpu is not ready after 0s: Ready is False (NodeNotReady): milan unreachable.",
    );
    const none = await waitReady(clientSeeing(made), made, o).catch((e) => e);
    expect(none.message).toContain("the controller manager has not reported on it: is liqo controller-manager running");
    expect(written()).toContain("WARN  VirtualNode t/gpu has no status after");
  });

  test("NoPeering ends the wait only while the peering is not established (a starting controller says it too)", async () => {
    const noPeering = vn("gpu", "t", "c", [
      "False",
      "NoPeering",
      "there is no established outgoing peering with cluster c",
    ]);
    const readyNode = vn("gpu", "t", "c", ["True", "NodeReady"]);
    await waitReady(clientSeeing(noPeering, noPeering, readyNode), made, {
      ...o,
      peeringProblem: async () => undefined,
    });
    expect(written()).toContain("(NoPeering: there is no established outgoing peering with cluster c)");
    const err = await waitReady(clientSeeing(noPeering), made, {
      ...o,
      timeoutMs: 60_000,
      peeringProblem: async () =>
        "the outgoing peering with milan is Disconnecting, not Established; wait for it (liqoctl status)",
    }).catch((e) => e);
    expect(err.message).toStartWith(
      "virtual node gpu was refused (NoPeering): there is no established outgoing peering with cluster c; check the peering with liqoctl status.",
    );
  });

  test("deleted meanwhile: said", async () => {
    const err = await waitReady(clientSeeing(undefined), made, o).catch((e) => e);
    expect(err.message).toBe("VirtualNode t/gpu was deleted while waiting for it to be ready");
  });

  test("drain: the Draining message shown until it is gone; a timeout names the finalizer", async () => {
    const draining = vn("gpu", "t", "c", ["False", "Draining", "3 pods left"]);
    await waitDrained(clientSeeing(draining, draining, undefined), made, o);
    expect(written()).toContain("Draining virtual node gpu (3 pods left)");
    expect(written()).toContain("Virtual node gpu drained and deleted");
    const held = { ...draining, metadata: { ...draining.metadata, finalizers: ["virtualnode.liqo.io/drain"] } };
    const err = await waitDrained(clientSeeing(held), made, o).catch((e) => e);
    expect(err.message).toStartWith(
      "VirtualNode t/gpu is still there after 0s: Ready is False (Draining): 3 pods left; its finalizer virtualnode.liqo.io/drain goes once the node is drained",
    );
  });
});
