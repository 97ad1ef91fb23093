// Real VXLAN overlay between a "node" namespace and a gateway namespace, as the route DaemonSet
// sets it up: a pod behind the node reaches a remote network that only the gateway can route, and
// its packets cross the overlay (VXLAN counters move), with drift repaired by reconcile.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createIp, type IpAdapter } from "../../netfabric/os/ip.ts";
import { reconcileVxlan, type VxlanSpec } from "../../netfabric/overlay/vxlan.ts";
import { createLab, runner, waitFor, type Lab } from "./lab.ts";

const connectScript = join(import.meta.dir, "fixtures", "connect.ts");
const echoScript = join(import.meta.dir, "fixtures", "echo-source.ts");

// Real namespaces and processes: above bun's 5 s default, below the waits' own deadlines × 2.
const slow = 30_000;

let lab: Lab;
let pod: string;
let node: string;
let gw: string;
let nodeSpec: VxlanSpec;
let gwSpec: VxlanSpec;

const name = "liqo.vxlan";

async function rxPackets(ip: IpAdapter): Promise<number> {
  const [link] = await ip.json<{ stats64: { rx: { packets: number } } }>(["-s", "link", "show", "dev", name]);
  return link!.stats64.rx.packets;
}

async function sourceSeenByGateway(timeoutMs = 1500): Promise<string | undefined> {
  try {
    return (
      (await lab.sh(pod, [process.execPath, connectScript, "10.201.0.1", "7001", String(timeoutMs)])).trim() ||
      undefined
    );
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  lab = await createLab();
  try {
    pod = await lab.netns("vpod");
    node = await lab.netns("vnode");
    gw = await lab.netns("vgw");
    await lab.sh(node, ["ip", "link", "add", "pod0", "type", "veth", "peer", "name", "eth0", "netns", pod]);
    await lab.sh(node, ["ip", "link", "add", "uplink", "type", "veth", "peer", "name", "uplink", "netns", gw]);
    await createIp(runner, pod).batch([
      "addr add 10.200.5.5/24 dev eth0",
      "link set eth0 up",
      "route add default via 10.200.5.1",
    ]);
    await createIp(runner, node).batch([
      "addr add 10.200.5.1/24 dev pod0",
      "link set pod0 up",
      "addr add 198.19.0.1/24 dev uplink",
      "link set uplink up",
    ]);
    // The remote cluster's network, as the gateway would reach it through the tunnel.
    await createIp(runner, gw).batch([
      "addr add 198.19.0.2/24 dev uplink",
      "link set uplink up",
      "addr add 10.201.0.1/32 dev lo",
    ]);
    await lab.sh(node, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]);
    await lab.serve(gw, echoScript, ["7001"]);
    nodeSpec = {
      name,
      vni: 7,
      localIp: "198.19.0.1",
      dev: "uplink",
      address: "240.7.0.1/24",
      remoteVteps: ["198.19.0.2"],
      routes: [{ to: "10.201.0.0/16", via: "240.7.0.2" }],
    };
    gwSpec = {
      name,
      vni: 7,
      localIp: "198.19.0.2",
      dev: "uplink",
      address: "240.7.0.2/24",
      remoteVteps: ["198.19.0.1"],
      routes: [{ to: "10.200.5.0/24", via: "240.7.0.1" }],
    };
  } catch (err) {
    await lab.cleanup();
    throw err;
  }
}, slow);

afterAll(async () => {
  await lab?.cleanup();
}, slow);

describe("VXLAN overlay node ↔ gateway", () => {
  test(
    "reconcile creates the overlay, then has nothing left to do",
    async () => {
      const nodeIp = createIp(runner, node);
      const gwIp = createIp(runner, gw);
      expect((await reconcileVxlan(nodeIp, nodeSpec)).length).toBeGreaterThan(0);
      expect((await reconcileVxlan(gwIp, gwSpec)).length).toBeGreaterThan(0);
      expect(await reconcileVxlan(nodeIp, nodeSpec)).toEqual([]);
      expect(await reconcileVxlan(gwIp, gwSpec)).toEqual([]);
    },
    slow,
  );

  test(
    "a pod's traffic to the remote network crosses the overlay with its own source",
    async () => {
      const gwIp = createIp(runner, gw);
      const before = await rxPackets(gwIp);
      expect(await waitFor("TCP from the pod to 10.201.0.1 over VXLAN", () => sourceSeenByGateway())).toBe(
        "10.200.5.5",
      );
      expect(await rxPackets(gwIp)).toBeGreaterThan(before);
    },
    slow,
  );

  test(
    "an FDB entry removed by hand cuts the overlay; reconcile restores it",
    async () => {
      await lab.sh(node, ["bridge", "fdb", "del", "00:00:00:00:00:00", "dev", name, "dst", "198.19.0.2"]);
      expect(await sourceSeenByGateway(1000)).toBeUndefined();
      const changes = await reconcileVxlan(createIp(runner, node), nodeSpec);
      expect(changes).toEqual(["fdb append 00:00:00:00:00:00 dev liqo.vxlan dst 198.19.0.2"]);
      expect(await waitFor("traffic after the FDB repair", () => sourceSeenByGateway())).toBe("10.200.5.5");
    },
    slow,
  );

  test(
    "a changed VNI recreates the interface on both ends",
    async () => {
      const changes = await reconcileVxlan(createIp(runner, gw), { ...gwSpec, vni: 8 });
      expect(changes[0]).toBe(`link del ${name}`);
      await reconcileVxlan(createIp(runner, node), { ...nodeSpec, vni: 8 });
      expect(await waitFor("traffic over VNI 8", () => sourceSeenByGateway())).toBe("10.200.5.5");
    },
    slow,
  );
});
