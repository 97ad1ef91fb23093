// The consumer's virtual kubelet translates through the network fabric when the ForeignCluster has
// networking enabled: two rig clusters with the same pod CIDR (10.200.0.0/16), the peering parts
// of tests/e2e/peering-rig.ts, a network manager per cluster whose peers follow the ForeignClusters,
// `liqoctl peer out-of-band ... --networking` (the printed peer command). The ForeignCluster
// controller starts the virtual kubelet with the translation watcher (default), so an offloaded
// pod's local status.podIP is the provider's pod IP remapped into the network rome gave milan's
// pod CIDR, and an EndpointSlice reflected to milan carries rome's endpoint as milan sees it. No
// data plane here (fabric-e2e.test.ts has it).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ForeignClusterResource, TunnelEndpointResource, type TunnelEndpoint } from "../../core/apis/index.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { contains, parseCidr, parseIpv4 } from "../../netfabric/ipam/index.ts";
import { generatedPeerCommand, liqoctl, startLiqoSide, type LiqoSide } from "../e2e/peering-rig.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { startNetworkSide, type NetworkSide } from "./liqo-network.ts";

const EXTERNAL = "10.210.0.0/16";
const NS = "remapped-app";

let rig: TestRig;
let rome: LiqoSide;
let milan: LiqoSide;
let romeNet: NetworkSide;
let milanNet: NetworkSide;

type Pod = KubeObject & { status?: { phase?: string; podIP?: string; podIPs?: { ip: string }[] } };
type Slice = KubeObject & { endpoints?: { addresses: string[] }[] };

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1, overlappingPodCidrs: true });
  [rome, milan] = await Promise.all([
    startLiqoSide(rig, "rome", {}, { provider: false }),
    startLiqoSide(rig, "milan", {}, { consumer: false }),
  ]);
  [romeNet, milanNet] = await Promise.all([
    startNetworkSide(rig, "rome", rome.client, {
      externalCidr: EXTERNAL,
      gatewayEndpoint: { ip: "198.18.0.1", port: 51820 },
    }),
    startNetworkSide(rig, "milan", milan.client, {
      externalCidr: EXTERNAL,
      gatewayEndpoint: { ip: "198.18.0.2", port: 51820 },
    }),
  ]);
}, 600_000);

afterAll(async () => {
  await romeNet?.stop().catch(() => undefined);
  await milanNet?.stop().catch(() => undefined);
  await rome?.stop().catch(() => undefined);
  await milan?.stop().catch(() => undefined);
  await rig?.down();
}, 120_000);

describe("virtual kubelet with the network fabric's translation", () => {
  test("peer --networking: authentication, network and outgoing peering are established", async () => {
    expect(rig.clusters.map((c) => c.podCIDR)).toEqual(["10.200.0.0/16", "10.200.0.0/16"]);
    const words = (await generatedPeerCommand(milan)).filter((w) => w !== "--no-networking");
    const r = await liqoctl(rome, ...words, "--networking", "--timeout=300s");
    expect(r.err).toContain("Network established with cluster milan");
    expect(r.code).toBe(0);
    const fc = await rome.client.get<KubeObject & { spec: { networkingEnabled?: string } }>(
      ForeignClusterResource,
      "milan",
    );
    expect(fc.spec.networkingEnabled).toBe("Yes");
    // Both managers took their peer from the ForeignClusters, and agreed on a TunnelEndpoint.
    const tep = await waitFor(
      "rome's TunnelEndpoint for milan",
      async () =>
        (
          await rome.client.list<TunnelEndpoint>(TunnelEndpointResource, {
            labelSelector: `clusterID=${milan.identity.clusterId}`,
          })
        ).items[0],
      { timeoutMs: 60_000 },
    );
    expect(tep.spec.remoteNATPodCIDR).not.toBe("None");
    expect(romeNet.manager.peers().map((p) => p.remoteClusterId)).toEqual([milan.identity.clusterId]);
    expect(milanNet.manager.peers().map((p) => p.remoteClusterId)).toEqual([rome.identity.clusterId]);
  }, 400_000);

  test("an offloaded pod's local status.podIP is the provider's IP remapped, not the raw one", async () => {
    await rome.client.create(Resources.namespaces, { metadata: { name: NS } });
    expect((await liqoctl(rome, "offload", "namespace", NS, "--namespace-mapping-strategy=EnforceSameName")).code).toBe(
      0,
    );
    await rome.client.create(Resources.pods, {
      metadata: { name: "hello", namespace: NS },
      spec: {
        nodeName: "liqo-milan",
        containers: [{ name: "c", image: "nginx" }],
        tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists" }],
      },
    });
    const remote = await waitFor(
      "the remote pod to get an IP in milan",
      async () => {
        const p = await milan.client.find<Pod>(Resources.pods, "hello", NS);
        return p?.status?.podIP ? p : undefined;
      },
      { timeoutMs: 180_000 },
    );
    const expected = romeNet.manager.translator(milan.identity.clusterId)(remote.status!.podIP!, "backward");
    expect(expected).not.toBe(remote.status!.podIP);
    const local = await waitFor(
      "the local pod to report the remapped IP",
      async () => {
        const p = await rome.client.find<Pod>(Resources.pods, "hello", NS);
        return p?.status?.podIP === expected ? p : undefined;
      },
      { timeoutMs: 120_000, describe: () => rome.client.find<Pod>(Resources.pods, "hello", NS).then((p) => p?.status) },
    );
    const tep = (
      await rome.client.list<TunnelEndpoint>(TunnelEndpointResource, {
        labelSelector: `clusterID=${milan.identity.clusterId}`,
      })
    ).items[0]!;
    expect(contains(parseCidr(tep.spec.remoteNATPodCIDR), parseIpv4(local.status!.podIP!))).toBe(true);
    expect(local.status!.podIPs?.map((x) => x.ip)).toEqual([expected]);
  }, 400_000);

  test("an EndpointSlice reflected to milan carries rome's endpoint as milan sees it", async () => {
    const localEndpoint = "10.200.0.77";
    await rome.client.create(Resources.services, {
      metadata: { name: "web", namespace: NS },
      spec: { ports: [{ port: 80 }] },
    });
    await rome.client.create(Resources.endpointSlices, {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: "web-local", namespace: NS, labels: { "kubernetes.io/service-name": "web" } },
      addressType: "IPv4",
      ports: [{ port: 80, protocol: "TCP" }],
      endpoints: [{ addresses: [localEndpoint], conditions: { ready: true } }],
    });
    const expected = romeNet.manager.translator(milan.identity.clusterId)(localEndpoint, "forward");
    expect(expected).not.toBe(localEndpoint);
    // What milan's own manager says rome's pod is, as milan sees it: the two clusters agree.
    expect(milanNet.manager.translator(rome.identity.clusterId)(localEndpoint, "backward")).toBe(expected);
    const slice = await waitFor(
      "the reflected EndpointSlice in milan",
      async () =>
        (await milan.client.list<Slice>(Resources.endpointSlices, { namespace: NS })).items.find(
          (s) => s.metadata.labels?.["kubernetes.io/service-name"] === "web" && s.endpoints?.length,
        ),
      { timeoutMs: 120_000 },
    );
    expect(slice.endpoints!.flatMap((e) => e.addresses)).toEqual([expected]);
  }, 200_000);
});
