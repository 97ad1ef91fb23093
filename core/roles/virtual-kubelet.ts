// `liqo virtual-kubelet`: one per remote cluster. The virtual node, pod offloading through
// ShadowPods, the reflection engine for the twin namespaces, and the kubelet API (logs, exec).
// Until peering drives it, the remote cluster's kubeconfig and resources come as flags.
import { defineCommand } from "citty";
import { existsSync, readFileSync } from "node:fs";
import { CliError } from "../../cli/errors.ts";
import { createKubeClient } from "../kube/client.ts";
import { createLogger } from "../log.ts";
import { createRegistry, registerProcessMetrics } from "../metrics/index.ts";
import { createNamespaceMapController } from "../offloading/index.ts";
import { createReflectionEngine } from "../reflection/engine/engine.ts";
import { watchPluginDir } from "../reflection/engine/dropins.ts";
import { createKubeletApi } from "../virtualkubelet/kubeletapi/index.ts";
import { createVirtualNode } from "../virtualkubelet/node/index.ts";
import { createPodOffloader } from "../virtualkubelet/pods/offloader.ts";
import { builtinWasm } from "../../reflectors/index.ts";
import { contains, formatIpv4, parseCidr, parseIpv4, remapIp, type Cidr } from "../../netfabric/ipam/index.ts";
import { hostPort, keyValues, serveAdmin, untilSignal } from "./shared.ts";

const BUILTINS = ["configmaps", "secrets", "services", "endpointslices", "ingresses"] as const;

function readPem(path: string, flag: string): string {
  if (!existsSync(path)) throw new CliError(`--${flag} ${path} does not exist`);
  return readFileSync(path, "utf8");
}

export default defineCommand({
  meta: { name: "virtual-kubelet", description: "Run the virtual node standing for a remote cluster" },
  args: {
    kubeconfig: { type: "string", description: "kubeconfig of the local cluster" },
    context: { type: "string", description: "context in the local kubeconfig" },
    "remote-kubeconfig": { type: "string", required: true, description: "kubeconfig of the remote cluster" },
    "remote-context": { type: "string", description: "context in the remote kubeconfig" },
    "cluster-id": { type: "string", required: true, description: "this (local) cluster's ID" },
    "remote-cluster-id": { type: "string", required: true, description: "the remote cluster's ID" },
    "remote-cluster-name": { type: "string", required: true, description: "the remote cluster's name (node liqo-<name>)" },
    "remote-cluster-labels": { type: "string", description: "labels of the virtual node, k=v,k2=v2 (e.g. topology.liqo.io/region=south)" },
    resources: { type: "string", default: "cpu=4,memory=8Gi,pods=110", description: "capacity of the virtual node, k=v,..." },
    "node-name": { type: "string", description: "default liqo-<remote cluster name>" },
    "kubelet-address": { type: "string", default: "127.0.0.1:10250", description: "host:port of the kubelet API (the node's InternalIP)" },
    "kubelet-cert": { type: "string", required: true, description: "serving certificate of the kubelet API (PEM)" },
    "kubelet-key": { type: "string", required: true, description: "its key (PEM)" },
    "client-ca": { type: "string", required: true, description: "CA of the local cluster: the API server's kubelet client certificate must be signed by it" },
    "plugin-dir": { type: "string", description: "directory of drop-in reflector plugins" },
    "health-interval": { type: "string", default: "5", description: "seconds between health probes of the remote API server" },
    "health-failures": { type: "string", default: "3", description: "consecutive failed probes before the node turns NotReady" },
    "translate-pod-cidr": { type: "string", description: "REMOTE=SEEN (e.g. 10.200.0.0/16=10.201.0.0/16) until the network fabric provides translation" },
    "admin-address": { type: "string", default: "127.0.0.1:8082", description: "host:port of the admin API" },
  },
  async run({ args }) {
    const log = createLogger({ role: "virtual-kubelet", remoteClusterId: args["remote-cluster-id"] });
    const resources = keyValues(args.resources, "resources");
    const labels = keyValues(args["remote-cluster-labels"], "remote-cluster-labels");
    const kubelet = hostPort(args["kubelet-address"], "kubelet-address");
    const interval = Number(args["health-interval"]);
    const failures = Number(args["health-failures"]);
    if (!(interval > 0) || !Number.isInteger(failures) || failures < 1) throw new CliError("--health-interval must be > 0 and --health-failures a whole number ≥ 1");
    const translateIp = translator(args["translate-pod-cidr"]);
    const tls = { cert: readPem(args["kubelet-cert"], "kubelet-cert"), key: readPem(args["kubelet-key"], "kubelet-key") };
    const clientCA = readPem(args["client-ca"], "client-ca");
    const local = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const remote = createKubeClient({ kubeconfig: args["remote-kubeconfig"], context: args["remote-context"] });
    const ids = { localClusterId: args["cluster-id"], remoteClusterId: args["remote-cluster-id"] };
    const nodeName = args["node-name"] ?? `liqo-${args["remote-cluster-name"]}`;
    const registry = createRegistry();
    registerProcessMetrics(registry);

    const engine = createReflectionEngine({ local, remote, ...ids, registry, logger: log, translateIp: translateIp ? (ip, d) => (d === "backward" ? translateIp(ip) : ip) : undefined, context: { virtualNodeName: nodeName, virtualKubeletIp: kubelet.host } });
    for (const b of BUILTINS) await engine.addPlugin(await builtinWasm(b), { trust: "builtin", source: `builtin:${b}` });
    const dropins = args["plugin-dir"] ? watchPluginDir(engine, args["plugin-dir"], { logger: log }) : undefined;
    const twins = new Map<string, string>();
    const offloader = await createPodOffloader({
      local, remote, ...ids, nodeName, virtualKubeletIp: kubelet.host, podsWasm: await builtinWasm("pods"), logger: log,
      translateIp, remoteNamespaceOf: (ns) => twins.get(ns),
    });
    const maps = createNamespaceMapController({
      local, remote, ...ids, remoteClusterName: args["remote-cluster-name"], logger: log,
      addPair: async (p) => { twins.set(p.localNamespace, p.remoteNamespace); await engine.addNamespacePair(p); offloader.resyncNamespace(p.localNamespace); },
      removePair: async (ns) => { twins.delete(ns); await engine.removeNamespacePair(ns); offloader.resyncNamespace(ns); },
    });
    const api = await createKubeletApi({
      remote, tls, auth: { clientCA }, host: kubelet.host, port: kubelet.port, nodeName, logger: log,
      resolvePod: (ns, name) => (twins.has(ns) ? { remoteNamespace: twins.get(ns)!, remoteName: name } : undefined),
    });
    const node = createVirtualNode({
      local, remote, remoteClusterId: ids.remoteClusterId, remoteClusterName: args["remote-cluster-name"], remoteClusterLabels: labels,
      resources, nodeName, address: kubelet.host, kubeletPort: api.port, healthIntervalMs: interval * 1000, failureThreshold: failures, logger: log,
    });
    await node.start();
    await maps.start();
    await offloader.start();
    const admin = await serveAdmin({
      address: args["admin-address"], registry, logger: log,
      views: { node: () => node.status(), pairs: () => engine.pairs(), plugins: () => engine.plugins(), reflectors: () => engine.reflectors(), dropins: () => dropins?.files() ?? [] },
      checks: {
        "caches-synced": () => (engine.synced() && offloader.synced) || { ok: false, reason: "caches are still listing" },
        "remote-reachable": () => node.status().ready || { ok: false, reason: node.status().lastProbeError ?? "remote cluster not answering" },
      },
    });
    log.info("virtual kubelet running", { node: nodeName, kubelet: api.url, admin: admin.url });
    console.log(`virtual node ${nodeName} ready; kubelet API on ${api.url}; admin API on ${admin.url}`);
    await untilSignal();
    dropins?.stop();
    await admin.stop();
    await offloader.stop();
    await maps.stop();
    await api.close();
    await node.stop();
    await engine.stop();
  },
});

/** A fixed remap of the remote pod CIDR (same size), until the network manager provides one. */
function translator(spec: string | undefined): ((ip: string) => string) | undefined {
  if (!spec) return undefined;
  const [fromText, toText] = spec.split("=");
  let from: Cidr;
  let to: Cidr;
  try {
    from = parseCidr(fromText ?? "", "--translate-pod-cidr");
    to = parseCidr(toText ?? "", "--translate-pod-cidr");
    if (from.prefix !== to.prefix) throw new Error("the two networks must have the same prefix length");
  } catch (err) {
    throw new CliError(`--translate-pod-cidr ${spec}: ${(err as Error).message}; use REMOTE/len=SEEN/len, e.g. 10.200.0.0/16=10.201.0.0/16`);
  }
  return (ip) => {
    const n = parseIpv4(ip);
    return contains(from, n) ? formatIpv4(remapIp(n, from, to)) : ip;
  };
}
