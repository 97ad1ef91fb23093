// One rig cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with M
// fake worker nodes, all on loopback, each component a detached process with its own log.
import { chmodSync, chownSync, copyFileSync, existsSync, linkSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { RigError } from "./errors.ts";
import { createClusterPki, kubeconfigYaml, type ClusterPki } from "./pki.ts";
import { isAlive, killGroup, PhaseClock, spawnDetached, tailFile } from "./process.ts";
import { clusterDnsAddress, deployClusterDns } from "./dns.ts";
import { LOCAL_PATH_CLASS, localPathClass, storageClasses } from "./local-path.ts";
import {
  finishClusterNodes,
  startContainerRuntime,
  startNodeAgents,
  stopRealNode,
  type HostRouting,
  type NodeImages,
  type RealNodeState,
} from "./nodes.ts";

export const components = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"] as const;
export type Component = (typeof components)[number];

export interface ClusterSpec {
  name: string;
  index: number;
  podCIDR: string;
  serviceCIDR: string;
  nodes: number;
  /** Real nodes (containerd, kubelet, kube-proxy in a network namespace); 0: kwok nodes only. */
  realNodes?: number;
  /**
   * The rig's foreign profile: a cluster that behaves like someone else's. Its API server enforces
   * Pod Security `baseline` in every namespace but kube-system, its nodes' interface is ens5, its
   * nodes pull every image from the rig's registry (nothing imported), and its kubeconfig names
   * the API server at the address its nodes and pods use, as a real cluster's does.
   */
  foreign?: boolean;
}

export interface ClusterPorts {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
  scheduler: number;
  kwok: number;
}

export interface ClusterState extends ClusterSpec {
  dir: string;
  server: string;
  kubeconfig: string;
  ports: ClusterPorts;
  pids: Partial<Record<Component, number>>;
  pki: ClusterPki;
  /** CRI-format log files kwok serves for every fake pod's containers (`kubectl logs`, `--previous`). */
  fakeLogs: { current: string; previous: string };
  /** With real nodes: the host's address on the rig bridge, where nodes and pods reach the API server. */
  nodeGateway?: string;
  /**
   * With real nodes: the API server runs as `uid`, and an `ip rule` sends that uid's packets to
   * routing table `table`, which holds routes to this cluster's pod CIDRs via its nodes. So the API
   * server reaches webhooks and virtual kubelets in pods, also when two clusters of the rig have
   * the same pod CIDR (the host's main table has no pod routes at all).
   */
  hostRouting?: HostRouting;
  realNodeStates?: RealNodeState[];
  /** Processes beside the components, by name (the local-path provisioner with real nodes). */
  addonPids?: Record<string, number>;
}

export type Progress = (message: string) => void;

/** The first address of a CIDR, which Kubernetes gives to the `kubernetes` Service. */
export function firstServiceIp(cidr: string): string {
  const [base] = cidr.split("/");
  const parts = base!.split(".").map(Number);
  parts[3] = parts[3]! + 1;
  return parts.join(".");
}

/** The foreign profile's admission configuration: Pod Security baseline by default, kube-system exempt. */
const podSecurityBaseline = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: PodSecurity
    configuration:
      apiVersion: pod-security.admission.config.k8s.io/v1
      kind: PodSecurityConfiguration
      defaults:
        enforce: baseline
        enforce-version: latest
        warn: baseline
        warn-version: latest
      exemptions:
        usernames: []
        runtimeClasses: []
        namespaces: [kube-system]
`;

export function prepareCluster(
  spec: ClusterSpec,
  dir: string,
  ports: ClusterPorts,
  nodeGateway?: string,
  hostRouting?: ClusterState["hostRouting"],
): ClusterState {
  mkdirSync(join(dir, "logs"), { recursive: true });
  const pki = createClusterPki(
    join(dir, "pki"),
    spec.name,
    firstServiceIp(spec.serviceCIDR),
    nodeGateway ? [nodeGateway] : [],
  );
  const server = `https://127.0.0.1:${ports.apiserver}`;
  const kubeconfig = join(dir, "kubeconfig");
  const userServer = spec.foreign && nodeGateway ? `https://${nodeGateway}:${ports.apiserver}` : server;
  writeFileSync(kubeconfig, kubeconfigYaml(spec.name, userServer, pki.ca.cert, pki.admin));
  if (spec.foreign) writeFileSync(join(dir, "admission.yaml"), podSecurityBaseline);
  writeFileSync(
    join(dir, "controller-manager.kubeconfig"),
    kubeconfigYaml(spec.name, server, pki.ca.cert, pki.controllerManager, "kube-controller-manager"),
  );
  writeFileSync(
    join(dir, "scheduler.kubeconfig"),
    kubeconfigYaml(spec.name, server, pki.ca.cert, pki.scheduler, "kube-scheduler"),
  );
  writeFileSync(join(dir, "kwok.kubeconfig"), kubeconfigYaml(spec.name, server, pki.ca.cert, pki.kwok, "kwok"));
  const fakeLogs = writeKwokDebugConfig(dir, spec.name);
  if (hostRouting) {
    // The API server runs as hostRouting.uid: it must reach its binary and read its own keys.
    for (const f of [
      pki.apiserver.key,
      pki.apiserver.cert,
      pki.ca.cert,
      pki.serviceAccount.key,
      pki.serviceAccount.pub,
      pki.kubeletClient.cert,
      pki.kubeletClient.key,
    ]) {
      chownSync(f, hostRouting.uid, hostRouting.uid);
    }
    for (const d of [join(dir, ".."), dir, pki.dir]) chmodSync(d, 0o711);
  }
  return {
    ...spec,
    dir,
    server,
    kubeconfig,
    ports,
    pids: {},
    pki,
    fakeLogs,
    ...(nodeGateway ? { nodeGateway, hostRouting } : {}),
  };
}

/** One line of a container log as CRI runtimes write it (and kwok reads it). */
export function criLogLine(message: string, stream: "stdout" | "stderr" = "stdout", at = new Date()): string {
  return `${at.toISOString().replace(/Z$/, "000000Z")} ${stream} F ${message}\n`;
}

// kwok serves `kubectl logs` and `kubectl exec` for fake pods only when told how: every pod's
// containers read their logs from two files the rig (and tests, by appending) writes, and exec runs
// the command on this machine. Without this, logs and exec answer 404 on kwok nodes.
function writeKwokDebugConfig(dir: string, clusterName: string): ClusterState["fakeLogs"] {
  const logsDir = join(dir, "fake-logs");
  mkdirSync(logsDir, { recursive: true });
  const current = join(logsDir, "current.log");
  const previous = join(logsDir, "previous.log");
  const started = new Date();
  writeFileSync(
    current,
    criLogLine(`fake container of cluster ${clusterName} started`, "stdout", started) +
      criLogLine("ready to serve", "stdout", started),
  );
  writeFileSync(
    previous,
    criLogLine(`previous instance of the fake container of cluster ${clusterName}`, "stdout", started),
  );
  const docs = [
    {
      apiVersion: "kwok.x-k8s.io/v1alpha1",
      kind: "ClusterLogs",
      metadata: { name: "rig-logs" },
      spec: { logs: [{ logsFile: current, previousLogsFile: previous, follow: true }] },
    },
    {
      apiVersion: "kwok.x-k8s.io/v1alpha1",
      kind: "ClusterExec",
      metadata: { name: "rig-exec" },
      spec: { execs: [{ local: { workDir: logsDir } }] },
    },
  ];
  // JSON documents are valid YAML documents.
  writeFileSync(join(dir, "kwok-config.yaml"), docs.map((d) => JSON.stringify(d)).join("\n---\n") + "\n");
  return { current, previous };
}

function componentArgs(c: ClusterState, component: Component): string[] {
  const p = c.pki;
  const kc = (name: string) => join(c.dir, `${name}.kubeconfig`);
  switch (component) {
    case "etcd":
      return [
        `--name=${c.name}`,
        `--data-dir=${join(c.dir, "etcd")}`,
        `--listen-client-urls=http://127.0.0.1:${c.ports.etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${c.ports.etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${c.ports.etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${c.ports.etcdPeer}`,
        `--initial-cluster=${c.name}=http://127.0.0.1:${c.ports.etcdPeer}`,
        // A test cluster trades durability for speed; nothing here must survive a power cut.
        "--unsafe-no-fsync",
        "--quota-backend-bytes=4294967296",
        "--log-level=warn",
      ];
    case "kube-apiserver": {
      // Real nodes reach the API server on the rig bridge, and pods through the `kubernetes`
      // Service, whose endpoint is then the bridge address; kubelets are authorized as nodes.
      const g = c.nodeGateway;
      const reach = g
        ? // Webhooks are called at their endpoints' pod addresses (routed by hostRouting): no
          // kube-proxy runs on the host to resolve a Service's cluster IP.
          [
            "--bind-address=0.0.0.0",
            `--advertise-address=${g}`,
            "--endpoint-reconciler-type=lease",
            "--authorization-mode=Node,RBAC",
            "--enable-aggregator-routing=true",
          ]
        : // The `kubernetes` Service cannot have 127.0.0.1 as an endpoint; nothing on kwok nodes needs one.
          [
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            "--endpoint-reconciler-type=none",
            "--authorization-mode=RBAC",
          ];
      return [
        `--etcd-servers=http://127.0.0.1:${c.ports.etcdClient}`,
        `--secure-port=${c.ports.apiserver}`,
        ...reach,
        `--tls-cert-file=${p.apiserver.cert}`,
        `--tls-private-key-file=${p.apiserver.key}`,
        `--client-ca-file=${p.ca.cert}`,
        `--service-account-key-file=${p.serviceAccount.pub}`,
        `--service-account-signing-key-file=${p.serviceAccount.key}`,
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        `--service-cluster-ip-range=${c.serviceCIDR}`,
        "--allow-privileged=true",
        ...(c.foreign ? [`--admission-control-config-file=${join(c.dir, "admission.yaml")}`] : []),
        `--kubelet-client-certificate=${p.kubeletClient.cert}`,
        `--kubelet-client-key=${p.kubeletClient.key}`,
        "--kubelet-preferred-address-types=InternalIP",
        "--profiling=false",
        "-v=1",
      ];
    }
    case "kube-controller-manager":
      return [
        `--kubeconfig=${kc("controller-manager")}`,
        `--authentication-kubeconfig=${kc("controller-manager")}`,
        `--authorization-kubeconfig=${kc("controller-manager")}`,
        `--secure-port=${c.ports.controllerManager}`,
        "--bind-address=127.0.0.1",
        `--root-ca-file=${p.ca.cert}`,
        `--service-account-private-key-file=${p.serviceAccount.key}`,
        `--cluster-signing-cert-file=${p.ca.cert}`,
        `--cluster-signing-key-file=${p.ca.key}`,
        "--use-service-account-credentials=true",
        "--leader-elect=false",
        `--cluster-name=${c.name}`,
        "--allocate-node-cidrs=true",
        `--cluster-cidr=${c.podCIDR}`,
        "--node-cidr-mask-size=24",
        `--service-cluster-ip-range=${c.serviceCIDR}`,
        "--configure-cloud-routes=false",
        "-v=1",
      ];
    case "kube-scheduler":
      return [
        `--kubeconfig=${kc("scheduler")}`,
        `--authentication-kubeconfig=${kc("scheduler")}`,
        `--authorization-kubeconfig=${kc("scheduler")}`,
        `--secure-port=${c.ports.scheduler}`,
        "--bind-address=127.0.0.1",
        "--leader-elect=false",
        "-v=1",
      ];
    case "kwok":
      return [
        `--kubeconfig=${kc("kwok")}`,
        "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        "--node-ip=127.0.0.1",
        `--node-port=${c.ports.kwok}`,
        `--server-address=127.0.0.1:${c.ports.kwok}`,
        `--tls-cert-file=${p.kwokServing.cert}`,
        `--tls-private-key-file=${p.kwokServing.key}`,
        `--cidr=${c.podCIDR}`,
        "--node-lease-duration-seconds=40",
        `--config=${join(c.dir, "kwok-config.yaml")}`,
      ];
  }
}

export const logFile = (c: ClusterState, component: Component) => join(c.dir, "logs", `${component}.log`);

export function startComponent(c: ClusterState, component: Component, bin: string): void {
  const uid = component === "kube-apiserver" ? c.hostRouting?.uid : undefined;
  const path = uid === undefined ? join(bin, component) : reachableCopy(join(bin, component), join(c.dir, component));
  c.pids[component] = spawnDetached(path, componentArgs(c, component), logFile(c, component), undefined, uid);
}

/** The build cache may sit in root's home, which other uids cannot enter: a link (or copy) in the rig. */
function reachableCopy(from: string, to: string): string {
  if (!existsSync(to)) {
    try {
      linkSync(from, to);
    } catch {
      copyFileSync(from, to);
    }
  }
  chmodSync(to, 0o755);
  return to;
}

export async function stopComponent(c: ClusterState, component: Component): Promise<void> {
  const pid = c.pids[component];
  if (pid) await killGroup(pid);
  delete c.pids[component];
}

async function probe(url: string, c: ClusterState, withClientCert: boolean): Promise<boolean> {
  try {
    const tls = withClientCert
      ? { ca: Bun.file(c.pki.ca.cert), cert: Bun.file(c.pki.admin.cert), key: Bun.file(c.pki.admin.key) }
      : { rejectUnauthorized: false };
    const res = await fetch(url, { tls, signal: AbortSignal.timeout(2000) } as RequestInit);
    return res.ok;
  } catch {
    return false;
  }
}

function explain(log: string): string {
  if (/address already in use/i.test(log))
    return "a port it needs is taken by another process; run `bun run rig down` or free the port, then retry";
  if (/permission denied/i.test(log)) return "it lacks permissions; check the rig directory's owner";
  return "see its log above";
}

/** Waits until `check` passes; fails at once if the component died, or at the deadline, with its log. */
export async function waitHealthy(
  c: ClusterState,
  component: Component,
  check: () => Promise<boolean>,
  timeoutMs = 90_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    const pid = c.pids[component];
    if (pid && !isAlive(pid)) {
      const log = tailFile(logFile(c, component));
      throw new RigError(
        `${component} of cluster ${c.name} exited during start-up; ${explain(log)}\n--- ${logFile(c, component)} (tail) ---\n${log}`,
      );
    }
    await Bun.sleep(100);
  }
  const log = tailFile(logFile(c, component));
  throw new RigError(
    `${component} of cluster ${c.name} did not become healthy within ${timeoutMs / 1000}s; ${explain(log)}\n--- ${logFile(c, component)} (tail) ---\n${log}`,
  );
}

const healthChecks: Record<Component, (c: ClusterState) => Promise<boolean>> = {
  etcd: (c) => probe(`http://127.0.0.1:${c.ports.etcdClient}/health`, c, false),
  "kube-apiserver": (c) => probe(`${c.server}/readyz`, c, true),
  "kube-controller-manager": (c) => probe(`https://127.0.0.1:${c.ports.controllerManager}/healthz`, c, false),
  "kube-scheduler": (c) => probe(`https://127.0.0.1:${c.ports.scheduler}/healthz`, c, false),
  kwok: (c) => probe(`https://127.0.0.1:${c.ports.kwok}/healthz`, c, false),
};

export async function startAndWait(
  c: ClusterState,
  component: Component,
  bin: string,
  timeoutMs?: number,
): Promise<void> {
  startComponent(c, component, bin);
  await waitHealthy(c, component, () => healthChecks[component](c), timeoutMs);
}

/** What every kwok node of the rig reports as its node info. */
export const KWOK_NODE_INFO = {
  architecture: "amd64",
  operatingSystem: "linux",
  kubeletVersion: "fake",
  kubeProxyVersion: "fake",
  containerRuntimeVersion: "kwok",
};

export function fakeNode(c: ClusterState, i: number): KubeObject {
  const name = `${c.name}-worker-${i + 1}`;
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
      labels: {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node-role.kubernetes.io/worker": "",
        type: "kwok",
        "topology.kubernetes.io/zone": `${c.name}-zone-${(i % 3) + 1}`,
      },
    },
    spec: {},
    status: {
      // A mid-size cloud worker: 8 vCPU, 32 GiB, the default 110 pods.
      capacity: { cpu: "8", memory: "32Gi", pods: "110", "ephemeral-storage": "100Gi" },
      allocatable: { cpu: "7800m", memory: "31Gi", pods: "110", "ephemeral-storage": "95Gi" },
      nodeInfo: KWOK_NODE_INFO,
    },
  };
}

type NodeObj = KubeObject & {
  spec?: { podCIDR?: string };
  status?: { conditions?: { type: string; status: string }[] };
};

export async function readyNodes(client: KubeClient): Promise<NodeObj[]> {
  const nodes = await client.list<NodeObj>(Resources.nodes);
  return nodes.items.filter(
    (n) => n.spec?.podCIDR && n.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"),
  );
}

export async function startCluster(
  c: ClusterState,
  bin: string,
  progress: Progress,
  images?: NodeImages,
): Promise<void> {
  // The real nodes' containerd and image import overlap the control plane's start (the import is
  // the longest step); their kubelets wait for it below.
  const runtimes = startContainerRuntimes(c, bin, progress, images);
  runtimes?.catch(() => {}); // awaited below; a control plane that fails first must not leave it unhandled
  const [etcd, apiserver, ...rest] = components;
  for (const component of [etcd, apiserver]) {
    progress(`${c.name}: starting ${component}`);
    await startAndWait(c, component, bin);
  }
  // The controller manager, scheduler and kwok need only the API server.
  progress(`${c.name}: starting ${rest.join(", ")}`);
  await Promise.all(rest.map((component) => startAndWait(c, component, bin)));
  const client = createKubeClient({ kubeconfig: c.kubeconfig });
  for (let i = 0; i < c.nodes; i++) {
    const node = fakeNode(c, i);
    if (!(await client.find(Resources.nodes, node.metadata.name!))) await client.create(Resources.nodes, node);
  }
  progress(`${c.name}: waiting for ${c.nodes} kwok node(s) to be Ready with a pod CIDR`);
  const deadline = Date.now() + 90_000;
  while ((await readyNodes(client)).length < c.nodes) {
    if (Date.now() > deadline) {
      throw new RigError(
        `cluster ${c.name}: the kwok nodes did not become Ready with a pod CIDR within 90s; see ${logFile(c, "kwok")} and ${logFile(c, "kube-controller-manager")}`,
      );
    }
    await Bun.sleep(200);
  }
  // Pods need the default ServiceAccount, which the controller manager creates asynchronously.
  while (!(await client.find(Resources.serviceAccounts, "default", "default"))) {
    if (Date.now() > deadline)
      throw new RigError(
        `cluster ${c.name}: the default ServiceAccount was not created; see ${logFile(c, "kube-controller-manager")}`,
      );
    await Bun.sleep(200);
  }
  if (runtimes) {
    await runtimes;
    await startRealNodes(c, bin, client, progress);
  }
}

/** Each real node's containerd with the rig's images imported, or undefined without real nodes. */
function startContainerRuntimes(
  c: ClusterState,
  bin: string,
  progress: Progress,
  images?: NodeImages,
): Promise<unknown> | undefined {
  const nodes = c.realNodeStates ?? [];
  if (!nodes.length) return undefined;
  if (!images) throw new RigError(`cluster ${c.name}: real nodes need the rig's images`);
  progress(
    `${c.name}: starting ${nodes.length} real node(s): containerd and ${c.foreign ? "no image import (the foreign profile pulls from the registry)" : "a copy of the images' containerd store"}`,
  );
  return Promise.all(nodes.map((n) => startContainerRuntime(n, bin, images)));
}

async function startRealNodes(c: ClusterState, bin: string, client: KubeClient, progress: Progress): Promise<void> {
  const nodes = c.realNodeStates!;
  progress(`${c.name}: starting the real nodes' kubelet and kube-proxy`);
  for (const n of nodes) startNodeAgents(n, bin);
  progress(`${c.name}: waiting for the real nodes to register, get pod CIDRs and turn Ready`);
  await finishClusterNodes(c, nodes, client, c.hostRouting!);
  progress(`${c.name}: starting the cluster DNS (CoreDNS at ${clusterDnsAddress(c.serviceCIDR)})`);
  await deployClusterDns(c.name, c.serviceCIDR, client);
  progress(`${c.name}: starting the local-path provisioner (default StorageClass ${LOCAL_PATH_CLASS})`);
  await client.apply(storageClasses, localPathClass(), { fieldManager: "liqo-rig", force: true });
  const main = join(import.meta.dir, "local-path-main.ts");
  c.addonPids = {
    ...c.addonPids,
    "local-path": spawnDetached(
      process.execPath,
      [main, c.kubeconfig, join(c.dir, "volumes")],
      join(c.dir, "logs", "local-path.log"),
    ),
  };
}

export async function stopCluster(c: ClusterState): Promise<void> {
  const phases = new PhaseClock(`cluster ${c.name}`);
  for (const pid of Object.values(c.addonPids ?? {})) await killGroup(pid);
  c.addonPids = {};
  const left = (await Promise.all((c.realNodeStates ?? []).map((n) => stopRealNode(n)))).flat();
  phases.lap("its real nodes");
  // Reverse order: clients before the API server, the API server before etcd.
  for (const component of [...components].reverse()) {
    await stopComponent(c, component);
    phases.lap(component);
  }
  phases.reportIfSlow();
  if (left.length) throw new RigError(`cluster ${c.name}: its real nodes left ${left.join(", ")}; remove them by hand`);
}

/** Restarts the API server in place (same port, same etcd): clients see a dropped connection. */
export async function restartApiServer(c: ClusterState, bin: string): Promise<void> {
  await stopComponent(c, "kube-apiserver");
  await startAndWait(c, "kube-apiserver", bin);
}
