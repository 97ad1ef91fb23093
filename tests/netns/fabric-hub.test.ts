// Hub and spoke on real control planes: three rig clusters that all use pod CIDR 10.200.0.0/16 and
// external CIDR 10.210.0.0/16; rome ↔ milan and milan ↔ venice are peered (the test plays the CRD
// replicator for the NetworkConfigs, as in fabric-e2e.test.ts), rome ↔ venice are not. Each cluster
// runs a network manager, a gateway and a route agent (in-process) in network namespaces. Milan's
// reflection engine towards rome (the real endpointslices plugin) reflects an EndpointSlice whose
// endpoint is venice's pod as milan sees it: milan's manager gives it a stable address of milan's
// external CIDR (as rome sees it), records it in a NatMapping, milan's gateway installs the DNAT,
// and rome's pod reaches venice's pod at that address through milan (ICMP and TCP).
// The last test does it across processes: a translation watcher (the controller manager's way)
// only requests the address on the NatMapping, and milan's manager allocates it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { installCrds } from "../../core/apis/crds.ts";
import {
  NatMappingResource,
  TunnelEndpointResource,
  type NatMapping,
  type TunnelEndpoint,
} from "../../core/apis/index.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { createLogger } from "../../core/log.ts";
import { createReflectionEngine, type ReflectionEngine } from "../../core/reflection/engine/engine.ts";
import { createGatewayController, type GatewayController } from "../../netfabric/gateway/controller.ts";
import { contains, parseCidr, parseIpv4 } from "../../netfabric/ipam/index.ts";
import {
  CLUSTER_ID_LABEL,
  createNetworkManager,
  createTranslationWatcher,
  type NetworkManager,
} from "../../netfabric/manager/index.ts";
import { createIp } from "../../netfabric/os/ip.ts";
import { createRouteAgent, type RouteAgent } from "../../netfabric/overlay/agent.ts";
import { builtinWasm } from "../../reflectors/index.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import {
  buildSide,
  ensureNamespace,
  joinInternet,
  realPod,
  replicate,
  type FabricSide,
  type ReplicaEnd,
} from "./fabric-rig.ts";
import { createLab, runner, type Lab } from "./lab.ts";

const connectScript = join(import.meta.dir, "fixtures", "connect.ts");
const echoScript = join(import.meta.dir, "fixtures", "echo-source.ts");
const NAMES = ["rome", "milan", "venice"] as const;
type Name = (typeof NAMES)[number];
const ID: Record<Name, string> = {
  rome: "c0ffee00-rome-4000-8000-000000000001",
  milan: "c0ffee00-milan-4000-8000-000000000002",
  venice: "c0ffee00-venice-4000-8000-000000000003",
};
const PEERS: Record<Name, Name[]> = { rome: ["milan"], milan: ["rome", "venice"], venice: ["milan"] };
const EXTERNAL = "10.210.0.0/16";
const PORT = 51820;
const APP = "hub-app";
const log = (cluster: string) => createLogger({ cluster }, { level: (process.env.FABRIC_LOG ?? "warn") as "warn" });
const tenant = (peer: Name) => `liqo-tenant-${peer}`;

let rig: TestRig;
let lab: Lab;
const side = {} as Record<Name, FabricSide>;
const manager = {} as Record<Name, NetworkManager>;
const gateways: GatewayController[] = [];
const agents: RouteAgent[] = [];
let engine: ReflectionEngine;

const end = (name: Name, peer: Name): ReplicaEnd => ({ client: side[name].client, id: ID[name], tenant: tenant(peer) });
const replicateAll = async () => {
  await replicate([end("rome", "milan"), end("milan", "rome")]);
  await replicate([end("milan", "venice"), end("venice", "milan")]);
};
const tep = async (name: Name, peer: Name) =>
  (
    await side[name].client.list<TunnelEndpoint>(TunnelEndpointResource, {
      labelSelector: `${CLUSTER_ID_LABEL}=${ID[peer]}`,
    })
  ).items[0];

async function pingOk(from: string, to: string): Promise<boolean> {
  try {
    return (await lab.sh(from, ["ping", "-c", "1", "-W", "1", to])).includes("1 received");
  } catch {
    return false;
  }
}

async function tcp(from: string, to: string, timeoutMs = 1500): Promise<string | undefined> {
  try {
    return (await lab.sh(from, [process.execPath, connectScript, to, "7003", String(timeoutMs)])).trim() || undefined;
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 3, names: [...NAMES], nodes: 1, overlappingPodCidrs: true });
  lab = await createLab();
  const dev = (tag: string) => `lq${process.pid.toString(36)}-${lab.id.slice(-3)}${tag}`;
  for (const [i, name] of NAMES.entries()) {
    const client = rig.client(name);
    await installCrds(client, { timeoutMs: 120_000 });
    for (const ns of ["liqo", APP, ...PEERS[name].map(tenant)]) await ensureNamespace(client, ns);
    const pod = await realPod(client, `hub-${name}`);
    side[name] = await buildSide(lab, {
      name,
      id: ID[name],
      client,
      tenant: tenant(PEERS[name][0]!),
      nodeName: pod.node,
      podIp: pod.ip,
      nodeVtep: `172.16.${i + 1}.1`,
      gwVtep: `172.16.${i + 1}.2`,
      publicIp: `198.18.0.${i + 1}`,
      device: dev(name.slice(0, 1)),
    });
  }
  await joinInternet(
    lab,
    NAMES.map((n) => side[n]),
  );
  await lab.serve(side.venice.pod, echoScript, ["7003"]);
  for (const name of NAMES) {
    const s = side[name];
    const cluster = rig.clusters.find((c) => c.name === name)!;
    manager[name] = createNetworkManager({
      client: s.client,
      liqoNamespace: "liqo",
      logger: log(name),
      resyncMs: 5_000,
      ipam: { podCidr: cluster.podCIDR, serviceCidr: cluster.serviceCIDR, externalCidr: EXTERNAL, reserved: [] },
      peers: PEERS[name].map((p) => ({ remoteClusterId: ID[p], remoteClusterName: p, tenantNamespace: tenant(p) })),
    });
    await manager[name].start();
    const agent = createRouteAgent({
      client: s.client,
      nodeName: s.nodeName,
      liqoNamespace: "liqo",
      ip: createIp(runner, s.node),
      end: { vtepIp: s.nodeVtep, dev: "uplink" },
      intervalMs: 2_000,
      logger: log(name),
    });
    await agent.start();
    agents.push(agent);
    const gateway = createGatewayController({
      client: s.client,
      liqoNamespace: "liqo",
      identity: `${name}-gw-0`,
      netns: s.gw,
      device: s.device,
      listenPort: PORT,
      underlayDevice: "inet",
      wireguard: "userspace",
      endpoint: `${s.publicIp}:${PORT}`,
      nodeName: s.nodeName,
      overlay: { vtepIp: s.gwVtep, dev: "uplink" },
      lease: { durationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 1_000 },
      intervalMs: 2_000,
      handshakeTimeoutMs: 15_000,
      logger: log(name),
    });
    await gateway.start();
    gateways.push(gateway);
  }
}, 600_000);

afterAll(async () => {
  await engine?.stop().catch(() => undefined);
  for (const g of gateways) await g.stop().catch(() => undefined);
  for (const a of agents) await a.stop().catch(() => undefined);
  for (const m of Object.values(manager)) await m.stop().catch(() => undefined);
  await lab?.cleanup();
  await rig?.down();
}, 120_000);

describe("hub and spoke rome ↔ milan ↔ venice on three clusters with the same pod CIDR", () => {
  test("the two peerings connect; rome and venice have no tunnel with each other", async () => {
    expect(rig.clusters.map((c) => c.podCIDR)).toEqual(["10.200.0.0/16", "10.200.0.0/16", "10.200.0.0/16"]);
    await waitFor(
      "all four TunnelEndpoints Connected",
      async () => {
        await replicateAll();
        const all = await Promise.all([
          tep("rome", "milan"),
          tep("milan", "rome"),
          tep("milan", "venice"),
          tep("venice", "milan"),
        ]);
        return all.every((t) => t?.status?.connection?.status === "Connected") || undefined;
      },
      {
        timeoutMs: 240_000,
        describe: async () => (await Promise.all([tep("rome", "milan"), tep("milan", "venice")])).map((t) => t?.status),
      },
    );
    expect(await tep("rome", "venice")).toBeUndefined();
    expect(await tep("venice", "rome")).toBeUndefined();
  }, 300_000);

  test("venice's pod reflected by milan into rome gets a stable external-CIDR address, recorded in a NatMapping", async () => {
    const veniceSeenByMilan = manager.milan.translator(ID.venice)(side.venice.podIp, "backward");
    expect(veniceSeenByMilan).not.toBe(side.venice.podIp);
    await side.milan.client.create(Resources.services, {
      metadata: { name: "venice-db", namespace: APP },
      spec: { ports: [{ port: 7003 }] },
    });
    await side.milan.client.create(Resources.endpointSlices, {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: "venice-db-remote", namespace: APP, labels: { "kubernetes.io/service-name": "venice-db" } },
      addressType: "IPv4",
      ports: [{ port: 7003, protocol: "TCP" }],
      endpoints: [{ addresses: [veniceSeenByMilan], conditions: { ready: true } }],
    });
    // Milan's reflection towards rome, translating with milan's network manager (it allocates).
    engine = createReflectionEngine({
      local: side.milan.client,
      remote: side.rome.client,
      localClusterId: ID.milan,
      remoteClusterId: ID.rome,
      translateIp: manager.milan.translator(ID.rome),
      logger: log("milan"),
    });
    await engine.addPlugin(await builtinWasm("endpointslices"), { trust: "builtin", source: "builtin:endpointslices" });
    await engine.addNamespacePair({ localNamespace: APP, remoteNamespace: APP });
    const slice = await waitFor(
      "the EndpointSlice reflected into rome",
      async () =>
        (
          await side.rome.client.list<KubeObject & { endpoints?: { addresses: string[] }[] }>(
            Resources.endpointSlices,
            { namespace: APP },
          )
        ).items.find((x) => x.metadata.labels?.["kubernetes.io/service-name"] === "venice-db" && x.endpoints?.length),
      { timeoutMs: 120_000 },
    );
    const [address] = slice.endpoints!.flatMap((e) => e.addresses);
    // In milan's external CIDR as rome sees it, and the same answer every time.
    const romeTep = (await tep("rome", "milan"))!;
    expect(contains(parseCidr(romeTep.spec.remoteNATExternalCIDR), parseIpv4(address!))).toBe(true);
    expect(manager.milan.translator(ID.rome)(veniceSeenByMilan, "forward")).toBe(address!);
    const mapping = await waitFor(
      "milan's NatMapping for rome",
      async () =>
        (
          await side.milan.client.list<NatMapping>(NatMappingResource, {
            labelSelector: `${CLUSTER_ID_LABEL}=${ID.rome}`,
          })
        ).items.find((m) => Object.keys(m.spec.clusterMappings ?? {}).length),
      { timeoutMs: 60_000 },
    );
    expect(mapping.spec.clusterMappings[veniceSeenByMilan]).toBeDefined();
    // Rome's route agent and gateway already send milan's external CIDR into the tunnel.
    expect(
      await waitFor(
        "ping rome pod → venice pod via milan",
        async () => (await pingOk(side.rome.pod, address!)) || undefined,
        { timeoutMs: 60_000 },
      ),
    ).toBe(true);
    const source = await waitFor("TCP rome pod → venice pod via milan", () => tcp(side.rome.pod, address!), {
      timeoutMs: 60_000,
    });
    // Venice sees milan's masquerade address: inside milan's external CIDR as venice sees it.
    const veniceTep = (await tep("venice", "milan"))!;
    expect(contains(parseCidr(veniceTep.spec.remoteNATExternalCIDR), parseIpv4(source))).toBe(true);
    console.log(`hub: rome → ${address} (NatMapping on milan) → venice pod ${side.venice.podIp}; venice saw ${source}`);
  }, 300_000);

  test("a restarted manager gives the same address; the endpoint gone, the NatMapping entry and the path go", async () => {
    const veniceSeenByMilan = manager.milan.translator(ID.venice)(side.venice.podIp, "backward");
    const before = manager.milan.translator(ID.rome)(veniceSeenByMilan, "forward");
    // Reflection stops first, so nothing translates with the manager being replaced.
    await engine.stop();
    await manager.milan.store.flush();
    await manager.milan.stop();
    const cluster = rig.clusters.find((c) => c.name === "milan")!;
    manager.milan = createNetworkManager({
      client: side.milan.client,
      liqoNamespace: "liqo",
      logger: log("milan"),
      resyncMs: 5_000,
      ipam: { podCidr: cluster.podCIDR, serviceCidr: cluster.serviceCIDR, externalCidr: EXTERNAL, reserved: [] },
      peers: PEERS.milan.map((p) => ({ remoteClusterId: ID[p], remoteClusterName: p, tenantNamespace: tenant(p) })),
    });
    await manager.milan.start();
    // Restored from IpamStorage, not allocated afresh: the entry is there before anyone asks.
    expect(
      manager.milan.store.ipam.natMappings().find((m) => m.clusterId === ID.rome)?.clusterMappings[veniceSeenByMilan],
    ).toBeDefined();
    expect(manager.milan.translator(ID.rome)(veniceSeenByMilan, "forward")).toBe(before);
    expect(await tcp(side.rome.pod, before, 3000)).toBeDefined();
    // The endpoint stops being reflected: the manager releases it, the NatMapping and the DNAT go.
    await manager.milan.store.update("release venice's endpoint", (ipam) =>
      ipam.releaseEndpointIp(ID.rome, veniceSeenByMilan),
    );
    await waitFor(
      "the NatMapping entry to go",
      async () =>
        !(
          await side.milan.client.list<NatMapping>(NatMappingResource, {
            labelSelector: `${CLUSTER_ID_LABEL}=${ID.rome}`,
          })
        ).items.some((m) => m.spec.clusterMappings?.[veniceSeenByMilan]) || undefined,
      { timeoutMs: 60_000 },
    );
    await waitFor(
      "the path through milan to close",
      async () => (await tcp(side.rome.pod, before, 1000)) === undefined || undefined,
      { timeoutMs: 60_000 },
    );
  }, 180_000);

  test("across processes: a translation watcher (as in the controller manager) requests the address on the NatMapping; milan's manager allocates it and the path opens", async () => {
    const veniceSeenByMilan = manager.milan.translator(ID.venice)(side.venice.podIp, "backward");
    // Only the API between the two: the watcher never touches milan's IPAM.
    const watcher = createTranslationWatcher({
      client: side.milan.client,
      remoteClusterId: ID.rome,
      onError: () => undefined,
    });
    await watcher.start();
    try {
      const address = await waitFor(
        "milan's manager to answer the request",
        () => {
          const out = watcher.translateIp(veniceSeenByMilan, "forward");
          return out !== veniceSeenByMilan ? out : undefined;
        },
        { timeoutMs: 60_000, describe: () => watcher.sources().natMapping },
      );
      const romeTep = (await tep("rome", "milan"))!;
      expect(contains(parseCidr(romeTep.spec.remoteNATExternalCIDR), parseIpv4(address))).toBe(true);
      expect(manager.milan.translator(ID.rome)(veniceSeenByMilan, "forward")).toBe(address);
      expect(
        await waitFor(
          "TCP rome pod → venice pod via milan at the requested address",
          () => tcp(side.rome.pod, address),
          { timeoutMs: 60_000 },
        ),
      ).toBeDefined();
    } finally {
      await watcher.stop();
    }
  }, 180_000);
});
