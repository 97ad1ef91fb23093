// In-band peering end to end: two rig clusters with the same pod CIDR, liqo's peering parts in the
// test process (tests/e2e/peering-rig.ts), a network manager per cluster whose peers follow the
// ForeignClusters, a gateway and a route agent per cluster in network namespaces, and each
// cluster's in-band proxy pod: a forwarder that listens only in that cluster's "pod" namespace and
// relays to the auth service and (HTTP CONNECT) to the API server through Unix sockets. The test
// process reaches a cluster's pod network only through that cluster's node namespace (linkHost),
// so rome's controllers can reach milan's proxy only through the WireGuard tunnel.
// `liqoctl peer in-band` sets the tunnel up, then the peering runs through it to a Ready virtual
// node; run again with --bidirectional it adds the reverse; `liqoctl unpeer in-band` removes both.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { SocketListener } from "bun";
import {
  ForeignClusterResource,
  TunnelEndpointResource,
  NetworkConfigResource,
  type TunnelEndpoint,
} from "../../core/apis/index.ts";
import { createInformer, type Informer } from "../../core/kube/informer.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { AUTH_PORT_NAME, HTTP_PORT_NAME, PROXY_SERVICE } from "../../netfabric/inband/endpoints.ts";
import { startConnectProxy, startForwarder } from "../../netfabric/inband/proxy.ts";
import { liqoctl, startLiqoSide, type LiqoSide } from "../e2e/peering-rig.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { startDataPlane, linkHost, type DataPlane, type HostLink } from "./dataplane.ts";
import { buildSide, ensureNamespace, joinGateways, realPod, type FabricSide } from "./fabric-rig.ts";
import { createLab, runner, type Lab } from "./lab.ts";
import { startNetworkSide, type NetworkSide } from "./liqo-network.ts";

const forwarder = join(import.meta.dir, "fixtures", "inband-forwarder.ts");
const EXTERNAL = "10.210.0.0/16";
const AUTH_PORT = 8443;
const HTTP_PORT = 8118;
const NAMES = ["rome", "milan"] as const;
type Name = (typeof NAMES)[number];

let rig: TestRig;
let lab: Lab;
const liqo = {} as Record<Name, LiqoSide>;
const net = {} as Record<Name, NetworkSide>;
const side = {} as Record<Name, FabricSide>;
const planes: DataPlane[] = [];
const link = {} as Record<Name, HostLink>;
const listeners: SocketListener<unknown>[] = [];
const informers: Informer<TunnelEndpoint>[] = [];
/** Connections the in-tunnel proxy of each cluster relayed (auth, API). */
const relayed = { rome: { auth: 0, api: 0 }, milan: { auth: 0, api: 0 } };

const kc = (name: Name) => rig.clusters.find((c) => c.name === name)!.kubeconfig;
const inBand = (...args: string[]) =>
  liqoctl({ kubeconfig: kc("rome") }, ...args, `--remote-kubeconfig=${kc("milan")}`);
const fcOf = (name: Name, other: Name) => liqo[name].client.find<ForeignClusterObject>(ForeignClusterResource, other);
const cond = (fc: ForeignClusterObject | undefined, type: string) =>
  fc?.status?.peeringConditions?.find((c) => c.type === type)?.status;

async function wgBytes(s: FabricSide): Promise<number> {
  const [l] = JSON.parse(await lab.sh(s.gw, ["ip", "-s", "-j", "link", "show", "dev", s.device])) as {
    stats64: { rx: { bytes: number }; tx: { bytes: number } };
  }[];
  return l!.stats64.rx.bytes + l!.stats64.tx.bytes;
}

/** The cluster's proxy pod: Service liqo-proxy → its pod IP, a forwarder there, the far ends here. */
async function proxyPod(name: Name) {
  const s = side[name];
  const cluster = rig.clusters.find((c) => c.name === name)!;
  const auth = new URL(liqo[name].authUrl);
  const api = new URL(cluster.server);
  const authSock = join(rig.dir, `inband-${name}-auth.sock`);
  const apiSock = join(rig.dir, `inband-${name}-api.sock`);
  listeners.push(
    startForwarder({
      listen: { unix: authSock },
      to: { hostname: auth.hostname, port: Number(auth.port) },
      onConnection: () => relayed[name].auth++,
    }) as never,
  );
  listeners.push(
    startConnectProxy({
      listen: { unix: apiSock },
      allow: (h, p) => h === api.hostname && p === Number(api.port),
      onConnection: () => relayed[name].api++,
    }) as never,
  );
  await lab.serve(s.pod, forwarder, [s.podIp, `${AUTH_PORT}=${authSock}`, `${HTTP_PORT}=${apiSock}`]);
  await ensureNamespace(s.client, "liqo");
  await s.client.create(Resources.services, {
    metadata: { name: PROXY_SERVICE, namespace: "liqo" },
    spec: {
      ports: [
        { name: AUTH_PORT_NAME, port: AUTH_PORT },
        { name: HTTP_PORT_NAME, port: HTTP_PORT },
      ],
    },
  });
  await s.client.create(Resources.endpointSlices, {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${PROXY_SERVICE}-pod`,
      namespace: "liqo",
      labels: { "kubernetes.io/service-name": PROXY_SERVICE },
    },
    addressType: "IPv4",
    ports: [
      { name: AUTH_PORT_NAME, port: AUTH_PORT, protocol: "TCP" },
      { name: HTTP_PORT_NAME, port: HTTP_PORT, protocol: "TCP" },
    ],
    endpoints: [{ addresses: [s.podIp], conditions: { ready: true } }],
  });
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: [...NAMES], nodes: 1, overlappingPodCidrs: true });
  lab = await createLab();
  const dev = (tag: string) => `lq${process.pid.toString(36)}-${lab.id.slice(-3)}${tag}`;
  [liqo.rome, liqo.milan] = await Promise.all([startLiqoSide(rig, "rome"), startLiqoSide(rig, "milan")]);
  for (const [i, name] of NAMES.entries()) {
    const client = liqo[name].client;
    const pod = await realPod(client, `liqo-proxy-${name}`);
    side[name] = await buildSide(lab, {
      name,
      id: liqo[name].identity.clusterId,
      client,
      tenant: "",
      nodeName: pod.node,
      podIp: pod.ip,
      nodeVtep: `172.16.${i + 1}.1`,
      gwVtep: `172.16.${i + 1}.2`,
      publicIp: `198.18.0.${i + 1}`,
      device: dev(name.slice(0, 1)),
    });
    link[name] = await linkHost(lab, side[name], 250 + i);
  }
  await joinGateways(lab, side.rome, side.milan);
  // Different reserved networks, so each cluster remaps the other's pod CIDR somewhere else and the
  // two /32 routes of the test process (one per direction) never name the same address.
  net.rome = await startNetworkSide(rig, "rome", liqo.rome.client, {
    externalCidr: EXTERNAL,
    reserved: ["10.0.0.0/16"],
  });
  net.milan = await startNetworkSide(rig, "milan", liqo.milan.client, {
    externalCidr: EXTERNAL,
    reserved: ["10.5.0.0/16"],
  });
  for (const name of NAMES) planes.push(await startDataPlane(side[name]));
  for (const name of NAMES) await proxyPod(name);
  // As a pod's traffic goes to its node: the test process sends the peer's pod network (as this
  // cluster sees it, once the TunnelEndpoint says) into this cluster's node namespace.
  for (const name of NAMES) {
    const teps = createInformer<TunnelEndpoint>({ client: liqo[name].client, resource: TunnelEndpointResource });
    const route = (t: TunnelEndpoint) => {
      const to =
        t.spec?.remoteNATPodCIDR && t.spec.remoteNATPodCIDR !== "None"
          ? t.spec.remoteNATPodCIDR
          : t.spec?.remotePodCIDR;
      if (to) void link[name].routeTo(to).catch((err) => console.error(`route ${to} via ${name}: ${err}`));
    };
    teps.on({ add: route, update: (_, t) => route(t) });
    teps.start();
    informers.push(teps);
  }
}, 600_000);

afterAll(async () => {
  for (const i of informers) await i.stop();
  for (const l of listeners) l.stop(true);
  for (const p of planes) await p.stop();
  for (const n of Object.values(net)) await n.stop().catch(() => undefined);
  for (const l of Object.values(liqo)) await l.stop().catch(() => undefined);
  await lab?.cleanup();
  await rig?.down();
}, 120_000);

describe("liqoctl peer in-band", () => {
  test("bad input: the same cluster twice, an unreachable remote, a ForeignCluster with networking disabled", async () => {
    const same = await liqoctl({ kubeconfig: kc("rome") }, "peer", "in-band", `--remote-kubeconfig=${kc("rome")}`);
    expect(same.code).toBe(1);
    expect(same.err).toContain("are the same cluster (rome");
    const noRemote = await liqoctl({ kubeconfig: kc("rome") }, "peer", "in-band");
    expect(noRemote.code).not.toBe(0);
    expect(noRemote.err).toContain("pass --remote-context");
    const unreachable = join(rig.dir, "unreachable.kubeconfig");
    writeFileSync(
      unreachable,
      (await Bun.file(kc("milan")).text()).replace(/server: https:\/\/[^\s]+/, "server: https://127.0.0.1:9"),
    );
    const down = await liqoctl({ kubeconfig: kc("rome") }, "peer", "in-band", `--remote-kubeconfig=${unreachable}`);
    expect(down.code).toBe(1);
    expect(down.err).toContain("the cluster of --remote-kubeconfig is unreachable");
    await liqo.rome.client.create(ForeignClusterResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ForeignCluster",
      metadata: { name: "milan" },
      spec: {
        clusterIdentity: { clusterID: liqo.milan.identity.clusterId, clusterName: "milan" },
        foreignAuthUrl: liqo.milan.authUrl,
        outgoingPeeringEnabled: "No",
        networkingEnabled: "No",
      },
    } as KubeObject);
    const noNet = await inBand("peer", "in-band");
    expect(noNet.code).toBe(1);
    expect(noNet.err).toContain("ForeignCluster milan in cluster rome has networking disabled");
    await liqo.rome.client.delete(ForeignClusterResource, "milan");
    await waitFor("the ForeignCluster to go", async () => !(await fcOf("rome", "milan")) || undefined, {
      timeoutMs: 60_000,
    });
    // Nothing was left behind by the refusals.
    expect((await liqo.rome.client.list(NetworkConfigResource)).items).toEqual([]);
  }, 120_000);

  test("the tunnel first, then authentication and the API inside it: Established with a Ready virtual node", async () => {
    const before = await wgBytes(side.rome);
    const started = performance.now();
    const r = await inBand("peer", "in-band", "--timeout=240s");
    const elapsed = performance.now() - started;
    expect(r.err).toContain("Network established with cluster milan");
    expect(r.err).toContain("Authenticated with cluster milan");
    expect(r.err).toContain("Outgoing peering with cluster milan established: node liqo-milan is Ready");
    expect(r.code).toBe(0);
    console.log(`liqoctl peer in-band → Ready virtual node: ${(elapsed / 1000).toFixed(1)}s\n${r.err}`);
    const fc = (await fcOf("rome", "milan"))!;
    // The URLs point into milan's pod network as rome sees it: the proxy pod, remapped.
    const host = new URL(fc.spec.foreignAuthUrl).hostname;
    expect(host).not.toBe(side.milan.podIp);
    expect(fc.spec.foreignProxyUrl).toBe(`http://${host}:${HTTP_PORT}`);
    expect(fc.spec.foreignAuthUrl).toBe(`https://${host}:${AUTH_PORT}`);
    expect(cond(fc, "NetworkStatus")).toBe("Established");
    expect(cond(fc, "AuthenticationStatus")).toBe("Established");
    const node = await liqo.rome.client.get<
      KubeObject & { status?: { conditions?: { type: string; status: string }[] } }
    >(Resources.nodes, "liqo-milan");
    expect(node.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    // Milan's proxy relayed the API calls (the only way in: it listens in milan's pod namespace).
    expect(relayed.milan.api).toBeGreaterThan(0);
    expect(relayed.milan.auth).toBeGreaterThan(0);
    expect(await wgBytes(side.rome)).toBeGreaterThan(before);
    // Milan holds rome's ForeignCluster with the incoming peering, and no outgoing one.
    await waitFor(
      "milan's IncomingPeering Established",
      async () => cond(await fcOf("milan", "rome"), "IncomingPeering") === "Established" || undefined,
      { timeoutMs: 120_000 },
    );
    expect(cond(await fcOf("milan", "rome"), "OutgoingPeering")).not.toBe("Established");
  }, 400_000);

  test("the peering keeps using the tunnel: API calls to milan grow the tunnel's counters", async () => {
    const [bytes, calls] = [await wgBytes(side.rome), relayed.milan.api];
    await waitFor(
      "more traffic through the tunnel",
      async () => ((await wgBytes(side.rome)) > bytes && relayed.milan.api >= calls) || undefined,
      { timeoutMs: 60_000 },
    );
  }, 90_000);

  test("running it again is harmless, and --bidirectional adds the reverse peering through the tunnel", async () => {
    const r = await inBand("peer", "in-band", "--bidirectional", "--timeout=240s");
    expect(r.err).not.toContain("created");
    expect(r.err).toContain("Outgoing peering with cluster rome established: node liqo-rome is Ready");
    expect(r.code).toBe(0);
    const back = (await fcOf("milan", "rome"))!;
    expect(new URL(back.spec.foreignAuthUrl).hostname).not.toBe(side.rome.podIp);
    expect(relayed.rome.api).toBeGreaterThan(0);
    expect(cond(await fcOf("rome", "milan"), "OutgoingPeering")).toBe("Established");
  }, 400_000);

  test("liqoctl unpeer in-band tears both sides down; again, it has nothing to do", async () => {
    const r = await inBand("unpeer", "in-band", "--timeout=240s");
    expect(r.err).toContain("Successfully unpeered rome and milan (in-band)");
    expect(r.code).toBe(0);
    for (const [name, other] of [
      ["rome", "milan"],
      ["milan", "rome"],
    ] as const) {
      expect(await fcOf(name, other)).toBeUndefined();
      expect(await liqo[name].client.find(Resources.nodes, `liqo-${other}`)).toBeUndefined();
      expect((await liqo[name].client.list(TunnelEndpointResource)).items).toEqual([]);
    }
    const again = await inBand("unpeer", "in-band");
    expect(again.code).toBe(0);
    expect(again.err).toContain("nothing to tear down");
  }, 400_000);
});
