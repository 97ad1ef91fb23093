// The quick start, end to end, as the README's main command runs it: liqo installed with liqoctl
// and the chart (Helm), liqo's roles as local processes under the chart's ServiceAccounts, a
// namespace offloaded with liqoctl, a pod on the virtual node running in the provider.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { ResourceRequestResource, ShadowPodResource } from "../../core/apis/index.ts";
import { DISCOVERY_CLUSTER_ID_LABEL, TENANT_NAMESPACE_LABEL } from "../../core/apis/labels.ts";
import { findHelm } from "../../cli/install/helm.ts";
import { createKubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { runQuickstart, show, type Quickstart } from "../quickstart/quickstart.ts";
import { liqoctl, peerOutOfBand } from "../quickstart/install.ts";
import { loadRig, reapOrphanRigs, rigDown, type Rig } from "../rig/rig.ts";
import { testRigRoot } from "../rig/testing.ts";
import { inCidr } from "../support/cidr.ts";
import { waitFor } from "../support/wait.ts";
import { kubectlOn } from "../support/kubectl.ts";

let q: Quickstart;
let dir: string;
const Deployments = Resources.deployments;
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

const kubectl = (cluster: string, ...args: string[]) => kubectlOn(q, cluster, ...args);

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
    // biome-ignore lint/suspicious/noExplicitAny: EndpointSlices read back from the cluster, asserted on their addresses
    const slices = await q.milan.list<any>(Resources.endpointSlices, {
      namespace: twin,
      labelSelector: "liqo.io/managed-by=reflection",
    });
    // milan's EndpointSlice controller copies the reflected Service's labels onto its own slice
    // (owned by the Service there); ours carries no owner reference.
    // biome-ignore lint/suspicious/noExplicitAny: EndpointSlices read back from the cluster, asserted on their addresses
    return slices.items.find((s: any) => !s.metadata.ownerReferences?.length);
  });
  // biome-ignore lint/suspicious/noExplicitAny: EndpointSlices read back from the cluster, asserted on their addresses
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
  const proc = Bun.spawn(
    [
      process.execPath,
      join(import.meta.dir, "../../cli/main.ts"),
      "unoffload",
      "namespace",
      "liqo-demo",
      `--kubeconfig=${q.kubeconfig("rome")}`,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const err = await new Response(proc.stderr).text();
  expect(await proc.exited).toBe(0);
  expect(err).toContain("Unoffloading of namespace liqo-demo completed");
  await waitFor(
    "the twin namespace to be gone",
    async () => {
      const ns = await q.milan.find(Resources.namespaces, twin);
      return !ns || !!ns.metadata.deletionTimestamp;
    },
    { timeoutMs: 120_000 },
  );
}, 180_000);

describe("liqo as the chart installed it", () => {
  test.each(["rome", "milan"])(
    "%s: helm lists the liqo release, deployed, its Deployments scaled to zero",
    async (cluster) => {
      const proc = Bun.spawn(
        [findHelm(), "list", "-n", "liqo", "--output", "json", `--kubeconfig=${q.kubeconfig(cluster)}`],
        { stdout: "pipe", stderr: "pipe" },
      );
      const releases = JSON.parse(await new Response(proc.stdout).text()) as {
        name: string;
        status: string;
        chart: string;
      }[];
      expect(releases.map((r) => [r.name, r.status])).toEqual([["liqo", "deployed"]]);
      const client = cluster === "rome" ? q.rome : q.milan;
      const deployments = (
        await client.list<KubeObject & { spec: { replicas: number } }>(Deployments, { namespace: "liqo" })
      ).items;
      expect(deployments.map((d) => [d.metadata.name, d.spec.replicas]).sort()).toEqual(
        ["liqo-auth", "liqo-controller-manager", "liqo-gateway", "liqo-network-manager", "liqo-webhook"].map((n) => [
          n,
          0,
        ]),
      );
    },
  );

  test("each local role runs with its ServiceAccount's kubeconfig, and the API server sees that ServiceAccount", async () => {
    const processes = loadRig(dir)?.extras ?? [];
    const expected = {
      "milan/auth": "liqo-auth",
      "milan/controller-manager": "liqo-controller-manager",
      "rome/controller-manager": "liqo-controller-manager",
      "rome/webhook": "liqo-webhook",
    };
    for (const [name, sa] of Object.entries(expected)) {
      const p = processes.find((x) => x.name === name);
      expect(p).toBeDefined();
      const cmdline = readFileSync(`/proc/${p!.pid}/cmdline`, "utf8").split("\0");
      const [cluster, role] = name.split("/") as ["rome" | "milan", string];
      const kubeconfig = q.installed[cluster].kubeconfigs[role]!;
      expect(cmdline).toContain(`--kubeconfig=${kubeconfig}`);
      const review = await createKubeClient({ kubeconfig }).request<{ status: { userInfo: { username: string } } }>(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {
          body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
        },
      );
      expect(review.status.userInfo.username).toBe(`system:serviceaccount:liqo:${sa}`);
    }
  });

  test("the chart's RBAC bounds them: the webhook may not read Secrets, the controller manager may not write RBAC", async () => {
    const cm = createKubeClient({ kubeconfig: q.installed.rome.kubeconfigs["controller-manager"]! });
    const webhook = createKubeClient({ kubeconfig: q.installed.rome.kubeconfigs.webhook! });
    const denied = async (what: Promise<unknown>) =>
      what.then(
        () => 0,
        (err) => (err instanceof KubeApiError ? err.status : -1),
      );
    expect(await denied(webhook.list(Resources.secrets, { namespace: "kube-system" }))).toBe(403);
    expect(
      await denied(
        cm.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
          body: {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRole",
            metadata: { name: "quickstart-escalation" },
            rules: [],
          },
        }),
      ),
    ).toBe(403);
    // ...while what its controllers need is allowed (ShadowPods, cluster-wide).
    expect((await cm.list(ShadowPodResource)).items).toBeArray();
  });
});

describe("unpeer, then peer again, under the chart's RBAC", () => {
  test("liqoctl unpeer out-of-band milan: milan revokes rome's identity (binding, ServiceAccount, tenant namespace) and lets its ResourceRequest go; the printed peer command again: Established, liqo-milan Ready", async () => {
    const [romeC, milanC] = q.rig.clusters as [Rig["clusters"][number], Rig["clusters"][number]];
    const romeId = (await q.rome.get(Resources.namespaces, "kube-system")).metadata.uid!;
    const binding = `liqo-remote-twin-namespaces-${romeId}`;
    // What rome's peering holds in milan, by what milan's auth service issued.
    const inMilan = async () => ({
      binding: !!(await q.milan.find(Resources.clusterRoleBindings, binding)),
      tenantNamespaces: (
        await q.milan.list(Resources.namespaces, {
          labelSelector: `${DISCOVERY_CLUSTER_ID_LABEL}=${romeId},${TENANT_NAMESPACE_LABEL}`,
        })
      ).items.map((n) => n.metadata.name),
      ...(await (async () => {
        const rrs = (await q.milan.list(ResourceRequestResource, { labelSelector: `liqo.io/originID=${romeId}` }))
          .items;
        // A ResourceRequest being deleted: its peering's identity is revoked before it goes.
        return { resourceRequests: rrs.length, leaving: rrs.filter((r) => r.metadata.deletionTimestamp).length };
      })()),
    });
    const unpeer = async () => {
      const r = Bun.spawnSync([
        ...liqoctl,
        "unpeer",
        "out-of-band",
        "milan",
        "--timeout=240s",
        `--kubeconfig=${romeC.kubeconfig}`,
      ]);
      expect({ code: r.exitCode, err: r.stderr.toString() }).toMatchObject({ code: 0 });
      expect(r.stderr.toString()).toContain("Successfully unpeered from cluster milan");
    };
    const before = await inMilan();
    // rome sends no reflector plugin and milan's chart does not grant them: nothing to warn about.
    const grantWarnings = (
      await q.milan.list<KubeObject & { reason?: string; message?: string }>(Resources.events, {
        namespace: before.tenantNamespaces[0],
      })
    ).items.filter((e) => e.reason === "ReflectorPluginGrantFailed");
    expect(grantWarnings.map((e) => e.message)).toEqual([]);
    expect(before.binding).toBe(true);
    expect(before.tenantNamespaces.length).toBe(1);
    expect(before.resourceRequests).toBe(1);

    await unpeer();
    // milan's controller manager revokes with the chart's rights: nothing of rome's identity is left.
    await waitFor(
      "milan to revoke rome's identity and release its ResourceRequest",
      async () => {
        const now = await inMilan();
        return !now.binding && now.tenantNamespaces.length === 0 && now.resourceRequests === 0;
      },
      { timeoutMs: 120_000, describe: inMilan },
    );

    await peerOutOfBand(romeC, milanC, () => {}, ["--no-networking"]);
    await waitFor(
      "liqo-milan Ready after peering again",
      async () => {
        const n = await q.rome.find<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
          Resources.nodes,
          "liqo-milan",
        );
        return n?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      },
      { timeoutMs: 180_000 },
    );
    const fc = await kubectl("rome", "get", "foreignclusters", "milan", "--no-headers");
    expect(fc.out).toMatch(/^milan\s+Established\s/m);
    expect((await inMilan()).binding).toBe(true);

    // As a user does it: unpeer, and at once the peer command again, while milan is still revoking
    // the previous identity. The new peering must not be issued that identity (it would be revoked
    // under it): it waits, then comes up with a fresh one.
    const romeIdentity = async () =>
      (
        await q.milan.list(Resources.serviceAccounts, {
          namespace: (await inMilan()).tenantNamespaces[0],
          labelSelector: `${DISCOVERY_CLUSTER_ID_LABEL}=${romeId}`,
        })
      ).items.map((sa) => sa.metadata.uid);
    const identityBefore = await romeIdentity();
    expect(identityBefore.length).toBe(1);
    await unpeer();
    await peerOutOfBand(romeC, milanC, () => {}, ["--no-networking"]);
    const settled = await waitFor(
      "liqo-milan Ready and rome's identity in milan settled after the quick re-peer",
      async () => {
        const n = await q.rome.find<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
          Resources.nodes,
          "liqo-milan",
        );
        const now = await inMilan();
        const ready = n?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
        return ready &&
          now.binding &&
          now.tenantNamespaces.length === 1 &&
          now.resourceRequests === 1 &&
          now.leaving === 0
          ? now
          : undefined;
      },
      { timeoutMs: 240_000, describe: inMilan },
    );
    expect(settled.binding).toBe(true);
    const identityAfter = await romeIdentity();
    expect(identityAfter.length).toBe(1);
    expect(identityAfter).not.toEqual(identityBefore);
    // The previous peering is fully released (no ResourceRequest leaving, so its revocation is
    // over), and the new identity is still there: nothing revoked it under the new peering.
    expect(await romeIdentity()).toEqual(identityAfter);
    const fc2 = await kubectl("rome", "get", "foreignclusters", "milan", "--no-headers");
    expect(fc2.out).toMatch(/^milan\s+Established\s/m);
  }, 600_000);
});
