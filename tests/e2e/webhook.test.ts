// The pod mutating webhook behind a real API server: pods in offloaded namespaces get the
// constraints of the pod offloading strategy; other namespaces are untouched; bad reviews are refused.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installCrds, NamespaceOffloadingResource, ShadowPodResource } from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { registerPodWebhook, startPodWebhook, type PodWebhook } from "../../core/webhook/server.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { createCa, sign } from "../rig/pki.ts";

let rig: TestRig;
let client: KubeClient;
let webhook: PodWebhook;
const dir = mkdtempSync(join(tmpdir(), "webhook-e2e-"));

// biome-ignore lint/suspicious/noExplicitAny: pod specs the webhook mutated, read back and asserted on a few fields
type Pod = KubeObject & { spec: any };

async function offloadedNamespace(name: string, strategy: string, clusterSelector?: unknown) {
  await client.create(Resources.namespaces, { metadata: { name, labels: { "liqo.io/scheduling-enabled": "true" } } });
  await client.create(NamespaceOffloadingResource, {
    apiVersion: "offloading.liqo.io/v1alpha1",
    kind: "NamespaceOffloading",
    metadata: { name: "offloading", namespace: name },
    spec: {
      namespaceMappingStrategy: "DefaultName",
      podOffloadingStrategy: strategy,
      clusterSelector: clusterSelector ?? { nodeSelectorTerms: [] },
    },
  });
  // What the NamespaceOffloading controller (not running in this test) would report.
  await client.mergePatch(
    NamespaceOffloadingResource,
    "offloading",
    name,
    { status: { offloadingPhase: "Ready" } },
    "status",
  );
}

const pod = (name: string, namespace: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace },
  spec: { containers: [{ name: "c", image: "nginx" }] },
});
const terms = (p: Pod) =>
  p.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, nodes: 1 });
  client = rig.client(rig.clusters[0]!.name);
  await installCrds(client);
  // A serving certificate for 127.0.0.1 from a throwaway CA, as the chart would generate.
  const ca = createCa(dir, "ca", "/CN=webhook-ca");
  sign(dir, ca, "tls", "/CN=liqo-webhook", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  webhook = await startPodWebhook({ client, tls: { cert: join(dir, "tls.crt"), key: join(dir, "tls.key") } });
  await registerPodWebhook(client, {
    url: webhook.url,
    caBundle: readFileSync(join(dir, "ca.crt")).toString("base64"),
  });
  await offloadedNamespace("remote-only", "Remote");
  await offloadedNamespace("local-only", "Local");
  await offloadedNamespace("north", "LocalAndRemote", {
    nodeSelectorTerms: [{ matchExpressions: [{ key: "topology.liqo.io/region", operator: "In", values: ["north"] }] }],
  });
  await client.create(Resources.namespaces, { metadata: { name: "untouched" } });
  await client.create(Resources.namespaces, {
    metadata: { name: "labelled-only", labels: { "liqo.io/scheduling-enabled": "true" } },
  });
}, 600_000);

afterAll(async () => {
  await webhook?.stop();
  await rig?.down();
  rmSync(dir, { recursive: true, force: true });
});

describe("pod offloading strategies through the webhook", () => {
  test("Remote: the pod tolerates the virtual-node taint and must land on a virtual node", async () => {
    // The webhook's informer may not have seen the NamespaceOffloading yet: retry until it has.
    const p = await waitFor("a mutated pod", async () => {
      await client.delete(Resources.pods, "a", "remote-only", { gracePeriodSeconds: 0 });
      const created = await client.create<Pod>(Resources.pods, pod("a", "remote-only"));
      return terms(created) ? created : undefined;
    });
    expect(p.spec.tolerations).toContainEqual({
      key: "virtual-node.liqo.io/not-allowed",
      operator: "Exists",
      effect: "NoExecute",
    });
    expect(terms(p)).toEqual([
      { matchExpressions: [{ key: "liqo.io/type", operator: "In", values: ["virtual-node"] }] },
    ]);
  });

  test("Local: the pod must avoid virtual nodes and gets no toleration", async () => {
    const p = await client.create<Pod>(Resources.pods, pod("b", "local-only"));
    expect(terms(p)).toEqual([
      { matchExpressions: [{ key: "liqo.io/type", operator: "NotIn", values: ["virtual-node"] }] },
    ]);
    // biome-ignore lint/suspicious/noExplicitAny: pod specs the webhook mutated, read back and asserted on a few fields
    expect((p.spec.tolerations ?? []).some((t: any) => t.key === "virtual-node.liqo.io/not-allowed")).toBe(false);
  });

  test("LocalAndRemote with a cluster selector: local nodes or the selected virtual nodes", async () => {
    const p = await client.create<Pod>(Resources.pods, pod("c", "north"));
    expect(terms(p)).toEqual([
      { matchExpressions: [{ key: "liqo.io/type", operator: "NotIn", values: ["virtual-node"] }] },
      {
        matchExpressions: [
          { key: "topology.liqo.io/region", operator: "In", values: ["north"] },
          { key: "liqo.io/type", operator: "In", values: ["virtual-node"] },
        ],
      },
    ]);
  });

  test("a pod a ShadowPod controls (it arrived through a peering) is left as it is: it is not offloaded again", async () => {
    // Clusters peered both ways: this namespace is offloaded here and is also a peer's twin namespace.
    const shadow = await client.create<KubeObject>(ShadowPodResource, {
      apiVersion: "virtualkubelet.liqo.io/v1alpha1",
      kind: "ShadowPod",
      metadata: { name: "from-peer", namespace: "remote-only" },
      spec: { pod: pod("from-peer", "remote-only").spec },
    });
    const owned = {
      ...pod("from-peer", "remote-only"),
      metadata: {
        name: "from-peer",
        namespace: "remote-only",
        ownerReferences: [
          {
            apiVersion: "virtualkubelet.liqo.io/v1alpha1",
            kind: "ShadowPod",
            name: "from-peer",
            uid: shadow.metadata.uid!,
            controller: true,
          },
        ],
      },
    };
    const p = await client.create<Pod>(Resources.pods, owned);
    expect(p.spec.affinity).toBeUndefined();
    // biome-ignore lint/suspicious/noExplicitAny: pod specs the webhook mutated, read back and asserted on a few fields
    expect((p.spec.tolerations ?? []).some((t: any) => t.key === "virtual-node.liqo.io/not-allowed")).toBe(false);
    // An owner that is not a controlling ShadowPod does not exempt a pod: it is mutated as any other.
    const other = await client.create<Pod>(Resources.pods, {
      ...owned,
      metadata: {
        ...owned.metadata,
        name: "not-from-peer",
        ownerReferences: [{ ...owned.metadata.ownerReferences[0]!, controller: false }],
      },
    });
    expect(terms(other)).toEqual([
      { matchExpressions: [{ key: "liqo.io/type", operator: "In", values: ["virtual-node"] }] },
    ]);
  });

  test("a namespace that is not offloaded is left alone", async () => {
    const p = await client.create<Pod>(Resources.pods, pod("d", "untouched"));
    expect(p.spec.affinity).toBeUndefined();
    // biome-ignore lint/suspicious/noExplicitAny: pod specs the webhook mutated, read back and asserted on a few fields
    expect((p.spec.tolerations ?? []).some((t: any) => t.key === "virtual-node.liqo.io/not-allowed")).toBe(false);
  });
});

describe("namespaces labelled for scheduling before their offloading is ready", () => {
  test("a pod is refused with a message saying why and what to do", async () => {
    const err = await client.create(Resources.pods, pod("early", "labelled-only")).catch((e) => e);
    expect(err.status).toBe(403);
    expect(err.message).toContain("not offloaded");
    expect(err.message).toContain("liqoctl offload namespace labelled-only");
    expect(await client.find(Resources.pods, "early", "labelled-only")).toBeUndefined();
  });

  test("once the NamespaceOffloading has a phase, the same pod is accepted and mutated", async () => {
    await client.create(NamespaceOffloadingResource, {
      apiVersion: "offloading.liqo.io/v1alpha1",
      kind: "NamespaceOffloading",
      metadata: { name: "offloading", namespace: "labelled-only" },
      spec: {
        namespaceMappingStrategy: "DefaultName",
        podOffloadingStrategy: "Remote",
        clusterSelector: { nodeSelectorTerms: [] },
      },
    });
    const pending = await waitFor("a refusal while the offloading is being set up", async () => {
      const e = await client.create(Resources.pods, pod("early", "labelled-only")).catch((x) => x);
      return e?.message?.includes("being set up") ? e : undefined;
    });
    expect(pending.status).toBe(403);
    await client.mergePatch(
      NamespaceOffloadingResource,
      "offloading",
      "labelled-only",
      { status: { offloadingPhase: "Ready" } },
      "status",
    );
    const p = await waitFor("the pod to be accepted", async () =>
      client.create<Pod>(Resources.pods, pod("early", "labelled-only")).catch(() => undefined),
    );
    expect(terms(p)).toEqual([
      { matchExpressions: [{ key: "liqo.io/type", operator: "In", values: ["virtual-node"] }] },
    ]);
  });
});

describe("bad input", () => {
  const post = (body: string) =>
    fetch(`${webhook.url}/mutate/pods`, { method: "POST", body, tls: { rejectUnauthorized: false } } as RequestInit);
  test("a body that is not JSON is a 400 saying what is expected", async () => {
    const res = await post("{nope");
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toContain("AdmissionReview");
  });
  test("a review without a request is a 400 naming the field", async () => {
    const res = await post(JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" }));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toContain("request");
  });
  test("an unknown path is a 404 naming the right one", async () => {
    const res = await fetch(`${webhook.url}/mutate/nodes`, {
      method: "POST",
      body: "{}",
      tls: { rejectUnauthorized: false },
    } as RequestInit);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { message: string }).message).toContain("/mutate/pods");
  });
});
