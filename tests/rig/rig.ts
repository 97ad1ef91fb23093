// The rig: N real clusters on loopback, their state in one directory (rig.json, one folder per
// cluster, and kubeconfigs/<name>.kubeconfig), so `rig down` in another process can stop them.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  copyFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureRigBinaries } from "./binaries.ts";
import { components, prepareCluster, startCluster, stopCluster, type ClusterState, type Progress } from "./cluster.ts";
import { RigError } from "./errors.ts";
import { allocatePorts } from "./ports.ts";
import { isAlive, killGroup, killGroupNow, PhaseClock } from "./process.ts";
import {
  claimRigNetwork,
  createRigNetwork,
  prepareRealNode,
  removeHostRoutingNow,
  removeRigNetworkNow,
  rigNetworkIsOurs,
  stopRealNodeNow,
  type NodeImages,
} from "./nodes.ts";
import type { RigNetwork } from "./node-config.ts";
import { clusterDnsAddress } from "./dns.ts";
import { ensureRigImages } from "./images.ts";
import { checkNodeImages, ensureNodeStore, seedNodeStore } from "./node-store.ts";
import { prepareRegistry, pushRigImages, type RegistryState, startRegistry, stopRegistry } from "./registry.ts";

export interface RigOptions {
  clusters: number;
  names?: string[];
  overlappingPodCidrs?: boolean;
  nodes?: number;
  /** Real nodes per cluster (containerd, kubelet, kube-proxy, CNI, DNS); 0 by default. */
  realNodes?: number;
  /** Clusters that behave like someone else's (ClusterSpec.foreign); needs real nodes. */
  foreign?: boolean;
  dir?: string;
  basePort?: number;
  /** The process that owns the rig: when it dies, the next rig start reaps it. 0: nobody (`rig up`). */
  owner?: number;
  progress?: Progress;
  /** More image archives for the real nodes (e.g. the previous release's liqo image, tests/rig/previous-release.ts). */
  extraImages?: { ref: string; archive: string }[];
}

export interface RigProcess {
  name: string;
  pid: number;
  log: string;
}

export interface Rig {
  dir: string;
  /** Processes started on top of the clusters (liqo's roles in the quick start); stopped by down. */
  extras?: RigProcess[];
  owner: number;
  kubeconfigDir: string;
  bin: string;
  clusters: ClusterState[];
  /** The host bridge of the real nodes, when there are any. */
  network?: RigNetwork;
  /** With real nodes: the image registry on the bridge, every node's mirror (registry.ts). */
  registry?: RegistryState;
}

const defaultNames = ["rome", "milan", "naples", "turin", "florence", "venice", "genoa", "bologna"];
export const overlappingPodCidr = "10.200.0.0/16";
const portsPerCluster = 6;

export function defaultRigDir(env: Record<string, string | undefined> = process.env): string {
  return env.LIQO_RIG_DIR ?? join(tmpdir(), "liqo-rig");
}

export function clusterNames(count: number, names?: string[]): string[] {
  if (names && names.length !== count) {
    throw new RigError(`--names lists ${names.length} name(s) but --clusters is ${count}; give one name per cluster`);
  }
  const out = names ?? Array.from({ length: count }, (_, i) => defaultNames[i] ?? `cluster-${i + 1}`);
  for (const n of out) {
    if (!/^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$/.test(n)) {
      throw new RigError(
        `cluster name "${n}" is not a valid DNS label (lowercase letters, digits and '-', up to 40 characters)`,
      );
    }
  }
  if (new Set(out).size !== out.length) throw new RigError(`cluster names must be unique: ${out.join(", ")}`);
  return out;
}

/** Disjoint CIDRs by default: pods 10.(100+i).0.0/16, services 10.(50+i).0.0/16. */
export function clusterCidrs(index: number, overlapping: boolean): { podCIDR: string; serviceCIDR: string } {
  return {
    podCIDR: overlapping ? overlappingPodCidr : `10.${100 + index}.0.0/16`,
    serviceCIDR: `10.${50 + index}.0.0/16`,
  };
}

export function loadRig(dir: string): Rig | undefined {
  const file = join(dir, "rig.json");
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, "utf8")) as Rig;
}

function saveRig(rig: Rig) {
  writeFileSync(join(rig.dir, "rig.json"), JSON.stringify(rig, null, 2));
}

export function rigProcesses(rig: Rig): { cluster: string; component: string; pid: number; alive: boolean }[] {
  const extras = (rig.extras ?? []).map((p) => ({
    cluster: "-",
    component: p.name,
    pid: p.pid,
    alive: isAlive(p.pid),
  }));
  const nodes = rig.clusters.flatMap((c) =>
    (c.realNodeStates ?? []).flatMap((n) =>
      Object.entries(n.pids).map(([k, pid]) => ({
        cluster: c.name,
        component: `${n.name}/${k}`,
        pid: pid!,
        alive: isAlive(pid!),
      })),
    ),
  );
  const addons = rig.clusters.flatMap((c) =>
    Object.entries(c.addonPids ?? {}).map(([k, pid]) => ({ cluster: c.name, component: k, pid, alive: isAlive(pid) })),
  );
  const registry = rig.registry?.pid
    ? [{ cluster: "-", component: "registry", pid: rig.registry.pid, alive: isAlive(rig.registry.pid) }]
    : [];
  return [
    ...extras,
    ...registry,
    ...addons,
    ...nodes,
    ...rig.clusters.flatMap((c) =>
      components
        .filter((k) => c.pids[k])
        .map((k) => ({ cluster: c.name, component: k, pid: c.pids[k]!, alive: isAlive(c.pids[k]!) })),
    ),
  ];
}

/** Records a process started on top of the rig, so `rig down` stops it too. */
export function addRigProcess(dir: string, proc: RigProcess): void {
  const rig = loadRig(dir);
  if (!rig) throw new RigError(`no rig in ${dir}`);
  rig.extras = [...(rig.extras ?? []), proc];
  saveRig(rig);
}

export async function rigUp(options: RigOptions): Promise<Rig> {
  const count = options.clusters;
  if (!Number.isInteger(count) || count < 1 || count > 8)
    throw new RigError(`--clusters must be between 1 and 8, got ${count}`);
  const realNodes = options.realNodes ?? 0;
  if (!Number.isInteger(realNodes) || realNodes < 0 || realNodes > 8)
    throw new RigError(`--real-nodes must be between 0 and 8, got ${realNodes}`);
  if (options.foreign && !realNodes)
    throw new RigError("--foreign needs real nodes (--real-nodes 1 or more): it is about what nodes pull and run");
  const nodes = options.nodes ?? (realNodes ? 0 : 2);
  if (!Number.isInteger(nodes) || nodes < (realNodes ? 0 : 1) || nodes > 100) {
    throw new RigError(`--nodes must be between ${realNodes ? 0 : 1} and 100, got ${nodes}`);
  }
  const names = clusterNames(count, options.names);
  const dir = options.dir ?? defaultRigDir();
  const progress = options.progress ?? (() => {});
  const existing = loadRig(dir);
  if (existing) {
    if (rigProcesses(existing).some((p) => p.alive)) {
      throw new RigError(
        `a rig is already running in ${dir} (clusters: ${existing.clusters.map((c) => c.name).join(", ")}); run \`bun run rig down\` first`,
      );
    }
    killRigNow(existing);
  }
  progress("building or locating the rig's binaries");
  const bin = await ensureRigBinaries();
  const images = realNodes ? [...(await ensureRigImages(progress)), ...(options.extraImages ?? [])] : [];
  mkdirSync(join(dir, "kubeconfigs"), { recursive: true });
  const rig: Rig = { dir, owner: options.owner ?? 0, kubeconfigDir: join(dir, "kubeconfigs"), bin, clusters: [] };
  try {
    if (realNodes) {
      rig.network = claimRigNetwork(dir);
      saveRig(rig);
      progress(
        `real nodes: bridge ${rig.network.bridge} (${rig.network.prefix}.0/24), ${images.length} images in each (${options.foreign ? "pulled from the rig's registry" : "copied from one containerd store"})`,
      );
      createRigNetwork(rig.network);
      const started = performance.now();
      rig.registry = prepareRegistry(join(dir, "registry"), rig.network.gateway);
      await startRegistry(rig.registry);
      saveRig(rig);
      const took = ((performance.now() - started) / 1000).toFixed(2);
      progress(`registry: http://${rig.registry.address} up in ${took}s, storage ${rig.registry.storage}`);
    }
    const ports = await allocatePorts(count * portsPerCluster, options.basePort);
    names.forEach((name, i) => {
      const [etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok] = ports.slice(
        i * portsPerCluster,
        (i + 1) * portsPerCluster,
      ) as number[];
      const spec = {
        name,
        index: i,
        nodes,
        realNodes,
        ...(options.foreign ? { foreign: true } : {}),
        ...clusterCidrs(i, options.overlappingPodCidrs ?? false),
      };
      progress(`${name}: creating PKI (pods ${spec.podCIDR}, services ${spec.serviceCIDR})`);
      // Per rig and cluster: a uid for the API server and its routing table (cluster.ts hostRouting).
      const slot = rig.network ? rig.network.index * 8 + i : 0;
      const hostRouting = rig.network ? { uid: 40000 + slot, table: 41000 + slot, priority: 20000 + slot } : undefined;
      const cluster = prepareCluster(
        spec,
        join(dir, name),
        {
          etcdClient: etcdClient!,
          etcdPeer: etcdPeer!,
          apiserver: apiserver!,
          controllerManager: controllerManager!,
          scheduler: scheduler!,
          kwok: kwok!,
        },
        rig.network?.gateway,
        hostRouting,
      );
      rig.clusters.push(cluster);
      if (rig.network) {
        cluster.realNodeStates = [];
        for (let k = 0; k < realNodes; k++) {
          cluster.realNodeStates.push(
            prepareRealNode(
              cluster,
              rig.network,
              k,
              i * realNodes + k,
              clusterDnsAddress(cluster.serviceCIDR),
              rig.registry?.hostsDir,
            ),
          );
          saveRig(rig);
        }
      }
    });
    saveRig(rig);
    // Clusters start side by side; pids are saved as they appear so `rig down` can always stop them.
    const saver = setInterval(() => saveRig(rig), 500);
    try {
      // Each node's store is a copy of one the images were imported into once (node-store.ts),
      // built, if this set of images has none yet, while the control planes start. The foreign
      // profile copies nothing: its nodes pull every image from the registry.
      const store =
        realNodes && !options.foreign
          ? ensureNodeStore(
              images.map((i) => i.archive),
              progress,
            )
          : undefined;
      store?.catch(() => {}); // awaited by each node's seed
      const nodeImages: NodeImages = store
        ? {
            seed: async (nodeDir) => seedNodeStore(await store, nodeDir),
            load: async (s) => checkNodeImages(s, await store),
          }
        : { load: async () => {} };
      await Promise.all([
        ...rig.clusters.map((c) => startCluster(c, bin, progress, nodeImages)),
        rig.registry && pushImages(rig.registry, images, progress),
      ]);
    } finally {
      clearInterval(saver);
    }
    for (const c of rig.clusters) copyFileSync(c.kubeconfig, join(rig.kubeconfigDir, `${c.name}.kubeconfig`));
    saveRig(rig);
    return rig;
  } catch (err) {
    await rigDown(dir).catch(() => {});
    throw err;
  }
}

/** The rig's images into its registry, while the clusters start: with a warm storage, HEADs only. */
async function pushImages(r: RegistryState, images: { ref: string; archive: string }[], progress: Progress) {
  const started = performance.now();
  const pushed = await pushRigImages(r, images);
  const count = (k: "uploaded" | "mounted" | "present") => pushed.reduce((n, p) => n + p.report[k].length, 0);
  progress(
    `registry: ${pushed.length} images pushed in ${((performance.now() - started) / 1000).toFixed(2)}s ` +
      `(blobs: ${count("uploaded")} uploaded, ${count("mounted")} mounted, ${count("present")} there already)`,
  );
}

/** Stops the rig's registry (pods pulling then fail, as with a registry down); startRigRegistry brings it back. */
export async function stopRigRegistry(rig: Rig): Promise<void> {
  if (!rig.registry) throw new RigError(`the rig in ${rig.dir} has no registry (no real nodes)`);
  await stopRegistry(rig.registry);
}

export async function startRigRegistry(rig: Rig): Promise<void> {
  if (!rig.registry) throw new RigError(`the rig in ${rig.dir} has no registry (no real nodes)`);
  await startRegistry(rig.registry);
  // rig.json keeps the new pid, so rig down (in any process) stops this registry too.
  const saved = loadRig(rig.dir);
  if (saved) saveRig({ ...saved, registry: rig.registry });
}

export async function rigDown(dir: string = defaultRigDir()): Promise<string[]> {
  const rig = loadRig(dir);
  if (!rig) {
    rmSync(dir, { recursive: true, force: true });
    return [];
  }
  if (!networkIsOurs(rig)) {
    killRigNow(rig);
    return rig.clusters.map((c) => c.name);
  }
  const phases = new PhaseClock(`the rig in ${dir}`);
  // liqo's processes first: they talk to the clusters, which must outlive them.
  await Promise.all((rig.extras ?? []).map((p) => killGroup(p.pid)));
  phases.lap("liqo's processes");
  const failures = (await Promise.allSettled(rig.clusters.map((c) => stopCluster(c)))).filter(
    (r) => r.status === "rejected",
  );
  phases.lap("the clusters");
  if (rig.registry) await stopRegistry(rig.registry);
  if (rig.network) removeRigNetworkNow(rig.network);
  for (const c of rig.clusters) if (c.hostRouting) removeHostRoutingNow(c.hostRouting);
  phases.lap("the network");
  const left = rigProcesses(rig).filter((p) => p.alive);
  if (left.length) {
    throw new RigError(
      `could not stop ${left.map((p) => `${p.cluster}/${p.component} (pid ${p.pid})`).join(", ")}; kill them by hand, then rerun rig down`,
    );
  }
  if (failures.length) throw (failures[0] as PromiseRejectedResult).reason;
  rmSync(dir, { recursive: true, force: true });
  phases.lap("its directory");
  phases.reportIfSlow();
  return rig.clusters.map((c) => c.name);
}

/** Whether the bridge this rig recorded is still its own (see rigNetworkIsOurs). */
function networkIsOurs(rig: Rig): boolean {
  return !rig.network || rigNetworkIsOurs(rig.network, rig.dir);
}

/** Stops every process of a rig at once, synchronously: for exit and signal handlers. */
export function killRigNow(rig: Rig) {
  // Another rig holds this bridge now: only this rig's own processes go, by pid; the names (node
  // namespaces, cgroups, veths, the bridge) are the other rig's.
  const ours = networkIsOurs(rig);
  if (ours) for (const c of rig.clusters) for (const n of c.realNodeStates ?? []) stopRealNodeNow(n);
  for (const p of rigProcesses(rig)) killGroupNow(p.pid);
  if (rig.network && ours) removeRigNetworkNow(rig.network);
  if (ours) for (const c of rig.clusters) if (c.hostRouting) removeHostRoutingNow(c.hostRouting);
  rmSync(rig.dir, { recursive: true, force: true });
}

/** Rigs under `root` whose owner process died (a killed test run) are stopped and removed. */
export async function reapOrphanRigs(root: string): Promise<string[]> {
  if (!existsSync(root)) return [];
  const reaped: string[] = [];
  for (const entry of readdirSync(root)) {
    const dir = join(root, entry);
    const rig = loadRig(dir);
    if (rig && rig.owner && isAlive(rig.owner)) continue;
    // A directory without rig.json may be a rig another live process is creating right now.
    if (!rig && Date.now() - statSync(dir).mtimeMs < 10 * 60_000) continue;
    if (rig) await rigDown(dir).catch(() => killRigNow(rig));
    rmSync(dir, { recursive: true, force: true });
    reaped.push(dir);
  }
  return reaped;
}
