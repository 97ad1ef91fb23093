// The quick start, end to end, as the README's main command runs it: liqo's roles as processes,
// a namespace offloaded with liqoctl, a pod on the virtual node running in the provider.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { ShadowPodResource } from "../../core/apis/index.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { runQuickstart, show, type Quickstart } from "../quickstart/quickstart.ts";
import { reapOrphanRigs, rigDown } from "../rig/rig.ts";
import { testRigRoot } from "../rig/testing.ts";
import { inCidr } from "../support/cidr.ts";
import { waitFor } from "../support/wait.ts";

let q: Quickstart;
let dir: string;
type Pod = KubeObject & { spec: { nodeName?: string }; status?: { phase?: string; podIP?: string } };

beforeAll(async () => {
  mkdirSync(testRigRoot, { recursive: true });
  await reapOrphanRigs(testRigRoot);
  dir = mkdtempSync(join(testRigRoot, "quickstart-"));
  q = await runQuickstart({ dir, owner: process.pid });
}, 600_000);

afterAll(async () => {
  if (dir) await rigDown(dir);
});

async function kubectl(cluster: string, ...args: string[]) {
  const proc = Bun.spawn([q.kubectl, `--kubeconfig=${q.kubeconfig(cluster)}`, ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { out, err, code: await proc.exited };
}

test("nginx-remote runs on the virtual node, in milan, with milan's pod IP", async () => {
  const local = await q.rome.get<Pod>(Resources.pods, "nginx-remote", "liqo-demo");
  expect(local.spec.nodeName).toBe("liqo-milan");
  expect(local.status?.phase).toBe("Running");
  const milan = q.rig.clusters.find((c) => c.name === "milan")!;
  expect(inCidr(local.status!.podIP!, milan.podCIDR)).toBe(true);
  const shadows = await q.milan.list(ShadowPodResource);
  const shadow = shadows.items.find((s) => s.metadata.name === "nginx-remote");
  expect(shadow?.metadata.namespace).toMatch(/^liqo-demo-rome-[0-9a-f]{6}$/);
  const remote = await q.milan.get<Pod>(Resources.pods, "nginx-remote", shadow!.metadata.namespace);
  expect(remote.status?.podIP).toBe(local.status!.podIP);
  const localPod = await q.rome.get<Pod>(Resources.pods, "nginx-local", "liqo-demo");
  expect(localPod.spec.nodeName).toMatch(/^rome-worker-/);
});

test("kubectl logs and exec reach the offloaded pod through the virtual kubelet", async () => {
  const logs = await kubectl("rome", "logs", "-n", "liqo-demo", "nginx-remote");
  expect(logs.code).toBe(0);
  expect(logs.out).toContain("cluster milan");
  const exec = await kubectl("rome", "exec", "-n", "liqo-demo", "nginx-remote", "--", "echo", "hello from milan");
  expect(exec.err).toBe("");
  expect(exec.out.trim()).toBe("hello from milan");
});

test("the Service is reflected, with the local endpoint and without the one already in milan", async () => {
  const twin = (await q.milan.list(ShadowPodResource)).items[0]!.metadata.namespace!;
  await waitFor("the reflected Service", () => q.milan.find(Resources.services, "liqo-demo", twin));
  const localIp = (await q.rome.get<Pod>(Resources.pods, "nginx-local", "liqo-demo")).status!.podIP!;
  const remoteIp = (await q.rome.get<Pod>(Resources.pods, "nginx-remote", "liqo-demo")).status!.podIP!;
  const reflected = await waitFor("the reflected EndpointSlice", async () => {
    const slices = await q.milan.list<any>(Resources.endpointSlices, { namespace: twin, labelSelector: "liqo.io/managed-by=reflection" });
    // milan's EndpointSlice controller copies the reflected Service's labels onto its own slice
    // (owned by the Service there); ours carries no owner reference.
    return slices.items.find((s: any) => !s.metadata.ownerReferences?.length);
  });
  const addresses = reflected.endpoints.flatMap((e: any) => e.addresses);
  expect(addresses).toContain(localIp);
  expect(addresses).not.toContain(remoteIp);
});

test("the printed summary shows the peering, the virtual node and the pods", async () => {
  const text = await show(q);
  expect(text).toMatch(/milan\s+Established\s+None\s+None\s+Established/);
  expect(text).toMatch(/liqo-milan\s+Ready\s+agent/);
  expect(text).toMatch(/nginx-remote\s+1\/1\s+Running.*liqo-milan/);
});

test("liqoctl unoffload namespace removes the twin namespace from milan", async () => {
  const twin = (await q.milan.list(ShadowPodResource)).items[0]!.metadata.namespace!;
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "../../cli/main.ts"), "unoffload", "namespace", "liqo-demo", `--kubeconfig=${q.kubeconfig("rome")}`], { stdout: "pipe", stderr: "pipe" });
  const err = await new Response(proc.stderr).text();
  expect(await proc.exited).toBe(0);
  expect(err).toContain("Unoffloading of namespace liqo-demo completed");
  await waitFor("the twin namespace to be gone", async () => {
    const ns = await q.milan.find(Resources.namespaces, twin);
    return !ns || !!ns.metadata.deletionTimestamp;
  }, { timeoutMs: 120_000 });
}, 180_000);
