// The cluster views every role with a client serves (core/roles/admin-views-cluster.ts through
// serveAdmin): peerings, virtual nodes, offloaded namespaces, IPAM allocations and tunnels, read
// from a real API server with liqo's CRDs, shown as JSON and on the status page, behind a token;
// bad queries are problems; concurrent requests share one list.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ForeignClusterResource,
  installCrds,
  IpamStorageResource,
  NamespaceOffloadingResource,
  REMOTE_CLUSTER_ID_LABEL,
  TunnelEndpointResource,
  TYPE_LABEL,
  VIRTUAL_NODE_TYPE,
} from "../../core/apis/index.ts";
import {
  MILAN,
  sampleForeignCluster,
  sampleForeignClusterStatus,
  sampleIpamStorage,
  sampleNamespaceOffloading,
  sampleNamespaceOffloadingStatus,
  sampleTunnelEndpoint,
} from "../../core/apis/samples.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { silentLogger } from "../../core/log.ts";
import { createRegistry } from "../../core/metrics/index.ts";
import { serveAdmin } from "../../core/roles/shared.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";

const work = mkdtempSync(join(tmpdir(), "admin-cluster-"));
const artifacts = join(import.meta.dir, "../artifacts");
const TOKEN = "cluster-views-token-0123456789";
let rig: TestRig;
let client: KubeClient;
let adminClient: KubeClient;
let admin: Awaited<ReturnType<typeof serveAdmin>>;
const auth = { authorization: `Bearer ${TOKEN}` };
const get = (path: string) => fetch(`${admin.url}${path}`, { headers: auth });
// biome-ignore lint/suspicious/noExplicitAny: the admin views' JSON rows, asserted on a few fields
const view = async <T = any>(path: string): Promise<T> => {
  const res = await get(path);
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
};
const FIELD_MANAGER = { fieldManager: "admin-cluster-test", force: true };
const setStatus = (res: ResourceRef, obj: KubeObject, status: unknown) =>
  client.apply(
    res,
    {
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace },
      status,
    } as KubeObject,
    { ...FIELD_MANAGER, subresource: "status" },
  );

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["rome"], nodes: 1 });
  client = rig.client("rome");
  await installCrds(client);
  // The admin's own client, so its requests can be counted apart from the test's.
  adminClient = createKubeClient({ kubeconfig: rig.clusters[0]!.kubeconfig });
  writeFileSync(join(work, "token"), TOKEN);
  admin = await serveAdmin({
    args: { "admin-address": "127.0.0.1:0", "admin-token-file": join(work, "token") },
    registry: createRegistry(),
    logger: silentLogger,
    client: adminClient,
    title: "liqo test role",
    views: { tunnels: () => [{ own: true }] }, // a role's own view wins over the cluster view of that name
  });
}, 600_000);

afterAll(async () => {
  await admin?.stop();
  await rig?.down();
  rmSync(work, { recursive: true, force: true });
});

describe("cluster views", () => {
  test("empty cluster: every view answers an empty list, behind the token", async () => {
    expect((await fetch(`${admin.url}/views/peerings`)).status).toBe(401);
    const { views } = await view<{ views: string[] }>("/views");
    expect(views).toEqual([
      "ipam",
      "offloaded-namespaces",
      "peerings",
      "reflector-plugins",
      "tunnels",
      "virtual-nodes",
    ]);
    // Just-installed CRDs may answer 429 while their storage initialises: that view fails alone, then recovers.
    for (const name of ["peerings", "virtual-nodes", "offloaded-namespaces", "ipam", "reflector-plugins"])
      expect(await waitFor(`the ${name} view`, () => view<unknown[]>(`/views/${name}`))).toEqual([]);
    expect(await view("/views/tunnels")).toEqual([{ own: true }]);
  });

  test("peerings, virtual nodes, offloaded namespaces and IPAM show what the cluster holds", async () => {
    const tenant = sampleForeignClusterStatus().tenantNamespace.local;
    for (const ns of [tenant, "liqo-demo"]) await client.create(Resources.namespaces, { metadata: { name: ns } });
    const fc = await client.create(ForeignClusterResource, sampleForeignCluster() as KubeObject);
    await setStatus(ForeignClusterResource, fc, sampleForeignClusterStatus());
    const no = await client.create(NamespaceOffloadingResource, sampleNamespaceOffloading() as KubeObject, "liqo-demo");
    await setStatus(NamespaceOffloadingResource, no, sampleNamespaceOffloadingStatus());
    await client.create(IpamStorageResource, sampleIpamStorage() as KubeObject);
    await client.create(TunnelEndpointResource, sampleTunnelEndpoint() as KubeObject, tenant);
    const node = await client.create(Resources.nodes, {
      metadata: {
        name: "liqo-milan",
        labels: { [TYPE_LABEL]: VIRTUAL_NODE_TYPE, [REMOTE_CLUSTER_ID_LABEL]: MILAN.clusterID },
      },
      spec: { taints: [{ key: "virtual-node.liqo.io/not-allowed", value: "true", effect: "NoExecute" }] },
    } as KubeObject);
    await setStatus(
      Resources.nodes,
      { ...node, apiVersion: "v1", kind: "Node" },
      {
        capacity: { cpu: "4", memory: "8Gi", pods: "110" },
        allocatable: { cpu: "4", memory: "8Gi", pods: "110" },
        conditions: [
          {
            type: "Ready",
            status: "True",
            reason: "RemoteReachable",
            message: "remote API server answers",
            lastHeartbeatTime: new Date().toISOString(),
            lastTransitionTime: new Date().toISOString(),
          },
        ],
      },
    );
    // A plain node of the rig is not a virtual node.
    const peerings = await waitFor("the peering in the view", async () =>
      // biome-ignore lint/suspicious/noExplicitAny: the admin views' JSON rows, asserted on a few fields
      (await view<any[]>("/views/peerings")).find((p) => p.clusterId === MILAN.clusterID && p.conditions.length),
    );
    expect(peerings).toMatchObject({
      name: "milan",
      clusterName: "milan",
      state: "Established",
      outgoing: "Established",
      incoming: "None",
      network: "Established",
      authentication: "Established",
    });
    expect(peerings.tenantNamespace).toEqual({ local: tenant, remote: "liqo-tenant-rome-8a1b2c" });
    expect(peerings.conditions).toHaveLength(4);

    const nodes = await waitFor("the virtual node in the view", async () =>
      // biome-ignore lint/suspicious/noExplicitAny: the admin views' JSON rows, asserted on a few fields
      (await view<any[]>("/views/virtual-nodes")).find((n) => n.cpu === "4"),
    );
    expect(nodes).toMatchObject({ name: "liqo-milan", clusterId: MILAN.clusterID, memory: "8Gi", pods: "110" });
    // The node lifecycle controller may turn a kubelet-less node Unknown meanwhile; either way the view says which and why.
    expect(nodes.ready === "Ready" ? nodes.readyReason : typeof nodes.readyReason).toBe(
      nodes.ready === "Ready" ? null : "string",
    );
    // biome-ignore lint/suspicious/noExplicitAny: the admin views' JSON rows, asserted on a few fields
    expect((await view<any[]>("/views/virtual-nodes")).map((n) => n.name)).toEqual(["liqo-milan"]);

    const offloaded = await waitFor("the offloaded namespace in the view", async () =>
      // biome-ignore lint/suspicious/noExplicitAny: the admin views' JSON rows, asserted on a few fields
      (await view<any[]>("/views/offloaded-namespaces")).find((n) => n.phase === "Ready"),
    );
    expect(offloaded).toMatchObject({
      namespace: "liqo-demo",
      remoteNamespace: "liqo-demo",
      podOffloadingStrategy: "Remote",
      namespaceMappingStrategy: "EnforceSameName",
    });
    expect(offloaded.clusters).toEqual([
      { clusterId: "florence-539f8b", required: "False", ready: "Unknown", reason: "ClusterNotSelected" },
      { clusterId: "naples-7881be", required: "True", ready: "True", reason: "RemoteNamespaceCreated" },
    ]);

    const ipam = await waitFor("the IPAM allocation in the view", async () => {
      // biome-ignore lint/suspicious/noExplicitAny: the admin views' JSON rows, asserted on a few fields
      const rows = await view<any[]>("/views/ipam");
      return rows.length ? rows : undefined;
    });
    expect(ipam).toEqual([
      {
        storage: "ipamstorage-rome",
        clusterId: MILAN.clusterID,
        podCidr: "10.200.0.0/16",
        externalCidr: "10.201.0.0/16",
        remotePodCidr: "10.60.0.0/16",
        localNatPodCidr: "10.50.0.0/16",
        remoteExternalCidr: "10.201.0.0/16",
        localNatExternalCidr: "None",
        endpointMappings: 1,
      },
    ]);
  });

  test("queries filter and are validated; a bad one is a problem naming the parameter", async () => {
    expect(await view(`/views/peerings?clusterId=${MILAN.clusterID}`)).toHaveLength(1);
    expect(await view("/views/peerings?clusterId=someone-else")).toEqual([]);
    expect(await view("/views/offloaded-namespaces?phase=Ready&namespace=liqo-demo")).toHaveLength(1);
    expect(await view("/views/offloaded-namespaces?phase=AllFailed")).toEqual([]);
    const bad = async (path: string) => {
      const res = await get(path);
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
      return (await res.json()) as { reason: string; detail: string; issues: { path: string; message: string }[] };
    };
    const unknown = await bad("/views/peerings?bogus=1");
    expect(unknown.reason).toBe("Invalid");
    expect(unknown.issues[0]!.message).toContain("peerings takes clusterId");
    expect((await bad("/views/offloaded-namespaces?phase=Nope")).issues[0]!.message).toContain(
      "must be an offloading phase",
    );
    expect((await bad("/views/virtual-nodes?clusterId=a%20b")).issues[0]!.message).toContain("cluster ID");
    expect((await bad("/views/ipam?clusterId=")).reason).toBe("Invalid");
  });

  test("the status page has a section per view with the cluster's state", async () => {
    const res = await get("/");
    expect(res.status).toBe(200);
    const html = await res.text();
    for (const title of ["Peerings", "Virtual nodes", "Offloaded namespaces", "IPAM allocations"])
      expect(html).toContain(`<h2>${title} `);
    expect(html).not.toContain("<h2>Tunnels "); // the role's own tunnels view replaced the cluster one, and has no section
    for (const cell of [
      "liqo-milan",
      MILAN.clusterID,
      "liqo-demo",
      "10.60.0.0/16",
      "naples-7881be: ready",
      "florence-539f8b: not selected",
    ])
      expect(html).toContain(cell);
    expect(html).toContain("liqo test role");
  });

  test("concurrent requests share a cached list instead of one list each", async () => {
    const before = adminClient.stats.requests;
    // biome-ignore lint/suspicious/noExplicitAny: the admin views' JSON rows, asserted on a few fields
    const answers = await Promise.all(Array.from({ length: 20 }, () => view<any[]>("/views/peerings")));
    expect(answers.every((a) => a.length === 1)).toBe(true);
    expect(adminClient.stats.requests - before).toBeLessThan(5);
  });
});

async function chromium(args: string[]): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
  const browser = Bun.spawn(
    [
      "chromium",
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--user-data-dir=${profile}`,
      "--window-size=1280,1000",
      ...args,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [out, err, code] = await Promise.all([
    new Response(browser.stdout).text(),
    new Response(browser.stderr).text(),
    browser.exited,
  ]);
  rmSync(profile, { recursive: true, force: true });
  if (code !== 0) throw new Error(`chromium exited with ${code}: ${err.slice(-2000)}`);
  return out;
}

describe("tunnels view", () => {
  test("TunnelEndpoints with their connection status, and the page in a browser", async () => {
    const own = await serveAdmin({
      args: { "admin-address": "127.0.0.1:0" },
      registry: createRegistry(),
      logger: silentLogger,
      client: adminClient,
    });
    try {
      const tep = (await client.list(TunnelEndpointResource)).items[0]!;
      await setStatus(TunnelEndpointResource, tep, {
        connection: { status: "Connected", statusMessage: "handshake 3s ago" },
        tunnelIFaceName: "liqo.wg0",
      });
      const row = await waitFor("the tunnel's status", async () => {
        // biome-ignore lint/suspicious/noExplicitAny: the admin views' JSON rows, asserted on a few fields
        const rows = (await (await fetch(`${own.url}/views/tunnels`)).json()) as any[];
        return rows.find((r) => r.status === "Connected");
      });
      expect(row).toMatchObject({
        clusterId: MILAN.clusterID,
        endpoint: "172.18.0.2",
        backend: "wireguard",
        message: "handshake 3s ago",
        remotePodCidr: "10.60.0.0/16",
        interface: "liqo.wg0",
      });
      const html = await (await fetch(`${own.url}/status`)).text();
      expect(html).toContain('<h2>Tunnels <span class="muted">(1)</span>');
      expect(html).toContain("handshake 3s ago");
      // What a person sees: headless Chromium renders every cluster section; the screenshot is kept.
      const dom = await chromium(["--dump-dom", `${own.url}/`]);
      for (const text of [
        "Peerings",
        "Virtual nodes",
        "Offloaded namespaces",
        "IPAM allocations",
        "Tunnels",
        "liqo-milan",
        "Connected",
      ])
        expect(dom).toContain(text);
      const shot = join(artifacts, "admin-cluster-status.png");
      mkdirSync(artifacts, { recursive: true });
      rmSync(shot, { force: true });
      await chromium([`--screenshot=${shot}`, `${own.url}/`]);
      expect([...(await Bun.file(shot).bytes()).slice(1, 4)].map((b) => String.fromCharCode(b)).join("")).toBe("PNG");
    } finally {
      await own.stop();
    }
  }, 180_000);
});
