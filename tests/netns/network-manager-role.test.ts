// `liqo network-manager` as a process on a real cluster, following the ForeignClusters (no peers
// file): rome's manager is the process, milan's runs in-process and the test plays the CRD
// replicator. A ForeignCluster with networking enabled and a tenant namespace becomes a peer (a
// NetworkConfig), one with networking "No" does not, deleting it releases the IPAM networks.
// Across processes, a translation watcher in the test process (as in the controller manager's
// virtual kubelet) meets a third-cluster endpoint: it passes it through, requests an address on
// the NatMapping, and rome's manager process allocates it; the watcher then answers with it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { installCrds } from "../../core/apis/crds.ts";
import {
  ForeignClusterResource,
  IpamStorageResource,
  NatMappingResource,
  NetworkConfigResource,
  type IpamStorage,
  type NatMapping,
  type NetworkConfig,
} from "../../core/apis/index.ts";
import { TunnelEndpointResource } from "../../core/apis/net/tunnelendpoint.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { createInformer } from "../../core/kube/informer.ts";
import { objectKey, Resources, type KubeObject } from "../../core/kube/resources.ts";
import { createLogger } from "../../core/log.ts";
import { contains, parseCidr, parseIpv4 } from "../../netfabric/ipam/index.ts";
import {
  CLUSTER_ID_LABEL,
  createNetworkManager,
  createTranslationWatcher,
  type NetworkManager,
  type TranslationWatcher,
} from "../../netfabric/manager/index.ts";
import { endpointRequestKey } from "../../netfabric/manager/translation-watch.ts";
import {
  IN_BAND_PENDING_AUTH_URL,
  prepareSide,
  tenantOf,
  WAITING_FOR_TUNNEL,
} from "../../core/peering/inband/session.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { generateKeyPair } from "../../netfabric/os/wireguard-keys.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { replicate, root, startRole, view, type RoleProcess } from "./fabric-rig.ts";

const ID = {
  rome: "6b2f8d2f-rome-4000-8000-000000000001",
  milan: "6b2f8d2f-milan-4000-8000-000000000002",
  venice: "6b2f8d2f-venice-4000-8000-000000000003",
};
const TENANT = { rome: "liqo-tenant-milan", milan: "liqo-tenant-rome" }; // in each cluster, the namespace of its peer
const EXTERNAL = "10.210.0.0/16";
const THIRD = "10.250.7.9"; // a pod of a third cluster as rome sees it: in no network of rome or milan

let rig: TestRig;
let rome: KubeClient;
let milan: KubeClient;
let role: RoleProcess;
let milanManager: NetworkManager;
let watcher: TranslationWatcher;
const keys = { rome: generateKeyPair(), milan: generateKeyPair() };

async function namespace(client: KubeClient, name: string) {
  if (!(await client.find(Resources.namespaces, name)))
    await client.create(Resources.namespaces, { metadata: { name } });
}

async function keySecret(client: KubeClient, publicKey: string) {
  await client.create(Resources.secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "wireguard-pubkey", namespace: "liqo", labels: { "net.liqo.io/key": "wireguard" } },
    stringData: { publicKey },
  });
}

/** A ForeignCluster as the peering controllers leave it: the tenant namespace in its status. */
async function foreignCluster(
  client: KubeClient,
  name: string,
  clusterID: string,
  networkingEnabled: "Yes" | "No",
  tenant?: string,
) {
  await client.create(ForeignClusterResource, {
    apiVersion: "discovery.liqo.io/v1alpha1",
    kind: "ForeignCluster",
    metadata: { name, labels: { "discovery.liqo.io/cluster-id": clusterID } },
    spec: {
      clusterIdentity: { clusterID, clusterName: name },
      foreignAuthUrl: "https://172.18.0.3:31845",
      outgoingPeeringEnabled: "Yes",
      incomingPeeringEnabled: "Auto",
      networkingEnabled,
      insecureSkipTLSVerify: true,
    },
  });
  if (tenant)
    await client.mergePatch(
      ForeignClusterResource,
      name,
      undefined,
      { status: { tenantNamespace: { local: tenant, remote: "liqo-tenant-x" } } },
      "status",
    );
}

const ownConfigs = async (client: KubeClient, ns: string) =>
  (
    await client.list<NetworkConfig>(NetworkConfigResource, {
      namespace: ns,
      labelSelector: "liqo.io/replication=true",
    })
  ).items;
const natMapping = async () =>
  (await rome.list<NatMapping>(NatMappingResource, { labelSelector: `${CLUSTER_ID_LABEL}=${ID.milan}` })).items[0];
const exchange = () =>
  replicate([
    { client: rome, id: ID.rome, tenant: TENANT.rome },
    { client: milan, id: ID.milan, tenant: TENANT.milan },
  ]);

/** rome's `liqo network-manager`, following the ForeignClusters. */
const romeRoleArgs = () => [
  "network-manager",
  "--kubeconfig",
  rig.clusters[0]!.kubeconfig,
  "--liqo-namespace",
  "liqo",
  "--pod-cidr",
  rig.clusters[0]!.podCIDR,
  "--service-cidr",
  rig.clusters[0]!.serviceCIDR,
  "--external-cidr",
  EXTERNAL,
  "--gateway-endpoint",
  "172.18.0.2:5871",
  "--admin-address",
  "127.0.0.1:0",
];

async function runRole(args: string[]): Promise<{ code: number; stderr: string }> {
  const p = Bun.spawn([join(root, "node_modules/.bin/bun"), "cli/liqo.ts", "network-manager", ...args], {
    cwd: root,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stderr, code] = [await new Response(p.stderr).text(), await p.exited];
  return { code, stderr };
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  rome = rig.client("rome");
  milan = rig.client("milan");
  for (const c of [rome, milan]) {
    await installCrds(c, { timeoutMs: 120_000 });
    await namespace(c, "liqo");
  }
  await namespace(rome, TENANT.rome);
  await namespace(milan, TENANT.milan);
  await keySecret(rome, keys.rome.publicKey);
  await keySecret(milan, keys.milan.publicKey);
  role = await startRole(romeRoleArgs());
  milanManager = createNetworkManager({
    client: milan,
    liqoNamespace: "liqo",
    logger: createLogger({ cluster: "milan" }, { level: "warn" }),
    resyncMs: 5_000,
    ipam: { podCidr: rig.clusters[1]!.podCIDR, serviceCidr: rig.clusters[1]!.serviceCIDR, externalCidr: EXTERNAL },
    gatewayEndpoint: { ip: "172.18.0.3", port: 5871 },
    peers: [{ remoteClusterId: ID.rome, remoteClusterName: "rome", tenantNamespace: TENANT.milan }],
  });
  await milanManager.start();
}, 600_000);

afterAll(async () => {
  await watcher?.stop().catch(() => undefined);
  await milanManager?.stop().catch(() => undefined);
  await role?.kill().catch(() => undefined);
  await rig?.down();
}, 120_000);

describe("liqo network-manager follows the ForeignClusters", () => {
  test("a ForeignCluster with networking enabled becomes a peer; networking No or no tenant namespace does not", async () => {
    await foreignCluster(rome, "venice", ID.venice, "No", "liqo-tenant-venice");
    await foreignCluster(rome, "milan", ID.milan, "Yes", TENANT.rome);
    const [nc] = await waitFor(
      "rome's NetworkConfig for milan",
      async () => {
        const items = await ownConfigs(rome, TENANT.rome);
        return items.length ? items : undefined;
      },
      { timeoutMs: 120_000, describe: () => role.output().slice(-2000) },
    );
    expect(nc!.spec.cluster.clusterID).toBe(ID.milan);
    expect(nc!.spec.podCIDR).toBe(rig.clusters[0]!.podCIDR);
    // The admin views are served from a short-lived cache: wait for it to show milan.
    const peers = await waitFor(
      "milan in the role's peers view",
      async () => {
        const got = await view<{ remoteClusterId: string }[]>(role.url, "peers");
        return JSON.stringify(got).includes(ID.milan) && got;
      },
      { timeoutMs: 30_000 },
    );
    expect(JSON.stringify(peers)).not.toContain(ID.venice);
    expect(await ownConfigs(rome, "liqo-tenant-venice").catch(() => [])).toEqual([]);
  }, 200_000);

  test("across processes, a third-cluster endpoint gets an external-CIDR address requested on the NatMapping", async () => {
    watcher = createTranslationWatcher({ client: rome, remoteClusterId: ID.milan, onError: () => undefined });
    await watcher.start();
    let changes = 0;
    watcher.onChange(() => changes++);
    await waitFor(
      "both sides to process the NetworkConfigs and rome's NatMapping for milan",
      async () => {
        await exchange();
        const s = watcher.sources();
        return (s.local?.status?.processed && s.remote?.status?.processed && s.natMapping) || undefined;
      },
      { timeoutMs: 120_000, describe: () => watcher.sources() },
    );
    const s = watcher.sources();
    // The address is really a third cluster's: in neither rome's pod CIDR nor milan's as rome sees it.
    expect(contains(parseCidr(s.local!.spec.podCIDR), parseIpv4(THIRD))).toBe(false);
    // First ask: not allocated yet, so it passes through (never blocking the reflector) and is requested.
    const first = watcher.translateIp(THIRD, "forward");
    const answer = await waitFor(
      "rome's manager process to allocate the requested address",
      () => {
        const out = watcher.translateIp(THIRD, "forward");
        return out !== THIRD ? out : undefined;
      },
      { timeoutMs: 60_000, describe: async () => ({ mapping: await natMapping(), log: role.output().slice(-1500) }) },
    );
    expect(first === THIRD || first === answer).toBe(true);
    // In rome's external CIDR as milan sees it, stable, recorded, and the request gone.
    expect(contains(parseCidr(watcher.sources().local!.status!.externalCIDRNAT!), parseIpv4(answer))).toBe(true);
    expect(watcher.translateIp(THIRD, "forward")).toBe(answer);
    const mapping = await waitFor(
      "the request annotation removed",
      async () => {
        const m = await natMapping();
        return m && m.metadata.annotations?.[endpointRequestKey(THIRD)] === undefined ? m : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(mapping.spec.clusterMappings[THIRD]).toBeDefined();
    expect(changes).toBeGreaterThan(0);
    const [storage] = (
      await rome.list<IpamStorage>(IpamStorageResource, { labelSelector: "net.liqo.io/ipamstorage=true" })
    ).items;
    expect(JSON.stringify(storage!.spec)).toContain(THIRD);
  }, 200_000);

  test("a malformed request is dropped without an allocation", async () => {
    const m = (await natMapping())!;
    const bad = "10.300.1.1";
    await rome.mergePatch(NatMappingResource, m.metadata.name!, undefined, {
      metadata: { annotations: { [endpointRequestKey(bad)]: "" } },
    });
    // The manager logs the drop before it removes the annotation, but its log reaches this process
    // through a pipe, which can arrive after the API server already shows the annotation gone.
    await waitFor(
      "the malformed request dropped and the drop logged",
      async () => {
        const now = await natMapping();
        const gone = now && now.metadata.annotations?.[endpointRequestKey(bad)] === undefined;
        return gone && role.output().includes("endpoint address request dropped") ? now : undefined;
      },
      { timeoutMs: 60_000, describe: () => role.output().slice(-1500) },
    );
    expect((await natMapping())!.spec.clusterMappings[bad]).toBeUndefined();
  }, 120_000);

  test("SIGKILLed and started again, the role keeps milan's NetworkConfigs, TunnelEndpoint and remap: nothing deleted or re-created", async () => {
    const state = async () => {
      const configs = (await rome.list<NetworkConfig>(NetworkConfigResource)).items;
      return {
        configs: configs.map((c) => `${objectKey(c)} ${c.metadata.uid} ${c.status?.podCIDRNAT}`).sort(),
        tunnels: (
          await rome.list(TunnelEndpointResource, { labelSelector: `${CLUSTER_ID_LABEL}=${ID.milan}` })
        ).items.map((t) => `${objectKey(t)} ${t.metadata.uid}`),
      };
    };
    const before = await waitFor(
      "both NetworkConfigs processed and milan's TunnelEndpoint in rome",
      async () => {
        await exchange();
        const st = await state();
        return st.configs.length === 2 && !st.configs.some((c) => c.endsWith("undefined")) && st.tunnels.length === 1
          ? st
          : undefined;
      },
      { timeoutMs: 120_000, describe: state },
    );
    // Every deletion in rome from here on, as a watch sees it.
    const deleted: string[] = [];
    const watches = [NetworkConfigResource, TunnelEndpointResource].map((resource) => {
      const inf = createInformer<KubeObject>({ client: rome, resource });
      inf.on({ delete: (o) => deleted.push(`${o.kind ?? resource.kind} ${objectKey(o)}`) });
      inf.start();
      return inf;
    });
    try {
      await Promise.all(watches.map((w) => w.waitForSync()));
      await role.kill("SIGKILL");
      role = await startRole(romeRoleArgs());
      // The new process has listed the ForeignClusters and reconciled milan (its peers view says so).
      await waitFor(
        "the restarted role's peer milan Ready",
        async () => {
          await exchange(); // a re-created NetworkConfig (the defect) gets processed, so the deletions show below
          const peers = await view<{ clusterId: string; phase: string }[]>(role.url, "peers");
          return peers.some((p) => p.clusterId === ID.milan && p.phase === "Ready");
        },
        { timeoutMs: 60_000, describe: () => view(role.url, "peers") },
      );
      expect({ deleted, after: await state() }).toEqual({ deleted: [], after: before });
    } finally {
      await Promise.all(watches.map((w) => w.stop()));
    }
  }, 200_000);

  test("deleting the ForeignCluster releases milan's networks, NetworkConfig and NatMapping", async () => {
    await rome.delete(ForeignClusterResource, "milan");
    await waitFor(
      "rome to forget milan",
      async () => {
        const [s] = (
          await rome.list<IpamStorage>(IpamStorageResource, { labelSelector: "net.liqo.io/ipamstorage=true" })
        ).items;
        return (
          (Object.keys(s!.spec.clusterSubnets ?? {}).length === 0 &&
            (await ownConfigs(rome, TENANT.rome)).length === 0 &&
            !(await natMapping())) ||
          undefined
        );
      },
      {
        timeoutMs: 90_000,
        describe: async () => ({ peers: await view(role.url, "peers"), ipam: (await view(role.url, "ipam")).clusters }),
      },
    );
    expect(await view<unknown[]>(role.url, "peers")).toEqual([]);
  }, 120_000);

  test("in-band's first step: a ForeignCluster waiting for the tunnel is a network peer, AuthenticationStatus Pending naming the tunnel", async () => {
    const verona = {
      label: "--remote-context verona",
      client: milan,
      namespace: "liqo",
      identity: { clusterId: "6b2f8d2f-verona-4000-8000-000000000004", clusterName: "verona", clusterLabels: {} },
    };
    const here = {
      label: "--context rome",
      client: rome,
      namespace: "liqo",
      identity: { clusterId: ID.rome, clusterName: "rome", clusterLabels: {} },
    };
    await prepareSide(here, verona);
    await prepareSide(here, verona); // idempotent: nothing new, the condition is not rewritten
    const fc = (await rome.find<ForeignClusterObject>(ForeignClusterResource, "verona"))!;
    expect(fc.spec.foreignAuthUrl).toBe(IN_BAND_PENDING_AUTH_URL);
    expect(fc.spec.outgoingPeeringEnabled).toBe("No");
    const auth = fc.status?.peeringConditions?.filter((c) => c.type === "AuthenticationStatus") ?? [];
    expect(auth).toHaveLength(1);
    expect(auth[0]).toMatchObject({ status: "Pending", reason: WAITING_FOR_TUNNEL });
    expect(auth[0]!.message).toContain("in-band tunnel");
    // The network comes first: rome's manager (following ForeignClusters) takes verona as a peer.
    await waitFor(
      "rome's NetworkConfig for verona",
      async () => (await ownConfigs(rome, tenantOf(here, verona))).length > 0 || undefined,
      { timeoutMs: 60_000 },
    );
    await rome.delete(ForeignClusterResource, "verona");
    await waitFor(
      "verona released",
      async () => (await ownConfigs(rome, tenantOf(here, verona))).length === 0 || undefined,
      { timeoutMs: 60_000 },
    );
  }, 120_000);

  test("--peers and --peers-file are exclusive, with messages naming the flags", async () => {
    const base = [
      "--kubeconfig",
      rig.clusters[0]!.kubeconfig,
      "--pod-cidr",
      "10.200.0.0/16",
      "--service-cidr",
      "10.50.0.0/16",
      "--admin-address",
      "127.0.0.1:0",
    ];
    for (const [flags, message] of [
      [
        ["--peers", "foreignclusters", "--peers-file", "/tmp/peers.yaml"],
        /--peers-file cannot be used with --peers=foreignclusters/,
      ],
      [["--peers", "file"], /--peers=file needs --peers-file/],
      [["--peers", "everyone"], /--peers must be foreignclusters or file/],
    ] as const) {
      const { code, stderr } = await runRole([...base, ...flags]);
      expect(stderr).toMatch(message);
      expect(code).not.toBe(0);
    }
  }, 120_000);
});
