// Real rig nodes, like kind's node containers without Docker: each node is a network namespace on
// the rig's host bridge with its own containerd, kubelet and kube-proxy (started with nsenter, so
// they keep the host's mounts), its own cgroup and CNI bridge; pods get addresses from the node's
// pod CIDR and reach the pods of the cluster's other nodes through routes between the nodes.
// Stopping a node (synchronously, so exit handlers can) leaves no process, mount, cgroup,
// namespace or device behind.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { RigError } from "./errors.ts";
import {
  cniConfig,
  containerdConfig,
  kubeletConfig,
  kubeProxyConfig,
  nodeAddress,
  nodeNatRules,
  rigNetwork,
  type RigNetwork,
} from "./node-config.ts";
import { kubeconfigYaml, sign, type CertPair } from "./pki.ts";
import { isAlive, killGroup, killGroupNow, PhaseClock, spawnDetached, tailFile } from "./process.ts";

export const sandboxImage = "registry.k8s.io/pause:3.10";
const cniBinDir = "/usr/lib/cni";
const natTable = "liqo_rig";
const nodeComponents = ["containerd", "kubelet", "kube-proxy"] as const;
type NodeComponent = (typeof nodeComponents)[number];

export interface RealNodeState {
  name: string;
  cluster: string;
  /** Network namespace (/var/run/netns/<netns>), also the node's cgroup. */
  netns: string;
  ip: string;
  hostVeth: string;
  dir: string;
  containerdSocket: string;
  pids: Partial<Record<NodeComponent, number>>;
  podCIDR?: string;
  /** The node's interface on the rig bridge: eth0, or ens5 in the rig's foreign profile (cloud VMs' naming). */
  uplink?: string;
}

/** What a node needs of its cluster, without importing the cluster module (it imports this one). */
export interface NodeCluster {
  name: string;
  dir: string;
  podCIDR: string;
  serviceCIDR: string;
  ports: { apiserver: number };
  pki: { dir: string; ca: CertPair };
  /** The rig's foreign profile (ClusterSpec.foreign): nodes' uplink is ens5. */
  foreign?: boolean;
}

function run(cmd: string[], what: string, input?: string): string {
  const res = Bun.spawnSync(cmd, { stdin: input ? Buffer.from(input) : undefined, stdout: "pipe", stderr: "pipe" });
  if (res.exitCode !== 0)
    throw new RigError(`${what} failed: \`${cmd.join(" ")}\` exited ${res.exitCode}: ${res.stderr.toString().trim()}`);
  return res.stdout.toString();
}

/** Like run, for clean-up: failures are expected (the thing is already gone) and ignored. */
function tryRun(cmd: string[]): boolean {
  // Bounded: clean-up must finish even if a tool hangs on a half-gone namespace or mount.
  return Bun.spawnSync(cmd, { stdout: "ignore", stderr: "ignore", timeout: 30_000 }).exitCode === 0;
}

const inNetns = (netns: string, cmd: string[]) => ["nsenter", `--net=/var/run/netns/${netns}`, "--", ...cmd];

function requireRealNodeTools(): void {
  if (process.getuid?.() !== 0)
    throw new RigError("real nodes need root (network namespaces, cgroups, mounts); run the rig as root");
  const missing = ["containerd", "containerd-shim-runc-v2", "runc", "ctr", "nsenter", "ip", "nft", "iptables"].filter(
    (b) => !Bun.which(b),
  );
  if (!existsSync(join(cniBinDir, "bridge"))) missing.push(`${cniBinDir}/bridge (containernetworking-plugins)`);
  if (missing.length)
    throw new RigError(
      `real nodes need ${missing.join(", ")}; run bash scripts/setup.sh (it installs the Debian packages in scripts/debian-packages.txt)`,
    );
}

/**
 * Claims the lowest free rig bridge by creating it, so rigs side by side (test files run in
 * parallel shards) each get their own bridge and /24: `ip link add` fails with "File exists" for
 * a bridge another rig took between our look and our claim, and the next index is tried.
 */
export function claimRigNetwork(owner: string): RigNetwork {
  requireRealNodeTools();
  raiseInotifyLimits();
  for (let i = 0; i < 64; i++) {
    const net = rigNetwork(i);
    const res = Bun.spawnSync(["ip", "link", "add", net.bridge, "type", "bridge"], {
      stdout: "ignore",
      stderr: "pipe",
    });
    if (res.exitCode === 0) {
      // The rig's directory on the bridge: whoever tears a rig down checks it (rigNetworkIsOurs).
      tryRun(["ip", "link", "set", "dev", net.bridge, "alias", owner]);
      return net;
    }
    const why = res.stderr.toString().trim();
    if (!/File exists/.test(why)) throw new RigError(`creating the rig bridge ${net.bridge} failed: ${why}`);
  }
  throw new RigError("all 64 rig bridges (lrig0..lrig63) exist; stop other rigs with `bun run rig down`");
}

/**
 * Every kubelet, containerd and many containers take inotify instances: at the kernel's default of
 * 128 per user a second real-node rig failed to start (about 98 were in use by one). Raised, never
 * lowered, to what kind asks of its hosts.
 */
function raiseInotifyLimits(): void {
  for (const [key, min] of [
    ["max_user_instances", 1024],
    ["max_user_watches", 524_288],
  ] as const) {
    const path = `/proc/sys/fs/inotify/${key}`;
    if (existsSync(path) && Number(readFileSync(path, "utf8")) < min) writeFileSync(path, String(min));
  }
}

/**
 * Whether the rig in `owner` may remove what is named after this bridge (its nodes' namespaces,
 * cgroups and veths, the bridge itself): the bridge is gone, or it still carries that rig's alias.
 * A rig whose start failed half-way, reaped later as an orphan, must not tear down the live rig
 * that has claimed the same bridge since (same index, same names).
 */
export function rigNetworkIsOurs(net: RigNetwork, owner: string): boolean {
  const path = `/sys/class/net/${net.bridge}/ifalias`;
  if (!existsSync(path)) return true;
  return readFileSync(path, "utf8").trim() === owner;
}

/** Addresses the claimed bridge and brings it up. */
export function createRigNetwork(net: RigNetwork): void {
  run(["ip", "addr", "add", `${net.gateway}/24`, "dev", net.bridge], `addressing ${net.bridge}`);
  run(["ip", "link", "set", net.bridge, "up"], `bringing ${net.bridge} up`);
}

export function removeRigNetworkNow(net: RigNetwork): void {
  tryRun(["ip", "link", "del", net.bridge]);
}

/** Folders, certificates, configuration files, the namespace and its veth; nothing runs yet. */
export function prepareRealNode(
  c: NodeCluster,
  net: RigNetwork,
  ordinal: number,
  seq: number,
  clusterDns: string,
  registryHosts?: string,
): RealNodeState {
  const name = `${c.name}-node-${ordinal + 1}`;
  const netns = `lrig${net.index}-${name}`;
  const dir = join(c.dir, "nodes", name);
  const node: RealNodeState = {
    name,
    cluster: c.name,
    netns,
    ip: nodeAddress(net, seq),
    hostVeth: `lrig${net.index}v${seq}`,
    dir,
    containerdSocket: join(dir, "containerd.sock"),
    pids: {},
    uplink: c.foreign ? "ens5" : "eth0",
  };
  for (const d of ["logs", "cni/net.d", "cni/ipam", "kubelet", "pod-logs", "volume-plugins", "runc"])
    mkdirSync(join(dir, d), { recursive: true });
  const server = `https://${net.gateway}:${c.ports.apiserver}`;
  const kubelet = sign(c.pki.dir, c.pki.ca, `kubelet-${name}`, `/O=system:nodes/CN=system:node:${name}`, clientExt);
  const proxy = sign(c.pki.dir, c.pki.ca, `kube-proxy-${name}`, "/CN=system:kube-proxy", clientExt);
  writeFileSync(
    join(dir, "kubelet.kubeconfig"),
    kubeconfigYaml(c.name, server, c.pki.ca.cert, kubelet, `kubelet-${name}`),
  );
  writeFileSync(join(dir, "kube-proxy.kubeconfig"), kubeconfigYaml(c.name, server, c.pki.ca.cert, proxy, "kube-proxy"));
  writeFileSync(
    join(dir, "containerd.toml"),
    containerdConfig(
      { dir, socket: node.containerdSocket, cniConfDir: join(dir, "cni/net.d"), cniBinDir, registryHosts },
      sandboxImage,
    ),
  );
  writeFileSync(
    join(dir, "kubelet.yaml"),
    kubeletConfig({ dir, socket: node.containerdSocket, caFile: c.pki.ca.cert, clusterDns, cgroupRoot: `/${netns}` }),
  );
  writeFileSync(join(dir, "kube-proxy.yaml"), kubeProxyConfig(join(dir, "kube-proxy.kubeconfig"), c.podCIDR, name));
  try {
    mountImageStore(node);
    createNodeNetns(node, net);
    createNodeCgroups(netns);
  } catch (err) {
    stopRealNodeNow(node);
    throw err;
  }
  return node;
}

/** Below this much available memory a node keeps its images on disk. */
const tmpfsMinAvailableBytes = 3 * 2 ** 30;

function memAvailableBytes(): number {
  const m = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync("/proc/meminfo", "utf8"));
  return m ? Number(m[1]) * 1024 : 0;
}

/**
 * containerd's content and snapshots (about 0.8 GB a node: every rig image, packed and unpacked)
 * live on a tmpfs when memory allows. Measured: deleting them from disk at \`rig down\` took 9–23 s
 * for a 4-node rig on this machine and timed out a test (over 300 s) on a slower disk; unmounting
 * the tmpfs is instant, and importing the images does no disk writes. The size is a cap, not a
 * reservation: the kubelet's image-fs thresholds are percentages of it.
 */
function mountImageStore(node: RealNodeState): void {
  const store = join(node.dir, "containerd");
  mkdirSync(store, { recursive: true, mode: 0o700 });
  if (process.env.LIQO_RIG_NODE_TMPFS === "0" || memAvailableBytes() < tmpfsMinAvailableBytes) return;
  run(
    ["mount", "-t", "tmpfs", "-o", "size=8g,mode=0700", `tmpfs-${node.netns}`, store],
    `mounting a tmpfs for node ${node.name}'s images`,
  );
}

const clientExt =
  "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n";

const uplinkOf = (node: RealNodeState) => node.uplink ?? "eth0";

function createNodeNetns(node: RealNodeState, net: RigNetwork): void {
  const ns = node.netns;
  const uplink = uplinkOf(node);
  tryRun(["ip", "netns", "del", ns]);
  run(["ip", "netns", "add", ns], `creating the network namespace of node ${node.name}`);
  const host = [
    `link add ${node.hostVeth} type veth peer name ${uplink} netns ${ns}`,
    `link set ${node.hostVeth} master ${net.bridge} up`,
  ];
  const inside = [
    `addr add ${node.ip}/24 dev ${uplink}`,
    `link set ${uplink} up`,
    "link set lo up",
    `route add default via ${net.gateway}`,
  ];
  run(["ip", "-batch", "-"], `wiring node ${node.name} to ${net.bridge}`, host.join("\n") + "\n");
  run(["ip", "-n", ns, "-batch", "-"], `addressing node ${node.name}`, inside.join("\n") + "\n");
  // Bridged pod traffic passes the node's iptables, so kube-proxy can un-NAT a Service answer
  // between two pods on the same bridge (kubeadm's br_netfilter requirement; per namespace here).
  const sysctls = ["net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0", "net.bridge.bridge-nf-call-iptables=1"];
  for (const s of sysctls) run(inNetns(ns, ["sysctl", "-qw", s]), `sysctl ${s} in ${ns}`);
}

/** Every v1 hierarchy needs the node's cgroup before its kubelet starts (cgroupRoot). */
function cgroupHierarchies(): string[] {
  const root = "/sys/fs/cgroup";
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .map((d) => join(root, d))
    .filter((d) => existsSync(join(d, "cgroup.procs")));
}

function createNodeCgroups(name: string): void {
  for (const h of cgroupHierarchies()) {
    const dir = join(h, name);
    mkdirSync(dir, { recursive: true });
    if (h.endsWith("/cpuset")) {
      for (const f of ["cpuset.cpus", "cpuset.mems"]) writeFileSync(join(dir, f), readFileSync(join(h, f), "utf8"));
    }
  }
}

function logOf(node: RealNodeState, component: NodeComponent) {
  return join(node.dir, "logs", `${component}.log`);
}

function startNodeComponent(node: RealNodeState, component: NodeComponent, bin: string): void {
  const args: Record<NodeComponent, string[]> = {
    containerd: ["containerd", "--config", join(node.dir, "containerd.toml")],
    kubelet: [
      join(bin, "kubelet"),
      `--config=${join(node.dir, "kubelet.yaml")}`,
      `--kubeconfig=${join(node.dir, "kubelet.kubeconfig")}`,
      `--root-dir=${join(node.dir, "kubelet")}`,
      `--hostname-override=${node.name}`,
      `--node-ip=${node.ip}`,
      "--node-labels=type=real",
      "-v=1",
    ],
    "kube-proxy": [join(bin, "kube-proxy"), `--config=${join(node.dir, "kube-proxy.yaml")}`, "-v=1"],
  };
  const cmd = inNetns(node.netns, args[component]);
  node.pids[component] = spawnDetached(cmd[0]!, cmd.slice(1), logOf(node, component));
  binOf.set(node, bin);
}

const binOf = new WeakMap<RealNodeState, string>();
const kubeletRestarts = new WeakMap<RealNodeState, number>();

/**
 * Every kubelet binds /var/lib/kubelet/device-plugins/kubelet.sock (a path no flag moves): it
 * unlinks the file and binds it, and two kubelets starting at the same moment (the nodes of a
 * rig, or rigs side by side in the test shards) can both unlink before either binds. The loser
 * exits with "address already in use"; it is started again, a few times at most.
 */
function restartedAfterSocketRace(node: RealNodeState, component: NodeComponent): boolean {
  if (component !== "kubelet") return false;
  const restarts = kubeletRestarts.get(node) ?? 0;
  if (
    restarts >= 3 ||
    !/device-plugins\/kubelet\.sock: bind: address already in use/.test(tailFile(logOf(node, component)))
  )
    return false;
  kubeletRestarts.set(node, restarts + 1);
  startNodeComponent(node, component, binOf.get(node)!);
  return true;
}

async function waitFor(
  node: RealNodeState,
  component: NodeComponent,
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 90_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // A check that throws (the API server busy or briefly unreachable while the node starts) is
  // tried again until the deadline; the last error is in the message if it never passes.
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (err) {
      lastError = err;
    }
    const pid = node.pids[component];
    if (pid && !isAlive(pid) && !restartedAfterSocketRace(node, component))
      throw new RigError(
        `${component} of node ${node.name} exited before ${what}\n--- ${logOf(node, component)} (tail) ---\n${tailFile(logOf(node, component))}`,
      );
    await Bun.sleep(200);
  }
  const last = lastError ? ` (last error: ${(lastError as Error).message})` : "";
  throw new RigError(
    `${component} of node ${node.name}: no ${what} within ${timeoutMs / 1000}s${last}\n--- ${logOf(node, component)} (tail) ---\n${tailFile(logOf(node, component))}`,
  );
}

/** How a real node gets the rig's images. */
export interface NodeImages {
  /** Fills the node's containerd store before containerd starts (node-store.ts). */
  seed?(nodeDir: string): Promise<void>;
  /** Once containerd answers: imports the images, or checks that the seeded store lists them. */
  load(socket: string): Promise<void>;
}

/** containerd with the rig's images: needs no API server, so it runs while the control plane starts. */
export async function startContainerRuntime(node: RealNodeState, bin: string, images: NodeImages): Promise<void> {
  await images.seed?.(node.dir);
  startNodeComponent(node, "containerd", bin);
  await waitFor(node, "containerd", "CRI socket", () => tryRun(["ctr", "--address", node.containerdSocket, "version"]));
  await images.load(node.containerdSocket);
}

/** The kubelet and kube-proxy, once the API server answers and containerd holds the images. */
export function startNodeAgents(node: RealNodeState, bin: string): void {
  startNodeComponent(node, "kubelet", bin);
  startNodeComponent(node, "kube-proxy", bin);
}

type NodeObject = KubeObject & {
  spec?: { podCIDR?: string };
  status?: { conditions?: { type: string; status: string; message?: string }[] };
};

/**
 * Once every node registered and got a pod CIDR: each node's CNI configuration (the kubelet turns
 * Ready when it appears), routes between the cluster's nodes, the masquerade rule, role labels.
 */
export async function finishClusterNodes(
  c: NodeCluster,
  nodes: RealNodeState[],
  client: KubeClient,
  hostRouting: HostRouting,
): Promise<void> {
  for (const node of nodes) {
    await waitFor(node, "kubelet", "pod CIDR on its Node object", async () => {
      const obj = await client.find<NodeObject>(Resources.nodes, node.name);
      node.podCIDR = obj?.spec?.podCIDR;
      return !!node.podCIDR;
    });
    writeFileSync(join(node.dir, "cni/net.d/10-rig.conflist"), cniConfig(node.podCIDR!, join(node.dir, "cni/ipam")));
    run(
      inNetns(node.netns, ["nft", "-f", "-"]),
      `masquerade rule of node ${node.name}`,
      nodeNatRules(natTable, c.podCIDR, uplinkOf(node)),
    );
    await client.mergePatch(Resources.nodes, node.name, undefined, {
      metadata: { labels: { "node-role.kubernetes.io/worker": "" } },
    });
  }
  for (const node of nodes) {
    const routes = nodes
      .filter((o) => o !== node)
      .map((o) => `route replace ${o.podCIDR} via ${o.ip} dev ${uplinkOf(node)}`);
    if (routes.length)
      run(["ip", "-n", node.netns, "-batch", "-"], `routes of node ${node.name}`, routes.join("\n") + "\n");
  }
  setHostRouting(hostRouting, nodes);
  for (const node of nodes) {
    await waitFor(
      node,
      "kubelet",
      "Ready condition",
      async () => {
        const obj = await client.find<NodeObject>(Resources.nodes, node.name);
        return !!obj?.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True");
      },
      120_000,
    );
  }
}

/** Rules before the main table's (priority 32766), which has the machine's default route. */
export interface HostRouting {
  uid: number;
  table: number;
  priority: number;
}

/** The API server's own routing table (selected by its uid): each node's pod CIDR via the node. */
function setHostRouting(r: HostRouting, nodes: RealNodeState[]): void {
  removeHostRoutingNow(r);
  const lines = nodes.map((n) => `route replace ${n.podCIDR} via ${n.ip} table ${r.table}`);
  lines.push(`rule add uidrange ${r.uid}-${r.uid} lookup ${r.table} priority ${r.priority}`);
  run(["ip", "-batch", "-"], `the API server's routes to the pods (table ${r.table})`, lines.join("\n") + "\n");
}

export function removeHostRoutingNow(r: HostRouting): void {
  while (tryRun(["ip", "rule", "del", "priority", String(r.priority)])) {
    /* one rule per call */
  }
  tryRun(["ip", "route", "flush", "table", String(r.table)]);
}

function mountsUnder(prefixes: string[]): string[] {
  const lines = readFileSync("/proc/self/mountinfo", "utf8").split("\n");
  const points = lines
    .map((l) => l.split(" ")[4])
    .filter((p): p is string => !!p)
    .map((p) => p.replace(/\\040/g, " "))
    .filter((p) => prefixes.some((pre) => p === pre || p.startsWith(`${pre}/`)));
  // Deepest first, so a mount on top of another goes before it.
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

function cgroupPids(name: string): number[] {
  const out: number[] = [];
  const walk = (dir: string) => {
    // Cgroups vanish while we read them (runc removes a container's as it exits).
    try {
      for (const p of readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n")) if (p) out.push(Number(p));
      for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
    } catch {
      /* gone */
    }
  };
  for (const h of cgroupHierarchies()) walk(join(h, name));
  return [...new Set(out)];
}

function removeCgroupTree(dir: string): void {
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) removeCgroupTree(join(dir, e.name));
    rmdirSync(dir);
  } catch {
    /* gone already, or a process still inside: reported by leftovers() */
  }
}

/** containerd's shims leave its process group (setsid): found by the socket they were given. */
function shimPids(socket: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.includes("containerd-shim") && cmdline.includes(socket)) out.push(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

const killNow = (pid: number) => {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    /* gone */
  }
};

/** Stops a node and removes all it made on the machine; synchronous, for exit handlers too. */
export function stopRealNodeNow(node: RealNodeState): string[] {
  const phases = new PhaseClock(`node ${node.name}`);
  // The kubelet first, so nothing restarts the containers being killed.
  for (const c of ["kubelet", "kube-proxy"] as const) if (node.pids[c]) killGroupNow(node.pids[c]!);
  for (let round = 0; round < 50; round++) {
    const pids = [...cgroupPids(node.netns), ...shimPids(node.containerdSocket)];
    if (!pids.length) break;
    pids.forEach(killNow);
    Bun.sleepSync(20);
  }
  phases.lap("killing its containers");
  if (node.pids.containerd) killGroupNow(node.pids.containerd);
  for (let i = 0; i < 100 && nodeComponents.some((c) => isAlive(node.pids[c] ?? 0)); i++) Bun.sleepSync(20);
  phases.lap("stopping containerd");
  for (const m of mountsUnder([node.dir])) tryRun(["umount", "-l", m]);
  phases.lap("unmounting");
  for (const h of cgroupHierarchies()) removeCgroupTree(join(h, node.netns));
  tryRun(["ip", "netns", "del", node.netns]);
  tryRun(["ip", "link", "del", node.hostVeth]);
  phases.lap("removing its cgroups and network namespace");
  phases.reportIfSlow();
  return leftovers(node);
}

/** What of the node is still on the machine (empty when stopped cleanly). */
export function leftovers(node: RealNodeState): string[] {
  const left: string[] = [];
  for (const c of nodeComponents) if (isAlive(node.pids[c] ?? 0)) left.push(`${c} (pid ${node.pids[c]})`);
  for (const p of [...cgroupPids(node.netns), ...shimPids(node.containerdSocket)]) left.push(`process ${p}`);
  for (const m of mountsUnder([node.dir])) left.push(`mount ${m}`);
  for (const h of cgroupHierarchies()) if (existsSync(join(h, node.netns))) left.push(`cgroup ${join(h, node.netns)}`);
  if (existsSync(`/var/run/netns/${node.netns}`)) left.push(`network namespace ${node.netns}`);
  return left;
}

export async function stopRealNode(node: RealNodeState): Promise<string[]> {
  const phases = new PhaseClock(`node ${node.name}`);
  for (const c of ["kubelet", "kube-proxy"] as const) if (node.pids[c]) await killGroup(node.pids[c]!, 3000);
  phases.lap("stopping kubelet and kube-proxy");
  phases.reportIfSlow();
  return stopRealNodeNow(node);
}
