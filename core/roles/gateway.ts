// `liqo gateway`: the WireGuard gateway of this cluster, active/standby through a Lease. Every
// replica runs this; only the Lease holder configures the device (in the network namespace given
// by --netns), the NAT table and the policy routing, from the cluster's TunnelEndpoints, and in
// the IntraClusterTrafficSegregation security mode (--security-mode) the filter table.
// Admin views: tunnels (per TunnelEndpoint: status, handshake, bytes) and leader.
import { defineCommand } from "citty";
import { hostname } from "node:os";
import { CliError } from "../cli-errors.ts";
import { createKubeClient } from "../kube/client.ts";
import { createLogger } from "../log.ts";
import { createRegistry, registerProcessMetrics } from "../metrics/index.ts";
import { createGatewayController } from "../../netfabric/gateway/controller.ts";
import type { WireguardMode } from "../../netfabric/gateway/device.ts";
import { DEFAULT_SECURITY_MODE, isSecurityMode, SECURITY_MODES } from "../../netfabric/gateway/filter-table.ts";
import { parseIpv4 } from "../../netfabric/ipam/index.ts";
import { adminArgs, adminSecurity, serveAdmin, untilSignal } from "./shared.ts";

function positive(flag: string, value: string | undefined, min = 1, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new CliError(`--${flag} must be a whole number between ${min} and ${max}, got ${JSON.stringify(value)}`);
  return n;
}

function endpointFlag(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(value);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535)
    throw new CliError(`--endpoint must be ipv4:port (the address peers reach), got ${JSON.stringify(value)}`);
  try {
    parseIpv4(m[1]!, "--endpoint");
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  return value;
}

export default defineCommand({
  meta: { name: "gateway", description: "WireGuard gateway towards the peers (active/standby through a Lease)" },
  args: {
    kubeconfig: { type: "string", description: "kubeconfig of the cluster (default: KUBECONFIG, ~/.kube/config)" },
    context: { type: "string", description: "context in the kubeconfig" },
    "liqo-namespace": {
      type: "string",
      default: "liqo",
      description: "namespace of the key Secret, the Lease and the Service",
    },
    netns: { type: "string", description: "network namespace the gateway configures (default: the current one)" },
    device: { type: "string", default: "liqo.wg", description: "WireGuard interface name (≤ 15 characters)" },
    "listen-port": { type: "string", default: "5871", description: "WireGuard UDP port" },
    mtu: { type: "string", description: "tunnel MTU (default: the underlay MTU minus WireGuard's overhead)" },
    "underlay-device": {
      type: "string",
      description: "interface the tunnel leaves through, for the MTU (default: assume 1500)",
    },
    wireguard: {
      type: "string",
      default: "auto",
      description: "auto (kernel module when present), kernel or userspace (wireguard-go)",
    },
    endpoint: {
      type: "string",
      description: "ip:port announced to peers (default: the Service's load balancer, else NodePort on a node)",
    },
    "lb-timeout": {
      type: "string",
      default: "30",
      description: "seconds to wait for a load balancer address before the NodePort fallback",
    },
    "node-name": { type: "string", description: "node whose address goes with the NodePort, and this replica's node" },
    "vtep-address": {
      type: "string",
      description: "this gateway's underlay address in the cluster, for the VXLAN overlay to the nodes",
    },
    "vtep-device": { type: "string", description: "interface of --vtep-address" },
    identity: { type: "string", description: "leader election identity (default: <pod or host name>-<pid>)" },
    "lease-duration": {
      type: "string",
      default: "15",
      description: "seconds a Lease holder stays leader without renewing",
    },
    "renew-deadline": {
      type: "string",
      default: "10",
      description: "seconds the holder keeps trying to renew before it steps down",
    },
    "retry-period": { type: "string", default: "2", description: "seconds between Lease attempts" },
    "standby-wait": {
      type: "string",
      description:
        "seconds a starting replica watches a released Lease before taking it, so a running standby takes over first (default: two retry periods; the chart gives 0 to a single replica, which has no standby)",
    },
    "resync-period": { type: "string", default: "5", description: "seconds between reconcile passes (drift repair)" },
    "persistent-keepalive": {
      type: "string",
      default: "10",
      description:
        "seconds between WireGuard keepalives to each peer, so a gateway behind NAT stays reachable (0: off)",
    },
    "handshake-timeout": {
      type: "string",
      default: "60",
      description: "seconds without a WireGuard handshake before a tunnel is reported as Error",
    },
    "security-mode": {
      type: "string",
      default: DEFAULT_SECURITY_MODE,
      description:
        "FullPodToPod (peers' pods reach every pod here) or IntraClusterTrafficSegregation (a peer's new connections reach only its own pods running here and the endpoints of Services reflected to it; from our pods offloaded there, anything); Liqo's networking.securityMode",
    },
    ...adminArgs("127.0.0.1:8093"),
  },
  async run({ args }) {
    adminSecurity(args); // bad admin flags fail before anything starts
    const wireguard = args.wireguard as WireguardMode;
    if (!["auto", "kernel", "userspace"].includes(wireguard))
      throw new CliError(`--wireguard must be auto, kernel or userspace, got ${JSON.stringify(args.wireguard)}`);
    const securityMode = args["security-mode"];
    if (!isSecurityMode(securityMode))
      throw new CliError(`--security-mode must be ${SECURITY_MODES.join(" or ")}, got ${JSON.stringify(securityMode)}`);
    if (args.device.length > 15 || !/^[a-zA-Z0-9._-]+$/.test(args.device))
      throw new CliError(
        `--device ${JSON.stringify(args.device)} is not an interface name (letters, digits, ._-, at most 15)`,
      );
    if (Boolean(args["vtep-address"]) !== Boolean(args["vtep-device"]))
      throw new CliError("--vtep-address and --vtep-device go together");
    if (args["vtep-address"]) {
      try {
        parseIpv4(args["vtep-address"], "--vtep-address");
      } catch (err) {
        throw new CliError((err as Error).message);
      }
    }
    const seconds = (flag: string) => positive(flag, (args as Record<string, string>)[flag])! * 1000;
    const standbyWait = positive("standby-wait", args["standby-wait"], 0);
    const lease = {
      durationMs: seconds("lease-duration"),
      renewDeadlineMs: seconds("renew-deadline"),
      retryPeriodMs: seconds("retry-period"),
      standbyWaitMs: standbyWait === undefined ? undefined : standbyWait * 1000,
    };
    if (!(lease.renewDeadlineMs < lease.durationMs && lease.retryPeriodMs < lease.renewDeadlineMs)) {
      throw new CliError(
        "need --retry-period < --renew-deadline < --lease-duration, so a holder steps down before a standby may take over",
      );
    }
    const listenPort = positive("listen-port", args["listen-port"], 1, 65535)!;
    const mtu = positive("mtu", args.mtu, 576, 65535);
    const endpoint = endpointFlag(args.endpoint);
    const persistentKeepalive = positive("persistent-keepalive", args["persistent-keepalive"], 0, 65535);
    const log = createLogger({ role: "gateway" });
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const registry = createRegistry();
    registerProcessMetrics(registry);
    const gateway = createGatewayController({
      client,
      registry,
      logger: log,
      liqoNamespace: args["liqo-namespace"],
      // <pod>-<pid> in a pod: a standby finds the holder's pod by it (holderGone).
      identity: args.identity ?? `${process.env.POD_NAME || hostname()}-${process.pid}`,
      netns: args.netns,
      device: args.device,
      listenPort,
      mtu,
      underlayDevice: args["underlay-device"],
      wireguard,
      endpoint,
      loadBalancerTimeoutMs: seconds("lb-timeout"),
      nodeName: args["node-name"],
      overlay: args["vtep-address"] ? { vtepIp: args["vtep-address"], dev: args["vtep-device"]! } : undefined,
      lease,
      intervalMs: seconds("resync-period"),
      handshakeTimeoutMs: seconds("handshake-timeout"),
      persistentKeepalive,
      securityMode,
      // In a pod (the chart sets POD_NAME), the leader labels itself so the Service selects it.
      podName: process.env.POD_NAME || undefined,
    });
    await gateway.start();
    const admin = await serveAdmin({
      args,
      registry,
      logger: log,
      client,
      title: "liqo gateway",
      views: { tunnels: () => gateway.tunnels(), leader: () => gateway.leader() },
      // Active/standby: only the Lease holder is ready, so the gateway Service sends peers to it.
      leader: () => gateway.isActive() || { ok: false, reason: "standby: another replica holds the gateway Lease" },
      checks: { "caches-synced": () => gateway.synced() || { ok: false, reason: "informers are still listing" } },
    });
    log.info("gateway running", { admin: admin.url });
    console.log(`admin API on ${admin.url}`);
    await untilSignal();
    log.info("stopping: releasing the Lease");
    await gateway.stop();
    await admin.stop();
  },
});
