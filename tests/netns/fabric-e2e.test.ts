// The whole fabric driven by real control planes: two rig clusters that both use pod CIDR
// 10.200.0.0/16, a network manager per cluster (in-process), NetworkConfigs exchanged as the
// peering will (the test is the CRD replicator), TunnelEndpoints → `liqo gateway` (two replicas
// for rome as processes, active/standby; one for milan in-process) and route agents (`liqo route`
// for rome, in-process for milan) in network namespaces. A real pod IP of each cluster lives in a "pod" namespace; they reach
// each other at their remapped addresses over ICMP and TCP, a hand-deleted NAT rule and route
// come back, killing rome's active gateway fails over to the standby, and bad peers are reported.
// Last, the security modes' isolation matrix: milan's gateway rolled to IntraClusterTrafficSegregation
// and back, with more "pods" (tests/netns/isolation.ts) offloaded, twin, and behind a reflected Service.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { installCrds } from "../../core/apis/crds.ts";
import {
  TunnelEndpointResource,
  type TunnelEndpoint,
  NetworkConfigResource,
  type NetworkConfig,
  NamespaceMapResource,
} from "../../core/apis/index.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { createLogger } from "../../core/log.ts";
import {
  createGatewayController,
  type GatewayController,
  type GatewayControllerOptions,
} from "../../netfabric/gateway/controller.ts";
import { exposeGateway } from "../../netfabric/gateway/exposure.ts";
import { contains, parseCidr, parseIpv4 } from "../../netfabric/ipam/index.ts";
import {
  createNetworkManager,
  createTranslationWatcher,
  type NetworkManager,
  type TranslationWatcher,
} from "../../netfabric/manager/index.ts";
import { createIp } from "../../netfabric/os/ip.ts";
import { createNft } from "../../netfabric/os/nft.ts";
import { renderFilterTable, type SecurityMode } from "../../netfabric/gateway/filter-table.ts";
import { rejectCounts } from "../../netfabric/gateway/reconcile.ts";
import { createRegistry, type Registry } from "../../core/metrics/index.ts";
import { addPodNamespace, offloadedPod, probe, scheduledPod } from "./isolation.ts";
import { generateKeyPair } from "../../netfabric/os/wireguard-keys.ts";
import { createRouteAgent, type RouteAgent } from "../../netfabric/overlay/agent.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import {
  buildSide,
  ensureNamespace,
  joinGateways,
  realPod,
  replicate,
  startRole,
  view,
  type FabricSide,
  type RoleProcess,
} from "./fabric-rig.ts";
import { createLab, runner, type Lab } from "./lab.ts";

const connectScript = join(import.meta.dir, "fixtures", "connect.ts");
const echoScript = join(import.meta.dir, "fixtures", "echo-source.ts");
const ID = {
  rome: "f0a1b2c3-rome-4000-8000-000000000001",
  milan: "f0a1b2c3-milan-4000-8000-000000000002",
  venice: "f0a1b2c3-venice-4000-8000-000000000003",
  verona: "f0a1b2c3-verona-4000-8000-000000000004",
};
const EXTERNAL = "10.210.0.0/16";
const ROME_RESERVED = "10.150.0.0/16";
const PORT = 51820;
const log = (cluster: string) => createLogger({ cluster }, { level: (process.env.FABRIC_LOG ?? "warn") as "warn" });

let rig: TestRig;
let lab: Lab;
let rome: FabricSide;
let milan: FabricSide;
const managers: NetworkManager[] = [];
const agents: RouteAgent[] = [];
let milanGateway: GatewayController;
let romeGateways: RoleProcess[] = [];
let romeRoute: RoleProcess | undefined;
let watcher: TranslationWatcher;
let romeManager: NetworkManager;
let milanManager: NetworkManager;

const gatewayArgs = (s: FabricSide, identity: string) => [
  "gateway",
  "--kubeconfig",
  rig.clusters.find((c) => c.name === s.name)!.kubeconfig,
  "--liqo-namespace",
  "liqo",
  "--netns",
  s.gw,
  "--device",
  s.device,
  "--listen-port",
  String(PORT),
  "--underlay-device",
  "inet",
  "--wireguard",
  "userspace",
  "--endpoint",
  `${s.publicIp}:${PORT}`,
  "--node-name",
  s.nodeName,
  "--vtep-address",
  s.gwVtep,
  "--vtep-device",
  "uplink",
  "--identity",
  identity,
  "--lease-duration",
  "4",
  "--renew-deadline",
  "3",
  "--retry-period",
  "1",
  "--resync-period",
  "2",
  "--handshake-timeout",
  "15",
  "--admin-address",
  "127.0.0.1:0",
];

/** Milan's gateway, in-process; the security mode tests restart it in another mode, as a helm upgrade rolls the pod. */
async function startMilanGateway(
  identity: string,
  more: Pick<GatewayControllerOptions, "securityMode" | "registry"> = {},
): Promise<GatewayController> {
  const g = createGatewayController({
    client: milan.client,
    liqoNamespace: "liqo",
    identity,
    netns: milan.gw,
    device: milan.device,
    listenPort: PORT,
    underlayDevice: "inet",
    wireguard: "userspace",
    endpoint: `${milan.publicIp}:${PORT}`,
    nodeName: milan.nodeName,
    overlay: { vtepIp: milan.gwVtep, dev: "uplink" },
    lease: { durationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 1_000 },
    intervalMs: 2_000,
    handshakeTimeoutMs: 15_000,
    logger: log("milan"),
    ...more,
  });
  await g.start();
  return g;
}

/** Rome's view of milan's pod, and milan's view of rome's pod, from the translation watcher and the managers. */
const romeSeesMilan = () => romeManager.translator(ID.milan)(milan.podIp, "backward");
const milanSeesRome = () => milanManager.translator(ID.rome)(rome.podIp, "backward");

async function tcpFromRome(timeoutMs = 1500): Promise<string | undefined> {
  try {
    return (
      (await lab.sh(rome.pod, [process.execPath, connectScript, romeSeesMilan(), "7000", String(timeoutMs)])).trim() ||
      undefined
    );
  } catch {
    return undefined;
  }
}

async function pingOk(from: string, to: string): Promise<boolean> {
  try {
    return (await lab.sh(from, ["ping", "-c", "1", "-W", "1", to])).includes("1 received");
  } catch {
    return false;
  }
}

/** The TunnelEndpoint for `peer`, in whatever tenant namespace the peering uses. */
const tep = async (s: FabricSide, peer: string) =>
  (await s.client.list<TunnelEndpoint>(TunnelEndpointResource, { labelSelector: `clusterID=${peer}` })).items[0];

async function romeLeader(): Promise<{ holder: string; process: RoleProcess } | undefined> {
  const lease = await rome.client.get<KubeObject & { spec?: { holderIdentity?: string } }>(
    Resources.leases,
    "liqo-gateway",
    "liqo",
  );
  const holder = lease.spec?.holderIdentity;
  const index = ["rome-gw-0", "rome-gw-1"].indexOf(holder ?? "");
  return index >= 0 && romeGateways[index] ? { holder: holder!, process: romeGateways[index]! } : undefined;
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1, overlappingPodCidrs: true });
  lab = await createLab();
  const dev = (tag: string) => `lq${process.pid.toString(36)}-${lab.id.slice(-3)}${tag}`;
  const sides: FabricSide[] = [];
  for (const [i, name] of ["rome", "milan"].entries()) {
    const client = rig.client(name);
    await installCrds(client, { timeoutMs: 120_000 });
    const other = name === "rome" ? "milan" : "rome";
    for (const ns of ["liqo", `liqo-tenant-${other}`]) await ensureNamespace(client, ns);
    const pod = await realPod(client, `fabric-${name}`);
    sides.push(
      await buildSide(lab, {
        name,
        id: ID[name as "rome" | "milan"],
        client,
        tenant: `liqo-tenant-${other}`,
        nodeName: pod.node,
        podIp: pod.ip,
        nodeVtep: `172.16.${i + 1}.1`,
        gwVtep: `172.16.${i + 1}.2`,
        publicIp: `198.18.0.${i + 1}`,
        device: dev(name.slice(0, 1)),
      }),
    );
  }
  [rome, milan] = sides as [FabricSide, FabricSide];
  await joinGateways(lab, rome, milan);
  await lab.serve(milan.pod, echoScript, ["7000"]);
  await lab.serve(rome.pod, echoScript, ["7000"]);

  for (const s of [rome, milan]) {
    const peer = s === rome ? milan : rome;
    const cluster = rig.clusters.find((c) => c.name === s.name)!;
    const m = createNetworkManager({
      client: s.client,
      liqoNamespace: "liqo",
      logger: log(s.name),
      resyncMs: 5_000,
      ipam: {
        podCidr: cluster.podCIDR,
        serviceCidr: cluster.serviceCIDR,
        externalCidr: EXTERNAL,
        reserved: s === rome ? [ROME_RESERVED] : ["10.0.0.0/15"],
      },
      peers: [{ remoteClusterId: peer.id, remoteClusterName: peer.name, tenantNamespace: s.tenant }],
    });
    await m.start();
    managers.push(m);
    if (s === rome) {
      // rome's route agent is the `liqo route` role; milan's runs in-process.
      romeRoute = await startRole([
        "route",
        "--kubeconfig",
        cluster.kubeconfig,
        "--liqo-namespace",
        "liqo",
        "--node-name",
        s.nodeName,
        "--netns",
        s.node,
        "--vtep-address",
        s.nodeVtep,
        "--vtep-device",
        "uplink",
        "--resync-period",
        "2",
        "--admin-address",
        "127.0.0.1:0",
      ]);
      continue;
    }
    const agent = createRouteAgent({
      client: s.client,
      nodeName: s.nodeName,
      liqoNamespace: "liqo",
      ip: createIp(runner, s.node),
      end: { vtepIp: s.nodeVtep, dev: "uplink" },
      intervalMs: 2_000,
      logger: log(s.name),
    });
    await agent.start();
    agents.push(agent);
  }
  [romeManager, milanManager] = managers as [NetworkManager, NetworkManager];
  romeGateways = [await startRole(gatewayArgs(rome, "rome-gw-0")), await startRole(gatewayArgs(rome, "rome-gw-1"))];
  milanGateway = await startMilanGateway("milan-gw-0");
  watcher = createTranslationWatcher({ client: rome.client, remoteClusterId: ID.milan });
  await watcher.start();
}, 600_000);

afterAll(async () => {
  await watcher?.stop();
  for (const g of romeGateways) await g.kill("SIGTERM").catch(() => undefined);
  await romeRoute?.kill("SIGTERM").catch(() => undefined);
  await milanGateway?.stop().catch(() => undefined);
  for (const a of agents) await a.stop().catch(() => undefined);
  for (const m of managers) await m.stop().catch(() => undefined);
  await lab?.cleanup();
  await rig?.down();
}, 120_000);

describe("fabric on two clusters with overlapping pod CIDRs", () => {
  test("the gateways publish their key and endpoint; the managers exchange NetworkConfigs; TunnelEndpoints appear and connect", async () => {
    expect(rig.clusters.map((c) => c.podCIDR)).toEqual(["10.200.0.0/16", "10.200.0.0/16"]);
    const started = Date.now();
    const teps = await waitFor(
      "a TunnelEndpoint on each side",
      async () => {
        await replicate([rome, milan]);
        const [r, m] = [await tep(rome, ID.milan), await tep(milan, ID.rome)];
        return r && m ? { r, m } : undefined;
      },
      { timeoutMs: 120_000 },
    );
    // The endpoint the manager announced is the one the gateway published on its key Secret.
    expect(teps.r.spec.endpointIP).toBe(milan.publicIp);
    expect(teps.m.spec.endpointIP).toBe(rome.publicIp);
    expect(teps.r.spec.remoteNATPodCIDR).not.toBe("None");
    const connected = await waitFor(
      "both TunnelEndpoints Connected",
      async () => {
        const [r, m] = [await tep(rome, ID.milan), await tep(milan, ID.rome)];
        return r?.status?.connection?.status === "Connected" && m?.status?.connection?.status === "Connected"
          ? r
          : undefined;
      },
      { timeoutMs: 60_000, describe: async () => (await tep(rome, ID.milan))?.status },
    );
    console.log(`TunnelEndpoint → Connected in ${Date.now() - started} ms (from the first NetworkConfig exchange)`);
    expect(connected.status!.connection!.peerConfiguration!.latestHandshake).toBeDefined();
    expect(connected.status!.tunnelIFaceName).toBe(rome.device);
    // MTU auto: the "internet" veth's 1500 minus WireGuard's 60 bytes over IPv4.
    const leader = await view((await romeLeader())!.process.url, "leader");
    expect(leader).toMatchObject({
      mtu: 1440,
      deviceKind: "userspace",
      // This machine's kernel has no WireGuard module: the gateway says it runs wireguard-go.
      wireguardImplementation: "userspace",
      exposure: { endpoint: `${rome.publicIp}:${PORT}`, via: "Flag" },
    });
    const [link] = await createIp(runner, rome.gw).json<{ mtu: number }>(["link", "show", "dev", rome.device]);
    expect(link!.mtu).toBe(1440);
    // Latency is measured through the tunnel (gateway to gateway, across both NATs).
    const latency = await waitFor(
      "a latency through the tunnel in the tunnels view",
      async () =>
        (await view<{ clusterId: string; latencyMs?: number }[]>((await romeLeader())!.process.url, "tunnels")).find(
          (t) => t.clusterId === ID.milan,
        )?.latencyMs,
      { timeoutMs: 30_000 },
    );
    expect(latency).toBeGreaterThan(0);
    console.log(`tunnel round trip (rome gateway → milan gateway): ${latency} ms`);
  }, 240_000);

  test("without --endpoint the gateway Service falls back from LoadBalancer to NodePort on a node address", async () => {
    const exposure = await exposeGateway({
      client: milan.client,
      namespace: "liqo",
      name: "liqo-gateway-probe",
      port: 5999,
      loadBalancerTimeoutMs: 1_000,
      pollMs: 200,
      nodeName: milan.nodeName,
    });
    const svc = await milan.client.get<KubeObject & { spec: { type: string; ports: { nodePort: number }[] } }>(
      Resources.services,
      "liqo-gateway-probe",
      "liqo",
    );
    const node = await milan.client.get<KubeObject & { status: { addresses: { type: string; address: string }[] } }>(
      Resources.nodes,
      milan.nodeName,
    );
    const address =
      node.status.addresses.find((a) => a.type === "ExternalIP")?.address ??
      node.status.addresses.find((a) => a.type === "InternalIP")!.address;
    expect(svc.spec.type).toBe("LoadBalancer");
    expect(exposure).toEqual({
      endpoint: `${address}:${svc.spec.ports[0]!.nodePort}`,
      via: "NodePort",
      service: "liqo/liqo-gateway-probe",
    });
    await expect(
      exposeGateway({
        client: milan.client,
        namespace: "liqo",
        name: "liqo-gateway-probe",
        port: 5999,
        loadBalancerTimeoutMs: 0,
        nodeName: "no-such-node",
      }),
    ).rejects.toThrow(/no-such-node/);
  }, 60_000);

  test("rome's pod reaches milan's pod at its remapped address (ICMP and TCP), and milan sees rome's remapped address", async () => {
    const target = romeSeesMilan();
    expect(target).not.toBe(milan.podIp);
    expect(contains(parseCidr((await tep(rome, ID.milan))!.spec.remoteNATPodCIDR), parseIpv4(target))).toBe(true);
    expect(
      await waitFor("ping rome pod → milan pod", async () => (await pingOk(rome.pod, target)) || undefined, {
        timeoutMs: 30_000,
      }),
    ).toBe(true);
    expect(await waitFor("TCP rome pod → milan pod", () => tcpFromRome(), { timeoutMs: 30_000 })).toBe(milanSeesRome());
    // And back: milan's pod reaches rome's pod at its remapped address.
    expect(await pingOk(milan.pod, milanSeesRome())).toBe(true);
    const back = (await lab.sh(milan.pod, [process.execPath, connectScript, milanSeesRome(), "7000", "3000"])).trim();
    expect(back).toBe(romeSeesMilan());
  }, 90_000);

  test("the translation watcher (API only) agrees with the network manager's translator", async () => {
    await waitFor(
      "the watcher to see both NetworkConfigs processed",
      () => {
        const s = watcher.sources();
        return s.local?.status?.processed && s.remote?.status?.processed ? true : undefined;
      },
      { timeoutMs: 30_000 },
    );
    const t = romeManager.translator(ID.milan);
    for (const [ip, dir] of [
      [milan.podIp, "backward"],
      ["10.200.7.7", "backward"],
      [rome.podIp, "forward"],
      [romeSeesMilan(), "forward"],
    ] as const) {
      expect(watcher.translateIp(ip, dir)).toBe(t(ip, dir));
    }
  });

  test("a NAT rule and an overlay route deleted by hand come back, and traffic resumes", async () => {
    const nft = createNft(runner, rome.gw);
    const table = await nft.listTable("ip", "liqo_gateway");
    const snat = table?.rules.find((r) => r.comment?.startsWith(`${ID.milan}/pod-snat/`));
    expect(snat).toBeDefined();
    await lab.sh(rome.gw, ["nft", "delete", "rule", "ip", "liqo_gateway", snat!.chain, "handle", String(snat!.handle)]);
    // The table is replaced as a whole, so handles restart: the leader's report says what it repaired.
    const leader = await romeLeader();
    await waitFor(
      "the leader to report the SNAT rule repaired",
      async () =>
        (await view(leader!.process.url, "leader")).lastChanges.join("\n").includes(`missing: ${snat!.comment}`) ||
        undefined,
      { timeoutMs: 30_000 },
    );
    expect((await nft.listTable("ip", "liqo_gateway"))?.rules.some((r) => r.comment === snat!.comment)).toBe(true);
    const to = (await tep(rome, ID.milan))!.spec.remoteNATPodCIDR;
    await lab.sh(rome.node, ["ip", "route", "del", to]);
    await waitFor(
      "the overlay route to be restored",
      async () =>
        (await createIp(runner, rome.node).json<{ dst: string }>(["route", "show", to])).length > 0 || undefined,
      { timeoutMs: 30_000 },
    );
    expect(await waitFor("TCP after the repairs", () => tcpFromRome(), { timeoutMs: 30_000 })).toBe(milanSeesRome());
    const overlay = await view(romeRoute!.url, "overlay");
    expect(overlay).toMatchObject({ node: rome.nodeName, gatewayVtep: rome.gwVtep });
    expect(overlay.spec.routes).toContainEqual({ to, via: "240.16.1.2" });
    expect(overlay.lastChanges).toContain(`route replace ${to} via 240.16.1.2 dev liqo.vxlan onlink`);
  }, 90_000);

  test("killing rome's active gateway: the standby takes the Lease, reconfigures, and traffic resumes", async () => {
    const before = await waitFor("rome's gateway leader", () => romeLeader(), { timeoutMs: 30_000 });
    const standby = romeGateways.find((g) => g !== before.process)!;
    expect((await view(standby.url, "leader")).active).toBe(false);
    const killedAt = Date.now();
    await before.process.kill("SIGKILL");
    // The killed holder's wireguard-go died with it (pdeathsig): the device is gone.
    await waitFor(
      "the old device to disappear",
      async () =>
        (await createIp(runner, rome.gw).json<{ ifname: string }>(["link", "show"])).every(
          (l) => l.ifname !== rome.device,
        ) || undefined,
      { timeoutMs: 15_000 },
    );
    const after = await waitFor(
      "a new holder",
      async () => {
        const l = await romeLeader();
        return l && l.holder !== before.holder ? l : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(after.process).toBe(standby);
    await waitFor("TCP through the new active gateway", () => tcpFromRome(), { timeoutMs: 60_000 });
    const failoverMs = Date.now() - killedAt;
    console.log(`gateway failover: traffic resumed ${failoverMs} ms after the leader was killed (lease 4 s)`);
    const leader = await view(standby.url, "leader");
    expect(leader).toMatchObject({ active: true, leader: true, holder: after.holder, deviceKind: "userspace" });
    // The view is refreshed by the next reconcile pass after the handshake.
    await waitFor(
      "the new holder's tunnels view to show a handshake with milan",
      async () =>
        (await view<{ clusterId: string; lastHandshake?: string }[]>(standby.url, "tunnels")).find(
          (t) => t.clusterId === ID.milan,
        )?.lastHandshake,
      { timeoutMs: 30_000 },
    );
  }, 120_000);
  test("a holder stopped cleanly tears its configuration down and releases the Lease; the restarted replica takes over", async () => {
    // Bring the killed replica back as the standby.
    const dead = romeGateways.findIndex((g) => g.proc.exitCode !== null || g.proc.signalCode !== null);
    expect(dead).toBeGreaterThanOrEqual(0);
    romeGateways[dead] = await startRole(gatewayArgs(rome, `rome-gw-${dead}`));
    const holder = (await romeLeader())!;
    expect(holder.process).not.toBe(romeGateways[dead]);
    const stoppedAt = Date.now();
    await holder.process.kill("SIGTERM");
    await waitFor(
      "the stopped holder to log its teardown",
      () => holder.process.output().includes("standby: configuration torn down") || undefined,
      { timeoutMs: 10_000 },
    );
    expect(holder.process.proc.exitCode).toBe(0);
    await waitFor(
      "the restarted replica to become active",
      async () => (await view(romeGateways[dead]!.url, "leader")).active || undefined,
      { timeoutMs: 30_000 },
    );
    await waitFor("TCP through the restarted replica", () => tcpFromRome(), { timeoutMs: 60_000 });
    console.log(`clean handover: traffic resumed ${Date.now() - stoppedAt} ms after SIGTERM to the holder`);
    // The stopped replica is started again, as a standby for the tests below.
    const stopped = romeGateways.indexOf(holder.process);
    romeGateways[stopped] = await startRole(gatewayArgs(rome, `rome-gw-${stopped}`));
    expect((await view(romeGateways[stopped]!.url, "leader")).active).toBe(false);
  }, 180_000);
});

describe("bad peers are reported, and do not disturb the good tunnel", () => {
  /** A peer as the replicator would bring it: its NetworkConfig in our tenant namespace, and its status on ours. */
  async function fakePeer(id: string, name: string, spec: Partial<NetworkConfig["spec"]>) {
    const ns = `liqo-tenant-${name}`;
    await ensureNamespace(rome.client, ns);
    romeManager.setPeers([
      ...romeManager.peers(),
      { remoteClusterId: id, remoteClusterName: name, tenantNamespace: ns },
    ]);
    await rome.client.create(NetworkConfigResource, {
      apiVersion: "net.liqo.io/v1alpha1",
      kind: "NetworkConfig",
      metadata: {
        name: `net-config-${name}`,
        namespace: ns,
        labels: { "liqo.io/replication": "false", "liqo.io/replicated": "true", "liqo.io/originID": id },
      },
      spec: {
        cluster: { clusterID: ID.rome, clusterName: "rome" },
        podCIDR: "10.200.0.0/16",
        externalCIDR: "10.211.0.0/16",
        endpointIP: "198.18.0.99",
        backendType: "wireguard",
        backend_config: { publicKey: generateKeyPair().publicKey, port: String(PORT) },
        ...spec,
      },
    });
    // The peer processes ours: it keeps our networks.
    const ours = await waitFor(
      `rome's NetworkConfig for ${name}`,
      async () =>
        (
          await rome.client.list<NetworkConfig>(NetworkConfigResource, {
            namespace: ns,
            labelSelector: `liqo.io/remoteID=${id}`,
          })
        ).items[0],
      { timeoutMs: 30_000 },
    );
    await rome.client.mergePatch(
      NetworkConfigResource,
      ours.metadata.name!,
      ns,
      { status: { processed: true, podCIDRNAT: "None", externalCIDRNAT: "None" } },
      "status",
    );
    return ns;
  }

  test("a peer announcing a CIDR on our reserved subnet is remapped away from it; its malformed public key is an Error on its TunnelEndpoint", async () => {
    const ns = await fakePeer(ID.venice, "venice", {
      podCIDR: ROME_RESERVED,
      backend_config: { publicKey: "not-a-wireguard-key", port: String(PORT) },
    });
    const t = await waitFor(
      "venice's TunnelEndpoint with an Error",
      async () => {
        const x = await tep(rome, ID.venice);
        return x?.status?.connection?.status === "Error" ? x : undefined;
      },
      {
        timeoutMs: 60_000,
        describe: async () => ({
          tep: (await tep(rome, ID.venice))?.status,
          leader: await view((await romeLeader())!.process.url, "leader"),
        }),
      },
    );
    expect(t.spec.remotePodCIDR).toBe(ROME_RESERVED);
    expect(t.spec.remoteNATPodCIDR).not.toBe("None");
    expect(parseCidr(t.spec.remoteNATPodCIDR).base).not.toBe(parseCidr(ROME_RESERVED).base);
    expect(t.status!.connection!.statusMessage).toContain(`TunnelEndpoint ${ns}/`);
    expect(t.status!.connection!.statusMessage).toContain(
      'backend_config.publicKey "not-a-wireguard-key" is not a base64 WireGuard key',
    );
    const events = await waitFor(
      "an InvalidTunnelEndpoint event",
      async () =>
        (
          await rome.client.list<KubeObject & { reason?: string; message?: string }>(Resources.events, {
            namespace: ns,
          })
        ).items.find((e) => e.reason === "InvalidTunnelEndpoint"),
      { timeoutMs: 30_000 },
    );
    expect(events.message).toContain("not-a-wireguard-key");
    expect(await tcpFromRome(3000)).toBe(milanSeesRome());
  }, 120_000);

  test("an endpoint that never answers stays Connecting, then is an Error naming the endpoint", async () => {
    await fakePeer(ID.verona, "verona", {
      podCIDR: "10.230.0.0/16",
      externalCIDR: "10.231.0.0/16",
      endpointIP: "198.18.0.77",
    });
    const connecting = await waitFor(
      "verona Connecting",
      async () => {
        const x = await tep(rome, ID.verona);
        return x?.status?.connection?.status ? x.status.connection : undefined;
      },
      { timeoutMs: 60_000, describe: () => romeManager.peerStates() },
    );
    expect(connecting.status).toBe("Connecting");
    const failed = await waitFor(
      "verona Error after the handshake timeout",
      async () => {
        const c = (await tep(rome, ID.verona))?.status?.connection;
        return c?.status === "Error" ? c : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(failed.statusMessage).toContain("no WireGuard handshake with 198.18.0.77:51820");
    expect(failed.statusMessage).toContain("check that the peer's gateway answers");
    expect(await tcpFromRome(3000)).toBe(milanSeesRome());
  }, 120_000);

  test("bad gateway and route flags exit non-zero with a message naming the flag", async () => {
    const route = ["route", "--node-name", "n", "--vtep-device", "uplink", "--vtep-address"];
    for (const [flag, value, message, role = ["gateway"]] of [
      ["--endpoint", "gateway:51820", /--endpoint must be ipv4:port/],
      ["--wireguard", "maybe", /--wireguard must be auto, kernel or userspace/],
      ["--security-mode", "FullPod", /--security-mode must be FullPodToPod or IntraClusterTrafficSegregation/],
      ["--lease-duration", "2", /--retry-period < --renew-deadline < --lease-duration/],
      ["--device", "a-very-long-device-name", /is not an interface name/],
      ["--vtep-address", "10.0.0.1", /--vtep-address and --vtep-device go together/],
      ["--listen-port", "70000", /--listen-port must be a whole number between 1 and 65535/],
      [
        "--mtu",
        "9",
        /--mtu must be a whole number between 576 and 65535/,
        ["route", "--node-name", "n", "--vtep-device", "uplink", "--vtep-address", "10.0.0.1"],
      ],
      ["--resync-period", "never", /--resync-period must be a positive number/, [...route, "10.0.0.1"]],
      ["--vtep-address", "node-1", /--vtep-address/, ["route", "--node-name", "n", "--vtep-device", "uplink"]],
    ] as [string, string, RegExp, string[]?][]) {
      const proc = Bun.spawn(
        [process.execPath, "cli/liqo.ts", ...role, "--kubeconfig", rig.clusters[0]!.kubeconfig, flag, value],
        { cwd: join(import.meta.dir, "../.."), stdout: "pipe", stderr: "pipe" },
      );
      const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      expect(code).not.toBe(0);
      expect(err).toMatch(message);
    }
  }, 60_000);
});

describe("security modes: milan protects itself from rome (overlapping pod CIDRs)", () => {
  const FILTER = "liqo_filter";
  /** A path of the matrix: from a "pod" namespace to an address as its cluster sees it. */
  interface Path {
    name: string;
    from: string;
    to: string;
    /** Allowed in IntraClusterTrafficSegregation (every path is allowed in FullPodToPod). */
    segregated: boolean;
    /** The source address the server must see. */
    seen: string;
  }
  let paths: Path[] = [];
  let twinPod: { name: string; namespace: string };
  let registry: Registry;
  const nft = () => createNft(runner, milan.gw);
  const romeSees = (ip: string) => romeManager.translator(ID.milan)(ip, "backward");
  const milanSees = (ip: string) => milanManager.translator(ID.rome)(ip, "backward");
  const rejectedFromRome = async () => rejectCounts(await nft().listTable("ip", FILTER)).get(ID.rome)?.packets ?? 0;

  /** Every path once; in segregation a blocked one must be refused at once (not time out) and counted. */
  async function matrix(mode: SecurityMode) {
    const results: { path: string; outcome: string; seen?: string; counted?: boolean }[] = [];
    const want: typeof results = [];
    for (const p of paths) {
      const allowed = mode === "FullPodToPod" || p.segregated;
      const before = allowed ? 0 : await rejectedFromRome();
      const r = await probe(lab, p.from, p.to);
      const counted = allowed ? undefined : (await rejectedFromRome()) > before;
      results.push({ path: p.name, outcome: r.outcome, seen: r.seen, counted });
      want.push(
        allowed
          ? { path: p.name, outcome: "answered", seen: p.seen, counted: undefined }
          : { path: p.name, outcome: "refused", seen: undefined, counted: true },
      );
    }
    expect(results).toEqual(want);
  }

  /** Waits until the tunnel carries a path the mode allows (a restarted gateway reopens its device). */
  const tunnelUp = (p: Path) =>
    waitFor(
      `${p.name} to answer`,
      async () => {
        await replicate([rome, milan]);
        return (await probe(lab, p.from, p.to, 7000, 1500)).outcome === "answered" || undefined;
      },
      { timeoutMs: 90_000 },
    );

  test("FullPodToPod: every path of the matrix answers, and milan's gateway has no filter table", async () => {
    // The peering's NetworkConfigs exchanged (also when this block runs alone): the translators know the NAT.
    await waitFor(
      "rome's pod to reach milan's pod at its remapped address",
      async () => {
        await replicate([rome, milan]);
        const target = romeSeesMilan();
        return (
          (target !== milan.podIp && (await probe(lab, rome.pod, target, 7000, 1500)).outcome === "answered") ||
          undefined
        );
      },
      { timeoutMs: 120_000 },
    );
    // Rome: a pod of its own, and the remote twin of a milan pod offloaded to rome.
    const offloadedIp = await scheduledPod(rome.client, "iso-offloaded", "default");
    const romeOffloaded = await addPodNamespace(lab, rome, "o", offloadedIp);
    await offloadedPod(milan.client, ID.rome, "iso-offloaded", milanSees(offloadedIp));
    // Milan: rome's pod running here (a ShadowPod's pod in rome's twin namespace), venice's, and
    // the endpoint of a Service milan reflects to rome (in a namespace milan offloads there).
    for (const [name, id] of [
      ["iso-twin-rome", ID.rome],
      ["iso-twin-venice", ID.venice],
    ] as const)
      await milan.client.create(Resources.namespaces, {
        metadata: { name, labels: { "liqo.io/remote-cluster-id": id } },
      });
    await ensureNamespace(milan.client, "iso-shop");
    twinPod = { name: "iso-twin", namespace: "iso-twin-rome" };
    const shadow = { "liqo.io/managed-by": "shadowpod" };
    const twinIp = await scheduledPod(milan.client, twinPod.name, twinPod.namespace, shadow);
    const veniceIp = await scheduledPod(milan.client, "iso-venice", "iso-twin-venice", shadow);
    const webIp = await scheduledPod(milan.client, "iso-web", "iso-shop");
    await milan.client.create(NamespaceMapResource, {
      apiVersion: "virtualkubelet.liqo.io/v1alpha1",
      kind: "NamespaceMap",
      metadata: { name: "iso-rome", namespace: milan.tenant, labels: { "liqo.io/remote-cluster-id": ID.rome } },
      spec: { desiredMapping: { "iso-shop": "iso-shop-milan" } },
    });
    await milan.client.create(Resources.endpointSlices, {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: "iso-web",
        namespace: "iso-shop",
        labels: { "kubernetes.io/service-name": "iso-web", "endpointslice.kubernetes.io/managed-by": "liqo-test" },
      },
      addressType: "IPv4",
      endpoints: [{ addresses: [webIp] }],
      ports: [{ port: 7000, protocol: "TCP" }],
    });
    const served: [string, string][] = [];
    for (const [tag, ip] of [
      ["t", twinIp],
      ["v", veniceIp],
      ["s", webIp],
    ] as const) {
      const ns = await addPodNamespace(lab, milan, tag, ip);
      await lab.serve(ns, echoScript, ["7000"]);
      served.push([tag, ns]);
    }
    paths = [
      {
        name: "rome pod → a milan pod",
        from: rome.pod,
        to: romeSees(milan.podIp),
        segregated: false,
        seen: milanSeesRome(),
      },
      {
        name: "milan's pod offloaded to rome → a milan pod",
        from: romeOffloaded,
        to: romeSees(milan.podIp),
        segregated: true,
        seen: milanSees(offloadedIp),
      },
      {
        name: "rome pod → rome's pod running in milan",
        from: rome.pod,
        to: romeSees(twinIp),
        segregated: true,
        seen: milanSeesRome(),
      },
      {
        name: "rome pod → endpoint of a Service milan reflects to rome",
        from: rome.pod,
        to: romeSees(webIp),
        segregated: true,
        seen: milanSeesRome(),
      },
      {
        name: "rome pod → venice's pod running in milan",
        from: rome.pod,
        to: romeSees(veniceIp),
        segregated: false,
        seen: milanSeesRome(),
      },
      {
        name: "milan pod → rome pod (the answer comes back through milan's filter)",
        from: milan.pod,
        to: milanSeesRome(),
        segregated: true,
        seen: romeSeesMilan(),
      },
    ];
    // Overlapping pod CIDRs: both sides give pods 10.200.x.y, so every address crosses a NAT.
    expect(romeSees(twinIp)).not.toBe(twinIp);
    await tunnelUp(paths[0]!);
    await matrix("FullPodToPod");
    expect(await nft().listTable("ip", FILTER)).toBeUndefined();
  }, 300_000);

  test("IntraClusterTrafficSegregation (the gateway rolled with the new mode): allowed paths answer, blocked ones are refused at once and counted", async () => {
    await milanGateway.stop();
    registry = createRegistry();
    milanGateway = await startMilanGateway("milan-gw-seg", {
      securityMode: "IntraClusterTrafficSegregation",
      registry,
    });
    await tunnelUp(paths[2]!);
    const table = await waitFor(
      "milan's filter table with rome's sets",
      async () => {
        const t = await nft().listTable("ip", FILTER);
        return t && (t.sets[`dst_${ID.rome}`]?.length ?? 0) >= 2 && (t.sets[`src_${ID.rome}`]?.length ?? 0) >= 1
          ? t
          : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(table.chains).toEqual(["forward"]);
    expect(table.rules[0]!.comment).toStartWith("established/");
    expect(table.sets[`src_${ID.rome}`]).toEqual([paths[1]!.seen]);
    await matrix("IntraClusterTrafficSegregation");
    // The counter reaches the metrics at the next pass.
    const counted = await waitFor(
      "rejected packets in liqo_gateway_rejected_packets_total",
      async () => {
        const m = new RegExp(`liqo_gateway_rejected_packets_total\\{remote_cluster_id="${ID.rome}"\\} (\\d+)`).exec(
          await registry.expose(),
        );
        return m && Number(m[1]) >= 2 ? Number(m[1]) : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(counted).toBeLessThanOrEqual(await rejectedFromRome());
    expect(milanGateway.leader().securityMode).toBe("IntraClusterTrafficSegregation");
  }, 180_000);

  test("the sets follow the objects: rome's twin pod without its ShadowPod label is refused, then answers again", async () => {
    const path = paths[2]!;
    const label = (value: string | null) =>
      milan.client.mergePatch(Resources.pods, twinPod.name, twinPod.namespace, {
        metadata: { labels: { "liqo.io/managed-by": value } },
      });
    await label(null);
    await waitFor(
      "the twin pod refused",
      async () => (await probe(lab, path.from, path.to)).outcome === "refused" || undefined,
      {
        timeoutMs: 30_000,
      },
    );
    await label("shadowpod");
    await waitFor(
      "the twin pod answering",
      async () => (await probe(lab, path.from, path.to)).outcome === "answered" || undefined,
      {
        timeoutMs: 30_000,
      },
    );
  }, 90_000);

  test("back to FullPodToPod: the filter table a crashed holder left is deleted, and every path answers", async () => {
    await milanGateway.stop();
    // A clean stop takes the filter with the device.
    expect(await nft().listTable("ip", FILTER)).toBeUndefined();
    // As if the segregation holder had been killed: its table stays behind, refusing everything new.
    await nft().apply(renderFilterTable({ device: milan.device, table: FILTER, peers: [] }).script);
    milanGateway = await startMilanGateway("milan-gw-1");
    await waitFor(
      "the left-over filter table deleted",
      async () => !(await nft().listTable("ip", FILTER)) || undefined,
      {
        timeoutMs: 30_000,
      },
    );
    await tunnelUp(paths[0]!);
    await matrix("FullPodToPod");
  }, 180_000);
});
