// `liqo virtual-kubelet`: one per remote cluster. The virtual node, pod offloading through
// ShadowPods, the reflection engine for the twin namespaces, and the kubelet API (logs, exec).
// Run as a process, the remote kubeconfig and resources come as flags; the ForeignCluster
// controller starts the same thing in-process (core/virtualkubelet/start.ts) for each peering.
import { defineCommand } from "citty";
import { existsSync, readFileSync } from "node:fs";
import { CliError } from "../cli-errors.ts";
import { createKubeClient } from "../kube/client.ts";
import { createLogger } from "../log.ts";
import { createRegistry, registerProcessMetrics } from "../metrics/index.ts";
import { watchPluginDir } from "../reflection/engine/dropins.ts";
import { parseReflectionPolicy, ReflectionPolicyError, type ReflectionPolicy } from "../reflection/policy.ts";
import { watchReflectionPolicy } from "../reflection/policy-watch.ts";
import { startVirtualKubelet } from "../virtualkubelet/start.ts";
import { contains, formatIpv4, parseCidr, parseIpv4, remapIp, type Cidr } from "../../netfabric/ipam/index.ts";
import {
  adminArgs,
  adminSecurity,
  continuityThresholdFlag,
  hostPort,
  keyValues,
  serveAdmin,
  untilSignal,
} from "./shared.ts";

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
    "remote-cluster-name": {
      type: "string",
      required: true,
      description: "the remote cluster's name (node liqo-<name>)",
    },
    "remote-cluster-labels": {
      type: "string",
      description: "labels of the virtual node, k=v,k2=v2 (e.g. topology.liqo.io/region=south)",
    },
    resources: {
      type: "string",
      default: "cpu=4,memory=8Gi,pods=110",
      description: "capacity of the virtual node, k=v,...",
    },
    "node-name": { type: "string", description: "default liqo-<remote cluster name>" },
    "kubelet-address": {
      type: "string",
      default: "127.0.0.1:10250",
      description: "host:port of the kubelet API (the node's InternalIP)",
    },
    "kubelet-cert": { type: "string", required: true, description: "serving certificate of the kubelet API (PEM)" },
    "kubelet-key": { type: "string", required: true, description: "its key (PEM)" },
    "client-ca": {
      type: "string",
      required: true,
      description: "CA of the local cluster: the API server's kubelet client certificate must be signed by it",
    },
    "plugin-dir": { type: "string", description: "directory of drop-in reflector plugins" },
    "health-interval": {
      type: "string",
      default: "5",
      description: "seconds between health probes of the remote API server",
    },
    "health-failures": {
      type: "string",
      default: "3",
      description: "consecutive failed probes before the node turns NotReady",
    },
    "service-continuity-threshold": {
      type: "string",
      default: "15s",
      description:
        "how long the remote cluster may be unreachable before the offloaded pods turn not Ready here (their endpoints leave Services); e.g. 15s, 1m",
    },
    "remote-watch-idle": {
      type: "string",
      default: "30",
      description:
        "seconds a watch on the remote API server may be silent before the server is pinged; unanswered, the watch is re-established (0: never)",
    },
    "api-server-url": {
      type: "string",
      description:
        "https URL the remote cluster's pods reach the local API server at: offloaded pods that mount a ServiceAccount token talk to it (default: none, they mount no token)",
    },
    "reflection-policy": {
      type: "string",
      description:
        "what is reflected, per kind: kind=all|opt-in|none|selector(<labels>),... (configmaps, secrets, services, endpointslices, ingresses, events; default all); namespaces override it with the annotation liqo.io/reflection-policy",
    },
    "translate-pod-cidr": {
      type: "string",
      description: "REMOTE=SEEN (e.g. 10.200.0.0/16=10.201.0.0/16) until the network fabric provides translation",
    },
    ...adminArgs("127.0.0.1:8082"),
  },
  async run({ args }) {
    adminSecurity(args); // bad admin flags fail before anything starts
    const basePolicy = reflectionPolicyFlag(args["reflection-policy"]);
    const log = createLogger({ role: "virtual-kubelet", remoteClusterId: args["remote-cluster-id"] });
    const resources = keyValues(args.resources, "resources");
    const labels = keyValues(args["remote-cluster-labels"], "remote-cluster-labels");
    const kubelet = hostPort(args["kubelet-address"], "kubelet-address");
    const interval = Number(args["health-interval"]);
    const failures = Number(args["health-failures"]);
    if (!(interval > 0) || !Number.isInteger(failures) || failures < 1)
      throw new CliError("--health-interval must be > 0 and --health-failures a whole number ≥ 1");
    const continuityThresholdMs = continuityThresholdFlag(args["service-continuity-threshold"]);
    const watchIdle = Number(args["remote-watch-idle"]);
    if (!(watchIdle >= 0))
      throw new CliError(`--remote-watch-idle must be a number of seconds ≥ 0, got "${args["remote-watch-idle"]}"`);
    const translateIp = translator(args["translate-pod-cidr"]);
    const tls = {
      cert: readPem(args["kubelet-cert"], "kubelet-cert"),
      key: readPem(args["kubelet-key"], "kubelet-key"),
    };
    const clientCA = readPem(args["client-ca"], "client-ca");
    const local = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const remote = createKubeClient(
      { kubeconfig: args["remote-kubeconfig"], context: args["remote-context"] },
      { watchIdleMs: watchIdle * 1000 },
    );
    const ids = { localClusterId: args["cluster-id"], remoteClusterId: args["remote-cluster-id"] };
    const nodeName = args["node-name"] ?? `liqo-${args["remote-cluster-name"]}`;
    const registry = createRegistry();
    registerProcessMetrics(registry);

    // The flag's policy, overridden per namespace by the annotation liqo.io/reflection-policy.
    const reflectionPolicy = watchReflectionPolicy({ client: local, base: basePolicy, logger: log });
    await reflectionPolicy.start();
    const vk = await startVirtualKubelet({
      local,
      remote,
      ...ids,
      remoteClusterName: args["remote-cluster-name"],
      remoteClusterLabels: labels,
      resources,
      nodeName,
      kubeletHost: kubelet.host,
      kubeletPort: kubelet.port,
      tls,
      clientCA,
      healthIntervalMs: interval * 1000,
      failureThreshold: failures,
      continuityThresholdMs,
      translateIp,
      registry,
      logger: log,
      apiServerUrl: args["api-server-url"],
      reflectionPolicy,
    }).catch(async (err) => {
      await reflectionPolicy.stop();
      throw err;
    });
    const { node, engine, offloader, api } = vk;
    const dropins = args["plugin-dir"] ? watchPluginDir(engine, args["plugin-dir"], { logger: log }) : undefined;
    const admin = await serveAdmin({
      args,
      registry,
      logger: log,
      client: local,
      title: `liqo virtual-kubelet: ${nodeName}`,
      views: {
        node: () => node.status(),
        pairs: () => engine.pairs(),
        plugins: () => engine.plugins(),
        reflectors: () => engine.reflectors(),
        dropins: () => dropins?.files() ?? [],
      },
      checks: {
        "caches-synced": () =>
          (engine.synced() && offloader.synced) || { ok: false, reason: "caches are still listing" },
        "remote-reachable": () =>
          node.status().ready || { ok: false, reason: node.status().lastProbeError ?? "remote cluster not answering" },
      },
    });
    log.info("virtual kubelet running", { node: nodeName, kubelet: api.url, admin: admin.url });
    console.log(`virtual node ${nodeName} ready; kubelet API on ${api.url}; admin API on ${admin.url}`);
    await untilSignal();
    dropins?.stop();
    await admin.stop();
    await vk.stop();
    await reflectionPolicy.stop();
  },
});

/**
 * --reflection-policy: the cluster's policy for the process, where the controller manager follows
 * the chart's ConfigMap; namespaces' annotations override it in both.
 */
export function reflectionPolicyFlag(text: string | undefined): ReflectionPolicy {
  try {
    return parseReflectionPolicy(text ?? "", `--reflection-policy ${text ?? ""}`);
  } catch (err) {
    if (err instanceof ReflectionPolicyError) throw new CliError(err.message);
    throw err;
  }
}

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
    throw new CliError(
      `--translate-pod-cidr ${spec}: ${(err as Error).message}; use REMOTE/len=SEEN/len, e.g. 10.200.0.0/16=10.201.0.0/16`,
    );
  }
  return (ip) => {
    const n = parseIpv4(ip);
    return contains(from, n) ? formatIpv4(remapIp(n, from, to)) : ip;
  };
}
