// Where the fabric's throughput goes, hop by hop, measured side by side in one run (printed, never
// asserted) on the in-cluster quick start (two real-node clusters, liqo in-cluster, peered with
// networking). Every iperf3 and ping runs from the host inside the namespace it measures (nsenter),
// so the hops differ only in the path:
//   pod → pod in rome (other node)                                  the pod network
//   rome node → rome's gateway pod over liqo.vxlan                   the overlay hop
//   rome's gateway → milan's gateway inside liqo.wg                  WireGuard between pods, via the NodePort
//   rome pod → milan pod through the fabric                          all of it
//   rome node ↔ milan node, a wireguard-go tunnel made by hand        the floor: no liqo, no NodePort, no VXLAN
// each with UdpRcvbufErrors at the receiving namespace (the datagrams its kernel dropped because
// wireguard-go did not read them in time). The gateways run twice: first with Debian bookworm's
// wireguard-go (the image's /usr/bin/wireguard-go, put first on the gateways' PATH), then with the
// module build the image ships in /usr/local/bin (its default): before and after; then once more
// with a CPU request on the gateways (Burstable instead of BestEffort).
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { TunnelEndpointResource, type TunnelEndpoint } from "../../core/apis/net/tunnelendpoint.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { formatIpv4, parseCidr } from "../../netfabric/ipam/ipv4.ts";
import { dockerfileRuntime, wireguardGoBinary } from "../../scripts/build-image.ts";
import { benchQuickstart, type InClusterQuickstart } from "../quickstart/in-cluster.ts";
import { rigImageRefs } from "../rig/images.ts";
import { killRigNow, rigDown } from "../rig/rig.ts";
import { waitFor } from "../support/wait.ts";
import { handMadeTunnel, iperf, sh, type Throughput } from "./hand-made-tunnel.ts";
import { kubectlOut } from "../support/kubectl.ts";

type Pod = KubeObject & {
  spec?: { nodeName?: string };
  status?: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] };
};
const DEBIAN_FIRST = "/usr/bin:/usr/sbin:/bin:/sbin:/usr/local/bin";

const kubectl = kubectlOut;

/** A process of the pod (not its pause container), to enter its network namespace. */
function podPid(uid: string, comm?: string): number {
  const host = readlinkSync("/proc/self/ns/net");
  for (const entry of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      if (!readFileSync(`/proc/${entry}/cgroup`, "utf8").includes(`pod${uid}`)) continue;
      const name = readFileSync(`/proc/${entry}/comm`, "utf8").trim();
      if (name === "pause" || (comm && name !== comm) || readlinkSync(`/proc/${entry}/ns/net`) === host) continue;
      return Number(entry);
    } catch {}
  }
  throw new Error(`no process of pod ${uid}${comm ? ` named ${comm}` : ""}`);
}

const enter = (pid: number) => ["nsenter", "-t", String(pid), "-n", "--"];

async function running(client: KubeClient, name: string, ns = "liqo-demo"): Promise<Pod> {
  return waitFor(
    `${name} Running`,
    async () => {
      const p = await client.find<Pod>(Resources.pods, name, ns);
      return p?.status?.phase === "Running" && p.status.podIP ? p : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 250 },
  );
}

async function activeGateway(client: KubeClient): Promise<Pod> {
  return waitFor(
    "an active, Ready gateway pod",
    async () =>
      (
        await client.list<Pod>(Resources.pods, { namespace: "liqo", labelSelector: "net.liqo.io/gateway-role=active" })
      ).items.find(
        (p) =>
          !p.metadata.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
      ),
    { timeoutMs: 300_000, intervalMs: 500 },
  );
}

/**
 * Restarts both gateways with a PATH (undefined: the image's) and a CPU request (undefined: none, the
 * chart's BestEffort), and waits for a Connected tunnel and traffic.
 */
async function gatewaysWith(
  q: InClusterQuickstart,
  path: string | undefined,
  remoteIp: string,
  client: number,
  cpuRequest?: string,
): Promise<void> {
  for (const c of ["rome", "milan"]) {
    await kubectl(q, c, "set", "env", "-n", "liqo", "deploy/liqo-gateway", path ? `PATH=${path}` : "PATH-");
    if (cpuRequest)
      await kubectl(q, c, "set", "resources", "-n", "liqo", "deploy/liqo-gateway", `--requests=cpu=${cpuRequest}`);
  }
  for (const c of ["rome", "milan"])
    await kubectl(q, c, "rollout", "status", "-n", "liqo", "deploy/liqo-gateway", "--timeout=300s");
  for (const client of [q.rome, q.milan]) {
    await waitFor(
      "a Connected TunnelEndpoint",
      async () => {
        const t = (
          await client.list<TunnelEndpoint & KubeObject & { status?: { connection?: { status?: string } } }>(
            TunnelEndpointResource,
          )
        ).items[0];
        return t?.status?.connection?.status === "Connected";
      },
      { timeoutMs: 300_000, intervalMs: 500 },
    );
  }
  await waitFor(
    `ping ${remoteIp} through the fabric`,
    () => sh([...enter(client), "ping", "-c", "1", "-W", "1", remoteIp]).code === 0,
    { timeoutMs: 300_000, intervalMs: 500 },
  );
}

const row = (what: string, t: Throughput) =>
  `  ${what.padEnd(58)} ${t.gbps.toFixed(3).padStart(7)} Gbit/s  RTT ${t.rttMs.toFixed(3)} ms  retransmits ${String(t.retransmits).padStart(6)}  receiver's UDP buffer drops ${String(t.udpRcvbufErrors ?? "-").padStart(6)}`;

const q = await benchQuickstart();
try {
  const rome = q.rig.clusters[0]!.realNodeStates!;
  const milan = q.rig.clusters[1]!.realNodeStates!;
  const pod = (name: string, spec: Record<string, unknown>): KubeObject =>
    ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "liqo-demo" },
      spec: {
        ...spec,
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: "c", image: rigImageRefs.hello, imagePullPolicy: "IfNotPresent", command: ["sleep", "infinity"] },
        ],
      },
    }) as KubeObject;
  await q.rome.create(Resources.pods, pod("hops-client", { nodeName: rome[0]!.name }));
  await q.rome.create(Resources.pods, pod("hops-local", { nodeName: rome[1]!.name }));
  await q.rome.create(
    Resources.pods,
    pod("hops-remote", {
      nodeSelector: { "liqo.io/type": "virtual-node" },
      tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists" }],
    }),
  );
  const clientPod = await running(q.rome, "hops-client");
  const localPod = await running(q.rome, "hops-local");
  const remotePod = await running(q.rome, "hops-remote");
  const remoteInMilan = (
    await q.milan.list<Pod>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" })
  ).items.find((p) => p.metadata.name === "hops-remote")!;
  const client = podPid(clientPod.metadata.uid!, "sleep");
  const local = podPid(localPod.metadata.uid!, "sleep");
  const remote = podPid(remoteInMilan.metadata.uid!, "sleep");
  const remoteIp = remotePod.status!.podIP!;

  const sameCluster = await iperf(enter(client), enter(local), localPod.status!.podIP!);
  const module = await wireguardGoBinary(
    join(homedir(), ".cache/liqo-bun/image"),
    dockerfileRuntime().wireguardGo,
    (m) => console.error(`[bench] ${m}`),
  );
  const ends = [
    { netns: rome[0]!.netns, ip: rome[0]!.ip },
    { netns: milan[0]!.netns, ip: milan[0]!.ip },
  ] as const;
  const byHand = {
    debian: await handMadeTunnel(ends[0], ends[1], "wireguard-go", "hopsd"),
    module: await handMadeTunnel(ends[0], ends[1], module, "hopsm"),
  };

  /** The gateways' hops and the whole fabric, with whatever wireguard-go the gateways run now. */
  async function fabricHops(): Promise<{ binary: string; vxlan: Throughput; tunnel: Throughput; fabric: Throughput }> {
    const gwRome = await activeGateway(q.rome);
    const gwMilan = await activeGateway(q.milan);
    const wgRome = podPid(gwRome.metadata.uid!, "wireguard-go");
    const wgMilan = podPid(gwMilan.metadata.uid!, "wireguard-go");
    const binary = readlinkSync(`/proc/${wgRome}/exe`);
    // The overlay: a rome node without the gateway → the gateway pod's VXLAN address (240.x.y.z).
    const nodeWithout = rome.find((n) => n.name !== gwRome.spec?.nodeName)!;
    const vtep = `240.${gwRome.status!.podIP!.split(".").slice(1).join(".")}`;
    const vxlan = await iperf(["nsenter", `--net=/var/run/netns/${nodeWithout.netns}`, "--"], enter(wgRome), vtep);
    // Gateway to gateway inside the tunnel: each holds the first host of its external CIDR on liqo.wg.
    const tep = (await q.rome.list<TunnelEndpoint & KubeObject>(TunnelEndpointResource)).items[0]!;
    const milanExternal = parseCidr(
      tep.spec.remoteNATExternalCIDR === "None" ? tep.spec.remoteExternalCIDR : tep.spec.remoteNATExternalCIDR,
    );
    const tunnel = await iperf(enter(wgRome), enter(wgMilan), formatIpv4(milanExternal.base + 1));
    // The fabric's receiving wireguard-go is milan's gateway: its drops, not the pod's.
    const fabric = await iperf(enter(client), enter(remote), remoteIp, enter(wgMilan));
    return { binary, vxlan, tunnel, fabric };
  }

  await gatewaysWith(q, DEBIAN_FIRST, remoteIp, client);
  const before = await fabricHops();
  await gatewaysWith(q, undefined, remoteIp, client);
  const after = await fabricHops();
  // The gateways are BestEffort pods (cpu.shares 2 in the kubepods hierarchy): the same with a request.
  await gatewaysWith(q, undefined, remoteIp, client, "500m");
  const requested = await fabricHops();

  console.log("TCP throughput (iperf3 10 s, host's iperf3 inside each namespace) and RTT (ping, 20 probes):");
  console.log(row("rome pod → rome pod, other node", sameCluster));
  console.log(row("rome node ↔ milan node, hand-made, Debian's wireguard-go", byHand.debian));
  console.log(row("rome node ↔ milan node, hand-made, the image's wireguard-go", byHand.module));
  for (const [label, h] of [
    ["before", before],
    ["after", after],
    ["after, 500m CPU requested", requested],
  ] as const) {
    console.log(`  gateways running ${h.binary} (${label}):`);
    console.log(row("  rome node → rome gateway pod over liqo.vxlan", h.vxlan));
    console.log(row("  rome gateway → milan gateway inside liqo.wg", h.tunnel));
    console.log(row("  rome pod → milan pod through the fabric (drops: milan gw)", h.fabric));
  }
  const floor = (h: typeof before) => (h === before ? byHand.debian : byHand.module);
  for (const [label, h] of [
    ["before", before],
    ["after", after],
    ["after, 500m CPU requested", requested],
  ] as const) {
    console.log(
      `  ${label}: fabric ÷ hand-made (same wireguard-go) ${(h.fabric.gbps / floor(h).gbps).toFixed(2)}, gateway tunnel ÷ hand-made ${(h.tunnel.gbps / floor(h).gbps).toFixed(2)}, fabric ÷ gateway tunnel ${(h.fabric.gbps / h.tunnel.gbps).toFixed(2)}`,
    );
  }
  console.log(
    `  after ÷ before: fabric ${(after.fabric.gbps / before.fabric.gbps).toFixed(2)}×, gateway tunnel ${(after.tunnel.gbps / before.tunnel.gbps).toFixed(2)}×; fabric after ÷ Debian hand-made ${(after.fabric.gbps / byHand.debian.gbps).toFixed(2)}`,
  );
} finally {
  await rigDown(q.rig.dir).catch(() => killRigNow(q.rig));
}
process.exit(0);
