// The network manager on two real clusters that both use pod CIDR 10.200.0.0/16 (and external
// CIDR 10.210.0.0/16): rome runs `liqo network-manager` as a process, milan runs it in-process;
// the test plays the CRD replicator (copying each side's NetworkConfig into the other's tenant
// namespace with Liqo's labels, and its status back). Both sides remap the other, agree on the
// TunnelEndpoint, persist the IPAM in IpamStorage across a restart, report a malformed peer
// NetworkConfig without touching anything else, and release everything on unpeer.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { installCrds } from "../../core/apis/crds.ts";
import {
  IpamStorageResource,
  NatMappingResource,
  NetworkConfigResource,
  TunnelEndpointResource,
  type IpamStorage,
  type NatMapping,
  type NetworkConfig,
  type TunnelEndpoint,
} from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { createLogger } from "../../core/log.ts";
import { contains, parseCidr, parseIpv4, restoreIpam } from "../../netfabric/ipam/index.ts";
import {
  createIpamStore,
  createIpTranslator,
  createNetworkManager,
  snapshotFromIpamSpec,
  type NetworkManager,
  type Peer,
} from "../../netfabric/manager/index.ts";
import { generateKeyPair } from "../../netfabric/os/wireguard-keys.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { mutate } from "../chaos/fuzz.ts";
import { seeded } from "../chaos/random.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { namespace } from "../support/namespace.ts";

const root = resolve(import.meta.dir, "../..");
const ID = {
  rome: "5a1e7c1e-rome-4000-8000-000000000001",
  milan: "5a1e7c1e-milan-4000-8000-000000000002",
  venice: "5a1e7c1e-venice-4000-8000-000000000003",
};
const TENANT = { rome: "liqo-tenant-milan", milan: "liqo-tenant-rome" }; // in each cluster, the namespace of its peer
const GATEWAY = { rome: "172.18.0.2:5871", milan: "172.18.0.3:5871" };
const EXTERNAL = "10.210.0.0/16";
const OVERLAP = "10.200.0.0/16";

let rig: TestRig;
let rome: KubeClient;
let milan: KubeClient;
let dir: string;
let proc: ReturnType<typeof Bun.spawn> | undefined;
let output = "";
let url = "";
let milanManager: NetworkManager;
const keys = { rome: generateKeyPair(), milan: generateKeyPair() };

const romePeersFile = () => join(dir, "rome-peers.yaml");
const peerYaml = (peers: Peer[]) =>
  `peers:\n${peers.map((p) => `- {remoteClusterId: ${p.remoteClusterId}, remoteClusterName: ${p.remoteClusterName}, tenantNamespace: ${p.tenantNamespace}}\n`).join("")}`;
const milanPeer: Peer = { remoteClusterId: ID.milan, remoteClusterName: "milan", tenantNamespace: TENANT.rome };
const romePeer: Peer = { remoteClusterId: ID.rome, remoteClusterName: "rome", tenantNamespace: TENANT.milan };
const venicePeer: Peer = {
  remoteClusterId: ID.venice,
  remoteClusterName: "venice",
  tenantNamespace: "liqo-tenant-venice",
};

async function drain(stream: ReadableStream<Uint8Array>) {
  const decoder = new TextDecoder();
  for await (const chunk of stream) output += decoder.decode(chunk, { stream: true });
}

async function startRome(): Promise<void> {
  output = "";
  proc = Bun.spawn(
    [
      join(root, "node_modules/.bin/bun"),
      "cli/liqo.ts",
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
      GATEWAY.rome,
      "--peers-file",
      romePeersFile(),
      "--admin-address",
      "127.0.0.1:0",
    ],
    { cwd: root, stdout: "pipe", stderr: "pipe" },
  );
  void drain(proc.stdout as ReadableStream<Uint8Array>);
  void drain(proc.stderr as ReadableStream<Uint8Array>);
  const started = await waitFor(
    "rome's network manager to print its admin URL or exit",
    () => (proc!.exitCode !== null ? { exited: proc!.exitCode } : /admin API on (http:\/\/\S+)/.exec(output)?.[1]),
    { timeoutMs: 180_000 },
  );
  if (typeof started !== "string")
    throw new Error(`liqo network-manager exited with ${started.exited}: ${output.slice(-2000)}`);
  url = started;
}

async function stopRome() {
  if (proc && proc.exitCode === null) {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the network manager views' JSON, asserted on a few fields
const view = async <T = any>(name: string): Promise<T> => (await fetch(`${url}/views/${name}`)).json() as Promise<T>;

/** The gateway's key Secret, as Liqo's WireGuard driver creates it. */
async function keySecret(client: KubeClient, publicKey: string, privateKey: string) {
  await client.create(Resources.secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "wireguard-pubkey", namespace: "liqo", labels: { "net.liqo.io/key": "wireguard" } },
    stringData: { publicKey, privateKey },
  });
}

/** One pass of the CRD replicator in both directions: spec out, status back, orphans removed. */
async function replicate() {
  const sides = [
    { from: rome, fromId: ID.rome, fromNs: TENANT.rome, to: milan, toNs: TENANT.milan },
    { from: milan, fromId: ID.milan, fromNs: TENANT.milan, to: rome, toNs: TENANT.rome },
  ];
  for (const s of sides) {
    const sent = (
      await s.from.list<NetworkConfig>(NetworkConfigResource, {
        namespace: s.fromNs,
        labelSelector: "liqo.io/replication=true",
      })
    ).items;
    const copies = (
      await s.to.list<NetworkConfig>(NetworkConfigResource, {
        namespace: s.toNs,
        labelSelector: `liqo.io/originID=${s.fromId}`,
      })
    ).items;
    for (const orig of sent) {
      const labels: Record<string, string> = {
        ...orig.metadata.labels,
        "liqo.io/replication": "false",
        "liqo.io/replicated": "true",
        "liqo.io/originID": s.fromId,
      };
      delete labels["liqo.io/ownership"];
      let copy = copies.find((c) => c.metadata.name === orig.metadata.name);
      if (!copy) {
        copy = await s.to.create<NetworkConfig>(NetworkConfigResource, {
          apiVersion: "net.liqo.io/v1alpha1",
          kind: "NetworkConfig",
          metadata: { name: orig.metadata.name, namespace: s.toNs, labels },
          spec: orig.spec,
        });
      } else if (JSON.stringify(copy.spec) !== JSON.stringify(orig.spec)) {
        copy = await s.to.replace<NetworkConfig>(NetworkConfigResource, { ...copy, spec: orig.spec });
      }
      if (copy.status && JSON.stringify(copy.status) !== JSON.stringify(orig.status ?? {})) {
        await s.from.mergePatch(
          NetworkConfigResource,
          orig.metadata.name!,
          s.fromNs,
          { status: copy.status },
          "status",
        );
      }
    }
    for (const c of copies)
      if (!sent.some((o) => o.metadata.name === c.metadata.name))
        await s.to.delete(NetworkConfigResource, c.metadata.name!, s.toNs);
  }
}

const teps = async (client: KubeClient, ns: string) =>
  (await client.list<TunnelEndpoint>(TunnelEndpointResource, { namespace: ns })).items;
const ipamStorage = async (client: KubeClient) =>
  (await client.list<IpamStorage>(IpamStorageResource, { labelSelector: "net.liqo.io/ipamstorage=true" })).items;

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1, overlappingPodCidrs: true });
  rome = rig.client("rome");
  milan = rig.client("milan");
  dir = mkdtempSync(join(tmpdir(), "liqo-netmgr-"));
  for (const c of [rome, milan]) {
    await installCrds(c, { timeoutMs: 120_000 });
    await namespace(c, "liqo");
  }
  await namespace(rome, TENANT.rome);
  await namespace(milan, TENANT.milan);
  await keySecret(rome, keys.rome.publicKey, keys.rome.privateKey);
  await keySecret(milan, keys.milan.publicKey, keys.milan.privateKey);
  writeFileSync(romePeersFile(), peerYaml([milanPeer]));
  await startRome();
  milanManager = createNetworkManager({
    client: milan,
    liqoNamespace: "liqo",
    logger: createLogger({ cluster: "milan" }, { level: "warn" }),
    resyncMs: 5_000,
    ipam: { podCidr: rig.clusters[1]!.podCIDR, serviceCidr: rig.clusters[1]!.serviceCIDR, externalCidr: EXTERNAL },
    gatewayEndpoint: { ip: "172.18.0.3", port: 5871 },
    peers: [romePeer],
  });
  await milanManager.start();
}, 600_000);

afterAll(async () => {
  await milanManager?.stop();
  await stopRome();
  await rig?.down();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("NetworkConfig exchange with overlapping pod CIDRs", () => {
  test("the rig really overlaps", () => {
    expect(rig.clusters.map((c) => c.podCIDR)).toEqual([OVERLAP, OVERLAP]);
  });

  test("each side sends a Liqo NetworkConfig for its peer", async () => {
    const sent = await waitFor(
      "rome's NetworkConfig for milan",
      async () =>
        (
          await rome.list<NetworkConfig>(NetworkConfigResource, {
            namespace: TENANT.rome,
            labelSelector: `liqo.io/remoteID=${ID.milan}`,
          })
        ).items[0],
    );
    expect(sent.metadata.name).toMatch(/^milan-[0-9a-f]{6}$/);
    expect(sent.metadata.labels).toMatchObject({ "liqo.io/replication": "true", "liqo.io/ownership": "netcfgCreator" });
    expect(sent.spec).toEqual({
      cluster: { clusterID: ID.milan, clusterName: "milan" },
      podCIDR: OVERLAP,
      externalCIDR: EXTERNAL,
      endpointIP: "172.18.0.2",
      backendType: "wireguard",
      backend_config: { publicKey: keys.rome.publicKey, port: "5871" },
    });
  });

  test("both sides remap the other's 10.200.0.0/16 (and external CIDR) to a free network", async () => {
    const statuses = await waitFor(
      "both received NetworkConfigs to be processed",
      async () => {
        await replicate();
        const atRome = (
          await rome.list<NetworkConfig>(NetworkConfigResource, {
            namespace: TENANT.rome,
            labelSelector: `liqo.io/originID=${ID.milan}`,
          })
        ).items[0];
        const atMilan = (
          await milan.list<NetworkConfig>(NetworkConfigResource, {
            namespace: TENANT.milan,
            labelSelector: `liqo.io/originID=${ID.rome}`,
          })
        ).items[0];
        return (
          atRome?.status?.processed && atMilan?.status?.processed && { rome: atRome.status, milan: atMilan.status }
        );
      },
      { timeoutMs: 120_000 },
    );
    for (const [side, status] of Object.entries(statuses)) {
      const cluster = rig.clusters.find((c) => c.name === side)!;
      for (const nat of [status.podCIDRNAT!, status.externalCIDRNAT!]) {
        expect({ side, nat }).not.toEqual({ side, nat: "None" });
        const net = parseCidr(nat);
        expect(net.prefix).toBe(16);
        for (const taken of [cluster.podCIDR, cluster.serviceCIDR, EXTERNAL])
          expect({ nat, taken, overlaps: contains(parseCidr(taken), net.base) }).toEqual({
            nat,
            taken,
            overlaps: false,
          });
      }
      expect(status.podCIDRNAT).not.toBe(status.externalCIDRNAT);
    }
  });

  test("TunnelEndpoints appear on both sides with consistent CIDRs", async () => {
    const [atRome, atMilan] = await waitFor(
      "a TunnelEndpoint on each side",
      async () => {
        await replicate();
        const r = await teps(rome, TENANT.rome);
        const m = await teps(milan, TENANT.milan);
        return r.length === 1 && m.length === 1 && ([r[0]!, m[0]!] as const);
      },
      { timeoutMs: 120_000 },
    );
    expect(atRome.metadata.labels?.clusterID).toBe(ID.milan);
    expect(atRome.metadata.name).toMatch(/^milan-[0-9a-f]{6}$/);
    expect(atRome.spec.clusterID).toBe(ID.milan);
    expect(atMilan.spec.clusterID).toBe(ID.rome);
    // What rome calls milan's networks as seen locally is what milan calls its networks as seen remotely.
    expect(atRome.spec.remoteNATPodCIDR).toBe(atMilan.spec.localNATPodCIDR);
    expect(atRome.spec.remoteNATExternalCIDR).toBe(atMilan.spec.localNATExternalCIDR);
    expect(atMilan.spec.remoteNATPodCIDR).toBe(atRome.spec.localNATPodCIDR);
    expect(atMilan.spec.remoteNATExternalCIDR).toBe(atRome.spec.localNATExternalCIDR);
    expect([
      atRome.spec.localPodCIDR,
      atRome.spec.remotePodCIDR,
      atRome.spec.localExternalCIDR,
      atRome.spec.remoteExternalCIDR,
    ]).toEqual([OVERLAP, OVERLAP, EXTERNAL, EXTERNAL]);
    expect(atRome.spec.endpointIP).toBe("172.18.0.3");
    expect(atRome.spec.backend_config).toEqual({ publicKey: keys.milan.publicKey, port: "5871" });
    expect(atMilan.spec.endpointIP).toBe("172.18.0.2");
    expect(atMilan.spec.backend_config).toEqual({ publicKey: keys.rome.publicKey, port: "5871" });
    expect(atRome.metadata.ownerReferences?.[0]).toMatchObject({ kind: "NetworkConfig", name: atRome.metadata.name });
  });

  test("NatMappings follow the IPAM on both sides", async () => {
    for (const [client, peer] of [
      [rome, ID.milan],
      [milan, ID.rome],
    ] as const) {
      const nm = await waitFor(
        `a NatMapping for ${peer}`,
        async () =>
          (
            await client.list<NatMapping>(NatMappingResource, {
              labelSelector: `net.liqo.io/natmapping=true,clusterID=${peer}`,
            })
          ).items[0],
      );
      const tep = (await teps(client, client === rome ? TENANT.rome : TENANT.milan))[0]!;
      expect(nm.spec).toEqual({
        clusterID: peer,
        podCIDR: tep.spec.remoteNATPodCIDR,
        externalCIDR: tep.spec.localNATExternalCIDR,
        clusterMappings: {},
      });
    }
  });

  test("the translator maps a real milan pod IP into the remapped range on rome", async () => {
    await namespace(milan, "web");
    await milan.create(Resources.pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "echo", namespace: "web" },
      spec: { containers: [{ name: "echo", image: "echo" }] },
    });
    const podIp = await waitFor(
      "milan's pod to get an IP",
      async () =>
        (await milan.get<KubeObject & { status?: { podIP?: string } }>(Resources.pods, "echo", "web")).status?.podIP,
      { timeoutMs: 120_000 },
    );
    expect(contains(parseCidr(OVERLAP), parseIpv4(podIp))).toBe(true);
    // Rome's IPAM exactly as its network manager stored it.
    const [stored] = await ipamStorage(rome);
    const ipam = restoreIpam(snapshotFromIpamSpec(stored!.spec, stored!.metadata.name));
    const seen = createIpTranslator(ipam, ID.milan)(podIp, "backward");
    const tep = (await teps(rome, TENANT.rome))[0]!;
    expect(contains(parseCidr(tep.spec.remoteNATPodCIDR), parseIpv4(seen))).toBe(true);
    expect(seen.split(".").slice(2)).toEqual(podIp.split(".").slice(2));
    // And back: milan's translator shows rome's endpoint the way milan sees rome's pods.
    const forward = milanManager.translator(ID.rome)("10.200.9.9", "forward");
    expect(contains(parseCidr(tep.spec.localNATPodCIDR), parseIpv4(forward))).toBe(true);
  });

  test("rome's admin API shows the IPAM, NetworkConfigs, TunnelEndpoints and peers", async () => {
    const ipam = await view("ipam");
    expect(ipam.podCIDR).toBe(OVERLAP);
    expect(ipam.clusters.map((c: { clusterId: string }) => c.clusterId)).toEqual([ID.milan]);
    expect(ipam.storage.name).toBe("ipamstorage-liqo");
    const ncs = await view<{ direction: string; clusterId: string; processed: boolean }[]>("networkconfigs");
    expect(ncs.map((n) => `${n.direction} ${n.clusterId} ${n.processed}`).sort()).toEqual([
      `received ${ID.milan} true`,
      `sent ${ID.milan} true`,
    ]);
    const t = await view<{ clusterID: string }[]>("tunnelendpoints");
    expect(t.map((x) => x.clusterID)).toEqual([ID.milan]);
    expect((await view<{ phase: string }[]>("peers")).map((p) => p.phase)).toEqual(["Ready"]);
  });
});

describe("persistence", () => {
  test("a restarted manager restores the same allocations and leaves IpamStorage and the TunnelEndpoint untouched", async () => {
    const [before] = await ipamStorage(rome);
    const tepBefore = (await teps(rome, TENANT.rome))[0]!;
    await stopRome();
    await startRome();
    await waitFor(
      "rome's peer to be Ready again",
      async () => (await view<{ phase: string }[]>("peers"))[0]?.phase === "Ready",
      { timeoutMs: 120_000 },
    );
    const [after] = await ipamStorage(rome);
    expect(after!.spec).toEqual(before!.spec);
    expect(after!.metadata.resourceVersion).toBe(before!.metadata.resourceVersion!);
    const tepAfter = (await teps(rome, TENANT.rome))[0]!;
    expect(tepAfter.metadata.uid).toBe(tepBefore.metadata.uid!);
    expect(tepAfter.spec).toEqual(tepBefore.spec);
    const ipam = await view("ipam");
    expect(ipam.storage.writes).toBe(0);
  });
});

/** A NetworkConfig from a third peer, venice, as the CRD replicator puts it in venice's tenant namespace. */
function veniceNetworkConfig(name: string, podCIDR: string): NetworkConfig {
  return {
    apiVersion: "net.liqo.io/v1alpha1",
    kind: "NetworkConfig",
    metadata: {
      name,
      namespace: venicePeer.tenantNamespace,
      labels: {
        "liqo.io/replication": "false",
        "liqo.io/replicated": "true",
        "liqo.io/originID": ID.venice,
        "liqo.io/remoteID": ID.rome,
      },
    },
    spec: {
      cluster: { clusterID: ID.rome, clusterName: "rome" },
      podCIDR,
      externalCIDR: "10.211.0.0/16",
      endpointIP: "172.18.0.4",
      backendType: "wireguard",
      backend_config: { publicKey: keys.milan.publicKey, port: "5871" },
    },
  } as NetworkConfig;
}

describe("bad input", () => {
  test("a malformed peer NetworkConfig gets a Warning Event naming the field; nothing else changes", async () => {
    const [storageBefore] = await ipamStorage(rome);
    const tepBefore = (await teps(rome, TENANT.rome))[0]!;
    await namespace(rome, venicePeer.tenantNamespace);
    writeFileSync(romePeersFile(), peerYaml([milanPeer, venicePeer]));
    const bad = await rome.create<NetworkConfig>(
      NetworkConfigResource,
      veniceNetworkConfig("rome-bad", "10.300.0.0/16"),
    );
    const event = await waitFor(
      "a Warning Event on the malformed NetworkConfig",
      async () =>
        (
          await rome.list<KubeObject & { reason: string; message: string; type: string }>(Resources.events, {
            namespace: venicePeer.tenantNamespace,
            fieldSelector: `involvedObject.name=${bad.metadata.name}`,
          })
        ).items.find((e) => e.reason === "InvalidNetworkConfig"),
      { timeoutMs: 60_000 },
    );
    expect(event.type).toBe("Warning");
    expect(event.message).toContain("spec.podCIDR");
    expect(event.message).toContain("10.200.0.0/16"); // the example of a valid value
    const venice = await waitFor("venice's peer state", async () =>
      (await view<{ clusterId: string; phase: string; message: string }[]>("peers")).find(
        (p) => p.clusterId === ID.venice && p.phase !== "WaitingForPeerNetworkConfig",
      ),
    );
    expect(venice.phase).toBe("InvalidPeerNetworkConfig");
    expect(
      (await rome.get<NetworkConfig>(NetworkConfigResource, bad.metadata.name!, venicePeer.tenantNamespace)).status
        ?.processed ?? false,
    ).toBe(false);
    // rome's own NetworkConfig for venice exists, milan's peering is untouched.
    const [storageAfter] = await ipamStorage(rome);
    expect(Object.keys(storageAfter!.spec.clusterSubnets)).toEqual([ID.milan]);
    expect(storageAfter!.spec.clusterSubnets).toEqual(storageBefore!.spec.clusterSubnets);
    expect((await teps(rome, TENANT.rome))[0]!.metadata.resourceVersion).toBe(tepBefore.metadata.resourceVersion!);
    expect(await teps(rome, venicePeer.tenantNamespace)).toEqual([]);
  });

  test("120 fuzzed NetworkConfigs from a peer, one at a time: each is refused by the API server, or judged by the manager (processed, or a Warning Event); the manager never exits and milan's peering is untouched; a valid one afterwards is processed", async () => {
    const seed = Number(process.env.LIQO_FUZZ_SEED ?? Date.now() % 1_000_000);
    const rand = seeded(seed);
    const ns = venicePeer.tenantNamespace;
    const pid = proc!.pid;
    const [storageBefore] = await ipamStorage(rome);
    const tepBefore = (await teps(rome, TENANT.rome))[0]!;
    const fromVenice = async () =>
      (
        await rome.list<NetworkConfig>(NetworkConfigResource, {
          namespace: ns,
          labelSelector: "liqo.io/replicated=true",
        })
      ).items;
    const clear = async () => {
      for (const o of await fromVenice()) await rome.delete(NetworkConfigResource, o.metadata.name!, ns);
    };
    const valid = (name: string) => veniceNetworkConfig(name, OVERLAP);
    const warnings = async (name: string) =>
      (
        await rome.list<KubeObject & { reason: string; message: string; type: string }>(Resources.events, {
          namespace: ns,
          fieldSelector: `involvedObject.name=${name}`,
        })
      ).items.filter((e) => e.type === "Warning");
    const outcomes: Record<string, number> = {};
    const wrong: string[] = [];
    for (let i = 0; i < 120; i++) {
      await clear();
      const name = `venice-fuzz-${i}`;
      const { object, done } = mutate(valid(name), rand);
      try {
        await rome.create(NetworkConfigResource, object);
      } catch (err) {
        const status = err instanceof KubeApiError ? err.status : 0;
        outcomes[`refused ${status}`] = (outcomes[`refused ${status}`] ?? 0) + 1;
        if (status < 400 || status >= 500)
          wrong.push(`${name} (${done.join("; ")}): ${status} ${(err as Error).message}`);
        continue;
      }
      // The manager's verdict on this one: processed (the status it writes), or a Warning Event.
      const verdict = await waitFor(
        `the network manager's verdict on ${name} (${done.join("; ")})`,
        async () => {
          if (proc!.exitCode !== null) return `exited ${proc!.exitCode}`;
          const o = await rome.find<NetworkConfig>(NetworkConfigResource, name, ns);
          if (o?.status?.processed) return "processed";
          const w = await warnings(name);
          return w.length ? `warning ${w[0]!.reason}` : undefined;
        },
        {
          timeoutMs: 60_000,
          describe: async () => (await view("peers")).find((p: { clusterId: string }) => p.clusterId === ID.venice),
        },
      );
      outcomes[verdict] = (outcomes[verdict] ?? 0) + 1;
      if (verdict.startsWith("exited"))
        wrong.push(`${name} (${done.join("; ")}): the manager ${verdict}: ${output.slice(-1500)}`);
      if (verdict.startsWith("warning")) {
        const [w] = await warnings(name);
        // A clear message: it names the object and says what the peer must send.
        if (!w!.message.includes(name)) wrong.push(`${name}: the Warning does not name the object: ${w!.message}`);
      }
      if (wrong.length) break;
    }
    console.log(`network manager fuzz seed ${seed} (LIQO_FUZZ_SEED replays it): ${JSON.stringify(outcomes)}`);
    expect(wrong).toEqual([]);
    expect(proc!.exitCode).toBeNull();
    expect(proc!.pid).toBe(pid);
    // Some got through to the manager, or nothing was tried.
    expect(Object.keys(outcomes).some((k) => !k.startsWith("refused"))).toBe(true);
    // milan's peering did not move.
    const [storageAfter] = await ipamStorage(rome);
    expect(storageAfter!.spec.clusterSubnets[ID.milan]).toEqual(storageBefore!.spec.clusterSubnets[ID.milan]);
    expect((await teps(rome, TENANT.rome))[0]!.metadata.resourceVersion).toBe(tepBefore.metadata.resourceVersion!);
    // A valid NetworkConfig now: processed, venice remapped away from milan's networks, a TunnelEndpoint for it.
    await clear();
    await rome.create(NetworkConfigResource, valid("venice-valid"));
    const processed = await waitFor(
      "the valid NetworkConfig processed after the fuzz",
      async () => {
        const o = await rome.find<NetworkConfig>(NetworkConfigResource, "venice-valid", ns);
        return o?.status?.processed ? o : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(Object.values(storageAfter!.spec.clusterSubnets[ID.milan] ?? {})).not.toContain(
      processed.status!.podCIDRNAT,
    );
    // Its TunnelEndpoint waits for venice to process rome's NetworkConfig (nobody plays venice here).
    const venice = await waitFor("venice waiting for its peer, past validation", async () =>
      (await view<{ clusterId: string; phase: string; remoteNetworkConfig?: string }[]>("peers")).find(
        (p) => p.clusterId === ID.venice && p.remoteNetworkConfig === `${ns}/venice-valid`,
      ),
    );
    expect(venice.phase).toBe("WaitingForPeerProcessing");
    await clear();
  }, 600_000);

  test("the role refuses bad flags with a message naming the flag", async () => {
    for (const [flags, message] of [
      [["--pod-cidr", "10.200.0.0/33"], /podCIDR: "10.200.0.0\/33" is not an IPv4 CIDR/],
      [["--gateway-endpoint", "gateway:5871"], /--gateway-endpoint.*IPv4/],
      [["--reserved-subnets", "10.200.0.0/24"], /overlaps podCIDR/],
    ] as const) {
      const args = {
        "--pod-cidr": OVERLAP,
        "--service-cidr": "10.50.0.0/16",
        "--gateway-endpoint": "172.18.0.2:5871",
        "--reserved-subnets": "",
      } as Record<string, string>;
      args[flags[0]] = flags[1];
      const p = Bun.spawn(
        [
          join(root, "node_modules/.bin/bun"),
          "cli/liqo.ts",
          "network-manager",
          "--kubeconfig",
          rig.clusters[0]!.kubeconfig,
          "--peers-file",
          romePeersFile(),
          "--admin-address",
          "127.0.0.1:0",
          ...Object.entries(args).flat(),
        ],
        { cwd: root, stdout: "pipe", stderr: "pipe" },
      );
      const [stderr, code] = [await new Response(p.stderr as ReadableStream).text(), await p.exited];
      expect(stderr).toMatch(message);
      expect(code).not.toBe(0);
    }
  });
});

describe("unpeer", () => {
  test("removing the peer releases its networks and deletes its TunnelEndpoint, NetworkConfig and NatMapping", async () => {
    writeFileSync(romePeersFile(), peerYaml([]));
    await waitFor(
      "rome to forget milan",
      async () => {
        const [s] = await ipamStorage(rome);
        const ncs = (await rome.list(NetworkConfigResource, { labelSelector: "liqo.io/ownership=netcfgCreator" }))
          .items;
        const nms = (await rome.list(NatMappingResource, { labelSelector: "net.liqo.io/natmapping=true" })).items;
        return (
          Object.keys(s!.spec.clusterSubnets).length === 0 &&
          (await teps(rome, TENANT.rome)).length === 0 &&
          ncs.length === 0 &&
          nms.length === 0
        );
      },
      {
        timeoutMs: 60_000,
        describe: async () => ({ peers: await view("peers"), ipam: (await view("ipam")).clusters }),
      },
    );
    const [s] = await ipamStorage(rome);
    expect(s!.spec.prefixes).toEqual({});
    // milan still holds its side until its own peering is removed.
    milanManager.setPeers([]);
    await waitFor(
      "milan to forget rome",
      async () => (await teps(milan, TENANT.milan)).length === 0 && !milanManager.store.ipam.mappedNetworks(ID.rome),
    );
  });
});

describe("concurrent writers", () => {
  test("two stores writing one IpamStorage: the loser of the race re-reads and never takes the winner's network", async () => {
    const options = {
      client: rome,
      ipam: { podCidr: OVERLAP, serviceCidr: rig.clusters[0]!.serviceCIDR, externalCidr: EXTERNAL },
    };
    const a = createIpamStore(options);
    const b = createIpamStore(options);
    await a.load();
    await b.load();
    // Both start from the same resourceVersion and want the same lowest free network.
    const [x, y] = await Promise.all([
      a.update("map x", (ipam) => ipam.mapRemoteNetworks("x", { podCidr: OVERLAP, externalCidr: "10.220.0.0/16" })),
      b.update("map y", (ipam) => ipam.mapRemoteNetworks("y", { podCidr: OVERLAP, externalCidr: "10.221.0.0/16" })),
    ]);
    expect(a.stats.conflicts + b.stats.conflicts).toBeGreaterThanOrEqual(1);
    expect(x.podCidr).not.toBe(y.podCidr);
    const [stored] = await ipamStorage(rome);
    expect(Object.keys(stored!.spec.clusterSubnets).sort()).toEqual(["x", "y"]);
    expect(stored!.spec.clusterSubnets.x!.remotePodCIDR).toBe(x.podCidr);
    expect(stored!.spec.clusterSubnets.y!.remotePodCIDR).toBe(y.podCidr);
  });
});
