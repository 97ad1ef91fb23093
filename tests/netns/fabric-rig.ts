// The network fabric driven by real control planes: per rig cluster a "node" namespace (with the
// route agent's VXLAN end), a "pod" namespace behind it carrying the IP the cluster really gave a
// pod, and a gateway namespace shared by the `liqo gateway` replicas (one is active); the two
// gateway namespaces are joined by an "internet" veth. The test plays the CRD replicator for the
// NetworkConfigs, as the peering will.
import { join, resolve } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { exchangeNetworkConfigs } from "../../core/peering/inband/exchange.ts";
import { createIp } from "../../netfabric/os/ip.ts";
import { runner, type Lab } from "./lab.ts";
import { waitFor } from "../support/wait.ts";

export const root = resolve(import.meta.dir, "../..");
export const bun = join(root, "node_modules/.bin/bun");

export interface FabricSide {
  name: string;
  id: string;
  client: KubeClient;
  /** Namespace, in this cluster, of the peering with the other side. */
  tenant: string;
  node: string;
  pod: string;
  gw: string;
  nodeName: string;
  podIp: string;
  nodeVtep: string;
  gwVtep: string;
  /** Underlay ("internet") address of this side's gateway. */
  publicIp: string;
  device: string;
}

export async function ensureNamespace(client: KubeClient, name: string) {
  if (!(await client.find(Resources.namespaces, name)))
    await client.create(Resources.namespaces, { metadata: { name } });
}

/** A pod the cluster schedules on its (kwok) node: its IP is the one the fabric must carry. */
export async function realPod(client: KubeClient, name: string): Promise<{ ip: string; node: string }> {
  await client.create(Resources.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: { containers: [{ name: "echo", image: "echo:fake" }] },
  });
  return waitFor(
    `pod ${name} to get an IP`,
    async () => {
      const p = await client.get<KubeObject & { status?: { podIP?: string }; spec?: { nodeName?: string } }>(
        Resources.pods,
        name,
        "default",
      );
      return p.status?.podIP && p.spec?.nodeName ? { ip: p.status.podIP, node: p.spec.nodeName } : undefined;
    },
    { timeoutMs: 180_000 },
  );
}

/** node ↔ pod (calico-style /32 + 169.254.1.1) and node ↔ gateway (the in-cluster underlay). */
export async function buildSide(lab: Lab, s: Omit<FabricSide, "node" | "pod" | "gw">): Promise<FabricSide> {
  const tag = s.name.slice(0, 1);
  const node = await lab.netns(`n${tag}`);
  const pod = await lab.netns(`p${tag}`);
  const gw = await lab.netns(`g${tag}`);
  await lab.sh(node, ["ip", "link", "add", "pod0", "type", "veth", "peer", "name", "eth0", "netns", pod]);
  await lab.sh(node, ["ip", "link", "add", "uplink", "type", "veth", "peer", "name", "uplink", "netns", gw]);
  await createIp(runner, pod).batch([
    `addr add ${s.podIp}/32 dev eth0`,
    "link set eth0 mtu 1380 up",
    "route add 169.254.1.1 dev eth0",
    "route add default via 169.254.1.1",
  ]);
  await createIp(runner, node).batch([
    "addr add 169.254.1.1/32 dev pod0",
    "link set pod0 up",
    `route add ${s.podIp}/32 dev pod0`,
    `addr add ${s.nodeVtep}/24 dev uplink`,
    "link set uplink up",
  ]);
  await createIp(runner, gw).batch([`addr add ${s.gwVtep}/24 dev uplink`, "link set uplink up"]);
  await lab.sh(node, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]);
  return { ...s, node, pod, gw };
}

/** The "internet" between the two gateways. */
export async function joinGateways(lab: Lab, a: FabricSide, b: FabricSide) {
  await lab.sh(a.gw, ["ip", "link", "add", "inet", "type", "veth", "peer", "name", "inet", "netns", b.gw]);
  await createIp(runner, a.gw).batch([`addr add ${a.publicIp}/24 dev inet`, "link set inet up"]);
  await createIp(runner, b.gw).batch([`addr add ${b.publicIp}/24 dev inet`, "link set inet up"]);
}

/** The "internet" for more than two gateways: a bridge in its own namespace, one "inet" veth per gateway. */
export async function joinInternet(lab: Lab, sides: FabricSide[]) {
  const inet = await lab.netns("inet");
  await createIp(runner, inet).batch(["link add br0 type bridge", "link set br0 up"]);
  for (const [i, s] of sides.entries()) {
    await lab.sh(inet, ["ip", "link", "add", `to${i}`, "type", "veth", "peer", "name", "inet", "netns", s.gw]);
    await createIp(runner, inet).batch([`link set to${i} master br0`, `link set to${i} up`]);
    await createIp(runner, s.gw).batch([`addr add ${s.publicIp}/24 dev inet`, "link set inet up"]);
  }
}

/** One end of a peering as the replicator sees it: a cluster, its ID, and its tenant namespace for the other. */
export type ReplicaEnd = Pick<FabricSide, "client" | "id" | "tenant">;

/** One pass of the CRD replicator both ways: NetworkConfig spec out, status back (as liqoctl peer in-band does). */
export async function replicate(sides: [ReplicaEnd, ReplicaEnd]) {
  await exchangeNetworkConfigs(sides[0], sides[1]);
}

export interface RoleProcess {
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  url: string;
  output(): string;
  kill(signal?: "SIGKILL" | "SIGTERM"): Promise<void>;
}

/** Starts `liqo <role> ...` and waits for its admin URL. */
export async function startRole(args: string[]): Promise<RoleProcess> {
  let out = "";
  const proc = Bun.spawn([bun, "cli/liqo.ts", ...args], { cwd: root, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) out += decoder.decode(chunk, { stream: true });
  };
  void drain(proc.stdout);
  void drain(proc.stderr);
  const url = await waitFor(
    `liqo ${args[0]} to print its admin URL`,
    () => {
      if (proc.exitCode !== null)
        throw new Error(`liqo ${args.join(" ")} exited with ${proc.exitCode}: ${out.slice(-3000)}`);
      return /admin API on (http:\/\/\S+)/.exec(out)?.[1];
    },
    { timeoutMs: 120_000 },
  );
  return {
    proc,
    url,
    output: () => out,
    async kill(signal = "SIGTERM") {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await proc.exited;
    },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: the fabric views' JSON, typed by each caller
export async function view<T = any>(url: string, name: string): Promise<T> {
  return (await fetch(`${url}/views/${name}`)).json() as Promise<T>;
}
