// liqoctl create/delete virtualnode and the virtual nodes in liqoctl status, run from source as
// users run it, against a real API server from the rig with the CRDs installed. No controller
// manager runs here: the test plays the VirtualNode controller itself, patching the Ready
// condition and the drain finalizer as the controller would, so what is checked is liqoctl's side:
// what it refuses (and that nothing is written then), the exact object it writes, and how --wait
// ends for each verdict.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { installCrds } from "../../core/apis/crds.ts";
import {
  ForeignClusterResource,
  VIRTUAL_NODE_FINALIZER,
  VirtualNodeResource,
  type VirtualNodeCr,
} from "../../core/apis/index.ts";
import { MILAN, sampleForeignCluster, sampleForeignClusterStatus } from "../../core/apis/samples.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { bunBin, liqoctl, repoRoot, type CliRun } from "./liqoctl-run.ts";

type VirtualNode = VirtualNodeCr & KubeObject;

let rig: TestRig;
let client: KubeClient;
let kubeconfig: string;
const TENANT = sampleForeignClusterStatus().tenantNamespace.local;
const PARIS = { clusterID: "7d1e0c4a-1b2c-4d3e-8f90-0a1b2c3d4e5f", clusterName: "paris" };

/** liqoctl against the rig's cluster. */
const cli = (args: string[]) => liqoctl([...args, "--kubeconfig", kubeconfig]);

/** liqoctl started in the background: its stderr readable while it runs, so the test can wait on its progress. */
function background(args: string[]) {
  const proc = Bun.spawn([bunBin, join(repoRoot, "cli/main.ts"), ...args, "--kubeconfig", kubeconfig], {
    cwd: repoRoot,
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
    env: { ...process.env, NO_COLOR: "1" },
  });
  let stderr = "";
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) stderr += decoder.decode(chunk, { stream: true });
  })();
  const done: Promise<CliRun> = Promise.all([new Response(proc.stdout).text(), proc.exited, reading]).then(
    ([stdout, code]) => ({ code, stdout, stderr }),
  );
  let exited = false;
  void proc.exited.then(() => (exited = true));
  return { stderr: () => stderr, done, running: () => !exited };
}

const virtualNodes = async () => (await client.list<VirtualNode>(VirtualNodeResource)).items;
const find = (name: string, ns = TENANT) => client.find<VirtualNode>(VirtualNodeResource, name, ns);
const ready = (status: "True" | "False" | "Unknown", reason: string, message: string) => ({
  type: "Ready",
  status,
  reason,
  message,
  lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
});
/** What the controller would write: the Ready condition (and the capacity given). */
const setStatus = (name: string, status: object, ns = TENANT) =>
  client.mergePatch(VirtualNodeResource, name, ns, { status }, "status");
async function removeVirtualNode(name: string, ns = TENANT) {
  await client.mergePatch(VirtualNodeResource, name, ns, { metadata: { finalizers: null } }).catch(() => undefined);
  await client.delete(VirtualNodeResource, name, ns);
  await waitFor(`VirtualNode ${ns}/${name} gone`, async () => !(await find(name, ns)));
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["rome"], nodes: 1 });
  client = rig.client("rome");
  kubeconfig = rig.clusters[0]!.kubeconfig;
  await installCrds(client, { timeoutMs: 120_000 });
  // Established is not yet served: the API server answers 429 while a new CRD's storage initializes.
  for (const res of [ForeignClusterResource, VirtualNodeResource])
    await waitFor(`${res.kind}s listable`, () => client.list(res).then(() => true), { timeoutMs: 60_000 });
  for (const name of ["liqo", TENANT, "elsewhere"]) await client.create(Resources.namespaces, { metadata: { name } });
  // milan: an established outgoing peering, as the controller manager leaves it.
  await client.create(ForeignClusterResource, sampleForeignCluster() as KubeObject);
  await client.mergePatch(
    ForeignClusterResource,
    "milan",
    undefined,
    { status: sampleForeignClusterStatus() },
    "status",
  );
  // paris: incoming only (paris consumes our resources): no virtual node can be made for it.
  await client.create(ForeignClusterResource, {
    apiVersion: "discovery.liqo.io/v1alpha1",
    kind: "ForeignCluster",
    metadata: { name: "paris" },
    spec: {
      clusterIdentity: PARIS,
      foreignAuthUrl: "https://172.18.0.9:31845",
      outgoingPeeringEnabled: "No",
      incomingPeeringEnabled: "Auto",
    },
  } as KubeObject);
  await client.mergePatch(
    ForeignClusterResource,
    "paris",
    undefined,
    {
      status: {
        tenantNamespace: { local: "liqo-tenant-paris-1a2b3c" },
        peeringConditions: [
          { type: "OutgoingPeering", status: "None" },
          { type: "IncomingPeering", status: "Established" },
        ],
      },
    },
    "status",
  );
}, 600_000);

afterAll(async () => {
  await rig?.down();
});

describe("liqoctl create virtualnode refuses bad input and writes nothing", () => {
  // Usage errors (exit 2) come before the cluster is contacted; the cluster's refusals (exit 1) before anything is written.
  const refused: [string, string[], number, string][] = [
    [
      "a name that is no DNS-1123 subdomain",
      ["GPU_1", "--remote-cluster-name", "milan", "--cpu", "1"],
      2,
      'virtual node name "GPU_1" must be a DNS-1123 subdomain',
    ],
    [
      "no resource",
      ["gpu", "--remote-cluster-name", "milan"],
      2,
      "a virtual node needs a share of the provider's offer: pass at least one of --cpu, --memory, --pods or --resource",
    ],
    [
      "a bad quantity",
      ["gpu", "--remote-cluster-name", "milan", "--memory", "4GB"],
      2,
      '--memory: "4GB" is not a quantity; use e.g. 2, 500m (cpu), 4Gi (memory), 110 (pods)',
    ],
    [
      "a taint effect that does not exist",
      ["gpu", "--remote-cluster-name", "milan", "--cpu", "1", "--taints", "gpu=yes:NoRun"],
      2,
      '--taints: "gpu=yes:NoRun": the effect "NoRun" must be one of NoSchedule, PreferNoSchedule, NoExecute',
    ],
    [
      "a bad label",
      ["gpu", "--remote-cluster-name", "milan", "--cpu", "1", "--labels", "gpu"],
      2,
      '--labels: "gpu" is not key=value, e.g. example.com/zone=a',
    ],
    [
      "a bad remote node selector",
      ["gpu", "--remote-cluster-name", "milan", "--cpu", "1", "--remote-node-selector", "zone=a b"],
      2,
      '--remote-node-selector: label "zone": value "a b" must be at most 63',
    ],
    [
      "no provider",
      ["gpu", "--cpu", "1"],
      2,
      "pass the provider: --remote-cluster-name <ForeignCluster> or --remote-cluster-id <ID>",
    ],
    [
      "the peering's own node's name",
      ["liqo-milan", "--remote-cluster-name", "milan", "--cpu", "1"],
      2,
      "virtual node name liqo-milan is the name of the peering's own node (liqo-milan); pick another name",
    ],
    [
      "the peering's own node's name, the peering given by ID",
      ["liqo-milan", "--remote-cluster-id", MILAN.clusterID, "--cpu", "1"],
      2,
      "virtual node name liqo-milan is the name of the own node of the peering with milan; pick another name",
    ],
    [
      "a peering that does not exist",
      ["gpu", "--remote-cluster-name", "naples", "--cpu", "1"],
      1,
      `ForeignCluster naples does not exist: the peerings here are milan (${MILAN.clusterID}), paris (${PARIS.clusterID})`,
    ],
    [
      "an incoming-only peering",
      ["gpu", "--remote-cluster-name", "paris", "--cpu", "1"],
      1,
      "the peering with paris is incoming only (paris uses this cluster's resources); a virtual node needs an outgoing peering, where paris offers resources: liqoctl peer paris",
    ],
    [
      "a namespace that does not exist",
      ["gpu", "--remote-cluster-name", "milan", "--cpu", "1", "--namespace", "nowhere"],
      1,
      "namespace nowhere does not exist; create it first or leave --namespace out",
    ],
  ];
  test.each(refused)("%s", async (_, args, code, message) => {
    const r = await cli(["create", "virtualnode", ...args]);
    expect(r.stderr).toContain(message);
    expect(r.code).toBe(code);
    expect(await virtualNodes()).toEqual([]);
  });

  test("the name of an existing Node", async () => {
    const node = (await client.list(Resources.nodes)).items[0]!.metadata.name!;
    const r = await cli(["create", "virtualnode", node, "--remote-cluster-name", "milan", "--cpu", "1"]);
    expect(r.stderr).toContain(`a Node named ${node} exists already (kubectl get node ${node}); pick another name`);
    expect(r.code).toBe(1);
    expect(await virtualNodes()).toEqual([]);
  });
});

describe("liqoctl create virtualnode", () => {
  test("--wait=false writes exactly the spec the flags say, in the peering's tenant namespace", async () => {
    const r = await cli([
      "create",
      "virtualnode",
      "milan-gpu",
      "--remote-cluster-id",
      MILAN.clusterID,
      "--cpu",
      "1500m",
      "--memory",
      "4Gi",
      "--pods",
      "20",
      "--resource",
      "nvidia.com/gpu=1",
      "--labels",
      "accelerator=gpu,topology.kubernetes.io/zone=eu-1",
      "--taints",
      "accelerator=gpu:NoSchedule,example.com/spot:PreferNoSchedule",
      "--remote-node-selector",
      "example.com/gpu=true",
      "--wait=false",
    ]);
    expect(r.stderr).toContain(`VirtualNode ${TENANT}/milan-gpu created for the peering with milan`);
    expect(r.code).toBe(0);
    const vn = (await find("milan-gpu"))!;
    expect(vn.metadata.labels).toEqual({ "liqo.io/remote-cluster-id": MILAN.clusterID });
    expect(vn.spec).toEqual({
      clusterID: MILAN.clusterID,
      resourceQuota: { hard: { cpu: "1500m", memory: "4Gi", pods: "20", "nvidia.com/gpu": "1" } },
      labels: { accelerator: "gpu", "topology.kubernetes.io/zone": "eu-1" },
      taints: [
        { key: "accelerator", value: "gpu", effect: "NoSchedule" },
        { key: "example.com/spot", effect: "PreferNoSchedule" },
      ],
      offloadingPatch: { nodeSelector: { "example.com/gpu": "true" } },
    });
  });

  test("an existing one is refused, whatever the namespace, naming liqoctl delete virtualnode", async () => {
    const r = await cli([
      "create",
      "virtualnode",
      "milan-gpu",
      "--remote-cluster-name",
      "milan",
      "--cpu",
      "1",
      "--namespace",
      "elsewhere",
    ]);
    expect(r.stderr).toContain(
      `VirtualNode ${TENANT}/milan-gpu exists already; delete it first (liqoctl delete virtualnode milan-gpu --namespace ${TENANT}) or pick another name`,
    );
    expect(r.code).toBe(1);
    expect(await find("milan-gpu", "elsewhere")).toBeUndefined();
  });

  test("--wait returns 0 once the controller reports Ready=True, showing its progress before", async () => {
    const run = background(["create", "virtualnode", "milan-small", "--remote-cluster-name", "milan", "--cpu", "1"]);
    await waitFor("the VirtualNode created", () => find("milan-small"));
    await setStatus("milan-small", { conditions: [ready("False", "Pending", "not yet handled")] });
    await waitFor("liqoctl showing Pending", () => run.stderr().includes("(Pending: not yet handled)"));
    expect(run.running()).toBe(true);
    await setStatus("milan-small", {
      conditions: [ready("True", "NodeReady", "node milan-small is Ready")],
      resources: { cpu: "1" },
    });
    const r = await run.done;
    expect(r.stderr).toContain("Virtual node milan-small is Ready (cpu=1)");
    expect(r.code).toBe(0);
  });

  test("--wait fails at once on OfferExceeded with the controller's message, leaving the object and saying how to delete it", async () => {
    const run = background(["create", "virtualnode", "milan-big", "--remote-cluster-name", "milan", "--cpu", "8"]);
    await waitFor("the VirtualNode created", () => find("milan-big"));
    const message = "asks cpu=8 but cpu=2500m is left of milan's offer (cpu=4,memory=7692Mi,pods=110)";
    await setStatus("milan-big", { conditions: [ready("False", "OfferExceeded", message)] });
    const r = await run.done;
    expect(r.stderr).toContain(
      `ERROR virtual node milan-big was refused (OfferExceeded): ${message}; ask for less, or free some of the offer (liqoctl status lists the peering's virtual nodes). the VirtualNode is left in place: delete it with liqoctl delete virtualnode milan-big --namespace ${TENANT}`,
    );
    expect(r.code).toBe(1);
    expect(await find("milan-big")).toBeDefined();
  });

  test("a timeout names the last condition", async () => {
    const run = background([
      "create",
      "virtualnode",
      "milan-slow",
      "--remote-cluster-name",
      "milan",
      "--pods",
      "5",
      "--timeout",
      "3s",
    ]);
    await waitFor("the VirtualNode created", () => find("milan-slow"));
    await setStatus("milan-slow", { conditions: [ready("False", "NodeNotReady", "milan does not answer")] });
    const r = await run.done;
    expect(r.stderr).toContain(
      "ERROR virtual node milan-slow is not ready after 3s: Ready is False (NodeNotReady): milan does not answer.",
    );
    expect(r.code).toBe(1);
    await removeVirtualNode("milan-slow");
  });
});

describe("liqoctl status", () => {
  test("lists the virtual nodes of each peering with Ready, reason and capacity, and why one is not ready", async () => {
    await client.create(Resources.configMaps, {
      metadata: { name: "liqo-clusterid-configmap", namespace: "liqo" },
      data: { CLUSTER_ID: "0d4f6b1e-0000-4000-8000-000000000001", CLUSTER_NAME: "rome" },
    });
    const r = await cli(["status"]);
    expect(r.code).toBe(0);
    const section = r.stdout.slice(r.stdout.indexOf("Virtual nodes"), r.stdout.indexOf("Discovery:")).trimEnd();
    expect(section.split("\n")).toEqual([
      "Virtual nodes (besides each peering's own):",
      "PEERING   NAME          READY     REASON          RESOURCES",
      "milan     milan-big     False     OfferExceeded   -",
      "milan     milan-gpu     Unknown   Pending         -",
      "milan     milan-small   True      NodeReady       cpu=1",
      "",
      "Not ready:",
      `  ${TENANT}/milan-big OfferExceeded: asks cpu=8 but cpu=2500m is left of milan's offer (cpu=4,memory=7692Mi,pods=110)`,
    ]);
  });
});

describe("liqoctl delete virtualnode", () => {
  test("an unknown name, and a name in two namespaces without --namespace, are refused naming what to pass", async () => {
    const none = await cli(["delete", "virtualnode", "milan-none"]);
    expect(none.stderr).toContain(
      "VirtualNode milan-none does not exist in any namespace; liqoctl status lists the virtual nodes of each peering",
    );
    expect(none.code).toBe(1);
    // A second VirtualNode of the same name elsewhere (written directly: liqoctl refuses to make one).
    await client.create(VirtualNodeResource, {
      apiVersion: "virtualkubelet.liqo.io/v1alpha1",
      kind: "VirtualNode",
      metadata: { name: "milan-big", namespace: "elsewhere" },
      spec: { clusterID: MILAN.clusterID, resourceQuota: { hard: { cpu: "1" } } },
    } as KubeObject);
    const two = await cli(["delete", "virtualnode", "milan-big"]);
    expect(two.stderr).toContain(
      `2 VirtualNodes are named milan-big: elsewhere/milan-big (peering milan), ${TENANT}/milan-big (peering milan); pass --namespace to pick one`,
    );
    expect(two.code).toBe(1);
    expect((await virtualNodes()).filter((v) => v.metadata.name === "milan-big")).toHaveLength(2);
    const r = await cli(["delete", "virtualnode", "milan-big", "--namespace", "elsewhere"]);
    expect(r.stderr).toContain("Virtual node milan-big drained and deleted");
    expect(r.code).toBe(0);
    expect(await find("milan-big", "elsewhere")).toBeUndefined();
    expect(await find("milan-big")).toBeDefined();
  });

  test("waits while the drain finalizer is there, showing the Draining message, and returns once it is removed", async () => {
    // The controller's finalizer, as it adds it to every VirtualNode it handles.
    await client.mergePatch(VirtualNodeResource, "milan-small", TENANT, {
      metadata: { finalizers: [VIRTUAL_NODE_FINALIZER] },
    });
    const run = background(["delete", "virtualnode", "milan-small", "--remote-cluster-name", "milan"]);
    await waitFor(
      "the VirtualNode marked for deletion",
      async () => (await find("milan-small"))?.metadata.deletionTimestamp,
    );
    await waitFor("liqoctl waiting for the drain", () => run.stderr().includes("Draining virtual node milan-small"));
    await setStatus("milan-small", { conditions: [ready("False", "Draining", "2 pods left")] });
    await waitFor("liqoctl showing the drain's progress", () =>
      run.stderr().includes("Draining virtual node milan-small (2 pods left)"),
    );
    expect(run.running()).toBe(true);
    expect(await find("milan-small")).toBeDefined();
    // The drain is done: the controller removes its finalizer and the object goes.
    await client.mergePatch(VirtualNodeResource, "milan-small", TENANT, { metadata: { finalizers: null } });
    const r = await run.done;
    expect(r.stderr).toContain(
      `VirtualNode ${TENANT}/milan-small deleted; the controller manager drains node milan-small`,
    );
    expect(r.stderr).toContain("Virtual node milan-small drained and deleted");
    expect(r.code).toBe(0);
    expect(await find("milan-small")).toBeUndefined();
  });

  test("a drain that does not end: the timeout names the condition and the finalizer", async () => {
    await client.mergePatch(VirtualNodeResource, "milan-gpu", TENANT, {
      metadata: { finalizers: [VIRTUAL_NODE_FINALIZER] },
    });
    await setStatus("milan-gpu", { conditions: [ready("False", "Draining", "1 pod left")] });
    const r = await cli(["delete", "virtualnode", "milan-gpu", "--timeout", "2s"]);
    expect(r.stderr).toContain(
      `ERROR VirtualNode ${TENANT}/milan-gpu is still there after 2s: Ready is False (Draining): 1 pod left; its finalizer ${VIRTUAL_NODE_FINALIZER} goes once the node is drained`,
    );
    expect(r.code).toBe(1);
    expect((await find("milan-gpu"))?.metadata.deletionTimestamp).toBeDefined();
    await removeVirtualNode("milan-gpu");
  });
});
