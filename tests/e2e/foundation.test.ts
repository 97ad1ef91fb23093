// Foundation on a real rig: two clusters, workloads on kwok nodes, EndpointSlices, an informer
// that survives an API server restart, typed errors for bad kubeconfigs, SSA and UID deletes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { createInformer } from "../../core/kube/informer.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { restartApiServer } from "../rig/cluster.ts";
import { isAlive } from "../rig/process.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { inCidr } from "../support/cidr.ts";
import { waitFor } from "../support/wait.ts";

let rig: TestRig;
const scratch = mkdtempSync(join(tmpdir(), "foundation-e2e-"));

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 2 });
}, 600_000);

afterAll(async () => {
  // Including the API server restarted mid-test: nothing may outlive the rig.
  const pids = rig ? rig.clusters.flatMap((c) => Object.values(c.pids) as number[]) : [];
  await rig?.down();
  expect(pids.filter(isAlive)).toEqual([]);
  rmSync(scratch, { recursive: true, force: true });
});

type Pod = KubeObject & { spec: { nodeName?: string }; status?: { phase?: string; podIP?: string } };
type Slice = KubeObject & { endpoints?: { addresses: string[] }[] };
type ConfigMap = KubeObject & { data?: Record<string, string> };

async function ensureNamespace(name: string, cluster: string) {
  const client = rig.client(cluster);
  if (!(await client.find(Resources.namespaces, name)))
    await client.create(Resources.namespaces, { metadata: { name } });
}

describe.each(["rome", "milan"])("cluster %s", (name) => {
  test("a Deployment of 3 replicas runs 3 pods on kwok nodes with IPs in the pod CIDR, and its Service gets exactly those endpoints", async () => {
    const client = rig.client(name);
    const cluster = rig.clusters.find((c) => c.name === name)!;
    await ensureNamespace("web", name);
    const labels = { app: "hello" };
    await client.apply(
      Resources.deployments,
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "hello", namespace: "web" },
        spec: {
          replicas: 3,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: { containers: [{ name: "nginx", image: "nginx", ports: [{ containerPort: 80 }] }] },
          },
        },
      },
      { fieldManager: "e2e" },
    );
    await client.apply(
      Resources.services,
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "hello", namespace: "web" },
        spec: { selector: labels, ports: [{ port: 80, targetPort: 80 }] },
      },
      { fieldManager: "e2e" },
    );

    const pods = await waitFor(
      "3 Running pods with IPs",
      async () => {
        const list = await client.list<Pod>(Resources.pods, { namespace: "web", labelSelector: "app=hello" });
        const running = list.items.filter((p) => p.status?.phase === "Running" && p.status.podIP);
        return running.length === 3 ? running : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const nodes = new Set((await client.list(Resources.nodes)).items.map((n) => n.metadata.name));
    for (const pod of pods) {
      expect(nodes.has(pod.spec.nodeName)).toBe(true);
      expect(inCidr(pod.status!.podIP!, cluster.podCIDR)).toBe(true);
    }
    const ips = pods.map((p) => p.status!.podIP!).sort();
    expect(new Set(ips).size).toBe(3);

    const endpoints = await waitFor(
      "an EndpointSlice with the 3 pod IPs",
      async () => {
        const slices = await client.list<Slice>(Resources.endpointSlices, {
          namespace: "web",
          labelSelector: "kubernetes.io/service-name=hello",
        });
        const addrs = slices.items.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses)).sort();
        return addrs.length === 3 ? addrs : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(endpoints).toEqual(ips);
  });
});

test("the two clusters have disjoint pod and service CIDRs and separate PKIs", () => {
  const [a, b] = rig.clusters;
  expect(a!.podCIDR).not.toBe(b!.podCIDR);
  expect(a!.serviceCIDR).not.toBe(b!.serviceCIDR);
  expect(a!.pki.ca.cert).not.toBe(b!.pki.ca.cert);
});

test("an informer follows 500 ConfigMaps created, updated and deleted, across an API server restart, to the exact final state", async () => {
  const cluster = rig.clusters.find((c) => c.name === "rome")!;
  const client = rig.client("rome");
  await ensureNamespace("informer", "rome");
  const informer = createInformer<ConfigMap>({
    client,
    resource: Resources.configMaps,
    namespace: "informer",
    labelSelector: "test=informer",
    backoffBaseMs: 100,
    backoffMaxMs: 1000,
  });
  let events = 0;
  informer.on({ add: () => events++, update: () => events++, delete: () => events++ });
  informer.start();
  await informer.waitForSync(30_000);

  const expected = new Map<string, string>();
  const name = (i: number) => `cm-${String(i).padStart(3, "0")}`;
  // Writes retry while the API server is down: the point is what the informer sees, not the writer.
  const retry = async (fn: () => Promise<unknown>) =>
    waitFor(
      "a write to succeed",
      async () => {
        await fn();
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  async function inParallel(items: number[], fn: (i: number) => Promise<unknown>) {
    for (let at = 0; at < items.length; at += 16)
      await Promise.all(items.slice(at, at + 16).map((i) => retry(() => fn(i))));
  }
  const all = Array.from({ length: 500 }, (_, i) => i);
  const create = (i: number) =>
    client.apply(
      Resources.configMaps,
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: name(i), namespace: "informer", labels: { test: "informer" } },
        data: { v: "1" },
      },
      { fieldManager: "e2e" },
    );

  await inParallel(all.slice(0, 250), create);
  await restartApiServer(cluster, rig.bin);
  await inParallel(all.slice(250), create);
  for (const i of all) expected.set(`informer/${name(i)}`, "1");
  const updated = all.filter((i) => i % 2 === 0);
  await inParallel(updated, (i) => client.mergePatch(Resources.configMaps, name(i), "informer", { data: { v: "2" } }));
  for (const i of updated) expected.set(`informer/${name(i)}`, "2");
  const deleted = all.filter((i) => i % 5 === 0);
  await inParallel(deleted, (i) => client.delete(Resources.configMaps, name(i), "informer"));
  for (const i of deleted) expected.delete(`informer/${name(i)}`);

  const snapshot = () =>
    new Map(informer.list().map((cm) => [`${cm.metadata.namespace}/${cm.metadata.name}`, cm.data?.v ?? ""]));
  await waitFor(
    "the informer's cache to match the expected final state",
    () => {
      const got = snapshot();
      return got.size === expected.size && [...expected].every(([k, v]) => got.get(k) === v);
    },
    {
      timeoutMs: 60_000,
      describe: () => ({ size: informer.list().length, expected: expected.size, stats: informer.stats }),
    },
  );

  // The server agrees with the cache.
  const server = await client.list<ConfigMap>(Resources.configMaps, {
    namespace: "informer",
    labelSelector: "test=informer",
  });
  expect(new Map(server.items.map((cm) => [`informer/${cm.metadata.name}`, cm.data?.v ?? ""]))).toEqual(snapshot());
  expect(expected.size).toBe(400);
  // The restart really cut the watch: the informer had to reconnect (and maybe relist).
  expect(informer.stats.watchRestarts + informer.stats.failures).toBeGreaterThan(0);
  expect(events).toBeGreaterThanOrEqual(500 + 250 + 100);
  await informer.stop();
}, 300_000);

describe("server-side apply and UID-preconditioned delete", () => {
  test("apply is idempotent and owned by its field manager; a delete with another UID is refused", async () => {
    const client = rig.client("milan");
    await ensureNamespace("ssa", "milan");
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "owned", namespace: "ssa" }, data: { a: "1" } };
    const first = await client.apply(Resources.configMaps, cm, { fieldManager: "liqo-test" });
    const second = await client.apply(Resources.configMaps, cm, { fieldManager: "liqo-test" });
    expect(second.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
    const managers = (second.metadata.managedFields as { manager: string }[]).map((m) => m.manager);
    expect(managers).toContain("liqo-test");

    const wrong = client.delete(Resources.configMaps, "owned", "ssa", { uid: "00000000-0000-0000-0000-000000000000" });
    expect(wrong).rejects.toBeInstanceOf(KubeApiError);
    await wrong.catch((err: KubeApiError) => {
      expect(err.status).toBe(409);
      expect(err.key).toBe("ssa/owned");
    });
    expect(await client.find(Resources.configMaps, "owned", "ssa")).toBeDefined();
    expect(await client.delete(Resources.configMaps, "owned", "ssa", { uid: first.metadata.uid })).toBe(true);
    expect(await client.delete(Resources.configMaps, "owned", "ssa")).toBe(false);
  });

  test("a NotFound is a typed error with the object's key", async () => {
    const err = await rig
      .client("rome")
      .get(Resources.configMaps, "missing", "default")
      .catch((e) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.status).toBe(404);
    expect(err.reason).toBe("NotFound");
    expect(err.key).toBe("default/missing");
  });
});

describe("bad kubeconfigs give clear typed errors", () => {
  test("a wrong CA: the server's certificate is rejected, not trusted", async () => {
    const [rome, milan] = rig.clusters;
    // rome's server with milan's CA and credentials.
    const text = (await Bun.file(milan!.kubeconfig).text()).replace(milan!.server, rome!.server);
    const path = join(scratch, "wrong-ca");
    writeFileSync(path, text);
    const err = await createKubeClient({ kubeconfig: path })
      .list(Resources.namespaces)
      .catch((e) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.reason).toBe("TLSVerificationFailed");
    expect(err.message).toContain("not signed by the certificate-authority-data");
  });

  test("an unreachable server names the URL and what to check", async () => {
    const text = (await Bun.file(rig.clusters[0]!.kubeconfig).text()).replace(
      rig.clusters[0]!.server,
      "https://127.0.0.1:1",
    );
    const path = join(scratch, "unreachable");
    writeFileSync(path, text);
    const err = await createKubeClient({ kubeconfig: path })
      .list(Resources.namespaces)
      .catch((e) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.status).toBe(0);
    expect(err.reason).toBe("Unreachable");
    expect(err.message).toContain("https://127.0.0.1:1");
  });

  test("a client certificate from another cluster's CA is refused with 401", async () => {
    const [rome, milan] = rig.clusters;
    // rome's CA (so TLS verifies the server) but milan's client certificate.
    // biome-ignore lint/suspicious/noExplicitAny: a kubeconfig parsed from YAML, walked by path
    const romeCfg = Bun.YAML.parse(await Bun.file(rome!.kubeconfig).text()) as any;
    // biome-ignore lint/suspicious/noExplicitAny: a kubeconfig parsed from YAML, walked by path
    const milanCfg = Bun.YAML.parse(await Bun.file(milan!.kubeconfig).text()) as any;
    romeCfg.users[0].user = milanCfg.users[0].user;
    const path = join(scratch, "foreign-cert");
    writeFileSync(path, JSON.stringify(romeCfg));
    const err = await createKubeClient({ kubeconfig: path })
      .list(Resources.namespaces)
      .catch((e) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.status).toBe(401);
  });

  test("the rig's own client certificate is accepted as cluster admin (client-certificate TLS from Bun)", async () => {
    const review = await rig
      .client("rome")
      .request<{ status: { userInfo: { username: string; groups: string[] } } }>(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        { body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } },
      );
    expect(review.status.userInfo.username).toBe("rig-admin");
    expect(review.status.userInfo.groups).toContain("system:masters");
  });
});
