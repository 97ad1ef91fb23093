// The data plane of one rig cluster in network namespaces, in-process: the `liqo gateway`
// controller (userspace WireGuard, one replica) and the route agent on the cluster's node. Plus
// the link that puts the test process (root namespace, where liqo's controllers run) "inside" a
// cluster's pod network, as the controller-manager pod would be: a veth into the node namespace
// with an address of the node's pod CIDR, and /32 routes through it.
import { createLogger } from "../../core/log.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { createGatewayController, type GatewayController } from "../../netfabric/gateway/controller.ts";
import { createIp } from "../../netfabric/os/ip.ts";
import { createRouteAgent, type RouteAgent } from "../../netfabric/overlay/agent.ts";
import type { FabricSide } from "./fabric-rig.ts";
import { runner, type Lab } from "./lab.ts";

export const PORT = 51820;
export const fabricLog = (cluster: string) =>
  createLogger({ cluster }, { level: (process.env.FABRIC_LOG ?? "warn") as "warn" });

export interface DataPlane {
  gateway: GatewayController;
  agent: RouteAgent;
  stop(): Promise<void>;
}

export async function startDataPlane(s: FabricSide): Promise<DataPlane> {
  const log = fabricLog(s.name);
  const agent = createRouteAgent({
    client: s.client,
    nodeName: s.nodeName,
    liqoNamespace: "liqo",
    ip: createIp(runner, s.node),
    end: { vtepIp: s.nodeVtep, dev: "uplink" },
    intervalMs: 2_000,
    logger: log,
  });
  await agent.start();
  const gateway = createGatewayController({
    client: s.client,
    liqoNamespace: "liqo",
    identity: `${s.name}-gw-0`,
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
    logger: log,
  });
  await gateway.start();
  return {
    gateway,
    agent,
    async stop() {
      await gateway.stop().catch(() => undefined);
      await agent.stop().catch(() => undefined);
    },
  };
}

export interface HostLink {
  /** The root namespace's address in the cluster's pod network. */
  address: string;
  /** Sends the root namespace's traffic for `cidr` (an address or a network) into the cluster's pod network. */
  routeTo(cidr: string): Promise<void>;
}

/** `host` is the last octet of the address taken in the node's pod CIDR (distinct per cluster). */
export async function linkHost(lab: Lab, s: FabricSide, host: number): Promise<HostLink> {
  const node = await s.client.get<KubeObject & { spec?: { podCIDR?: string } }>(Resources.nodes, s.nodeName);
  const cidr = node.spec?.podCIDR;
  if (!cidr)
    throw new Error(
      `node ${s.nodeName} of ${s.name} has no spec.podCIDR: cannot give the test process an address there`,
    );
  const address = cidr.split("/")[0]!.replace(/\.\d+$/, `.${host}`);
  const dev = `lq${process.pid.toString(36)}-${lab.id.slice(-3)}h${s.name.slice(0, 1)}`;
  await runner.run(["ip", "link", "add", dev, "type", "veth", "peer", "name", "host0", "netns", s.node]);
  await runner.run(["ip", "addr", "add", `${address}/32`, "dev", dev]);
  await runner.run(["ip", "link", "set", dev, "up"]);
  await createIp(runner, s.node).batch(["link set host0 up", `route add ${address}/32 dev host0`]);
  // As calico does for pods: the node answers ARP for every address the root side sends to.
  await lab.sh(s.node, ["sysctl", "-q", "-w", "net.ipv4.conf.host0.proxy_arp=1"]);
  return {
    address,
    routeTo: async (cidr) => {
      await runner.run([
        "ip",
        "route",
        "replace",
        cidr.includes("/") ? cidr : `${cidr}/32`,
        "dev",
        dev,
        "src",
        address,
      ]);
    },
  };
}
