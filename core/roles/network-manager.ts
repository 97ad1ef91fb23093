// `liqo network-manager`: IPAM (persisted in IpamStorage), NetworkConfig exchange, TunnelEndpoints
// and NatMappings. Its peers are the ForeignClusters with networking enabled and a tenant
// namespace (as Liqo's network manager follows the peering); `--peers-file` replaces that with a
// YAML file re-read when it changes (fabric without the peering controllers). Serves the admin
// API: readiness, metrics, and the ipam, networkconfigs, tunnelendpoints and peers views.
import { defineCommand } from "citty";
import { existsSync, readFileSync } from "node:fs";
import { adminArgs, adminSecurity, serveAdmin, watchConfigFile } from "./shared.ts";
import { CliError } from "../cli-errors.ts";
import { createKubeClient } from "../kube/client.ts";
import { createLogger } from "../log.ts";
import { createRegistry } from "../metrics/index.ts";
import {
  createNetworkManager,
  type NetworkManager,
  networkManagerViews,
  parsePeers,
  PeersFileError,
} from "../../netfabric/manager/index.ts";
import { watchForeignClusterPeers } from "../../netfabric/manager/fc-peers.ts";
import { IpamError, parseIpv4 } from "../../netfabric/ipam/index.ts";
import type { Peer } from "../../netfabric/manager/forge.ts";

function readPeersFile(path: string): Peer[] {
  if (!existsSync(path)) throw new CliError(`peers file ${path} does not exist`);
  try {
    return parsePeers(readFileSync(path, "utf8"), `peers file ${path}`);
  } catch (err) {
    if (err instanceof PeersFileError) throw new CliError(err.message);
    throw err;
  }
}

/** host:port → parts; the port must be 1-65535 unless `allowZero`. */
export function parseAddress(flag: string, value: string, allowZero = false): { host: string; port: number } {
  const [host, portText] = value.split(/:(?=\d+$)/);
  const port = Number(portText);
  if (!host || portText === undefined || !Number.isInteger(port) || port > 65535 || port < (allowZero ? 0 : 1)) {
    throw new CliError(`--${flag} must be host:port, got ${JSON.stringify(value)}`);
  }
  return { host, port };
}

/** The peers' source; the two ways are exclusive, so a file never silently shadows the ForeignClusters. */
export function peersSource(peers: string | undefined, peersFile: string | undefined): "foreignclusters" | "file" {
  if (peers !== undefined && peers !== "foreignclusters" && peers !== "file") {
    throw new CliError(`--peers must be foreignclusters or file, got ${JSON.stringify(peers)}`);
  }
  if (peers === "foreignclusters" && peersFile !== undefined) {
    throw new CliError(
      "--peers-file cannot be used with --peers=foreignclusters: peers come either from the ForeignClusters or from the file; drop one of the two flags",
    );
  }
  if (peers === "file" && !peersFile) throw new CliError("--peers=file needs --peers-file <path>");
  return peersFile !== undefined ? "file" : "foreignclusters";
}

export default defineCommand({
  meta: { name: "network-manager", description: "IPAM, NetworkConfig exchange and TunnelEndpoints for every peering" },
  args: {
    kubeconfig: { type: "string", description: "kubeconfig of the cluster (default: KUBECONFIG, ~/.kube/config)" },
    context: { type: "string", description: "context in the kubeconfig" },
    "liqo-namespace": {
      type: "string",
      default: "liqo",
      description: "namespace of the gateway's WireGuard key Secret",
    },
    "pod-cidr": { type: "string", required: true, description: "the cluster's pod CIDR" },
    "service-cidr": { type: "string", required: true, description: "the cluster's service CIDR" },
    "external-cidr": {
      type: "string",
      description: "the external CIDR (default: a free network of the pod CIDR's size from the pools)",
    },
    "reserved-subnets": { type: "string", default: "", description: "comma-separated networks never given to peers" },
    "gateway-endpoint": {
      type: "string",
      description:
        "ip:port where peers reach this cluster's gateway (default: what `liqo gateway` publishes on its key Secret)",
    },
    peers: {
      type: "string",
      description: "where peers come from: foreignclusters (default) or file (needs --peers-file)",
    },
    "peers-file": {
      type: "string",
      description:
        "YAML file: peers: [{remoteClusterId, remoteClusterName, tenantNamespace}], re-read on change; replaces following ForeignClusters",
    },
    ...adminArgs("127.0.0.1:8091"),
  },
  async run({ args }) {
    const log = createLogger({ role: "network-manager" });
    adminSecurity(args); // bad admin flags fail before anything starts
    const gateway =
      args["gateway-endpoint"] === undefined ? undefined : parseAddress("gateway-endpoint", args["gateway-endpoint"]);
    try {
      if (gateway) parseIpv4(gateway.host, "--gateway-endpoint");
    } catch (err) {
      throw new CliError(
        `${(err as Error).message}; the gateway endpoint is an IPv4 address and a port, e.g. 172.18.0.2:5871`,
      );
    }
    const reserved = args["reserved-subnets"]
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    const source = peersSource(args.peers, args["peers-file"]);
    const peersFile = args["peers-file"];
    let peers = source === "file" ? readPeersFile(peersFile!) : [];
    const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
    const registry = createRegistry();
    let manager: NetworkManager | undefined;
    // The ForeignClusters are listed before the manager's first reconcile: started with no peers,
    // it would tear down every peering it finds (TunnelEndpoint, networks, NetworkConfigs) and
    // build it again a moment later, a tunnel flap on every restart.
    const fcs =
      source === "file"
        ? undefined
        : watchForeignClusterPeers({
            client,
            logger: log,
            onPeers: (next) => (manager ? manager.setPeers(next) : (peers = next)),
          });
    await fcs?.start();
    try {
      manager = createNetworkManager({
        client,
        registry,
        logger: log,
        liqoNamespace: args["liqo-namespace"],
        peers,
        ipam: {
          podCidr: args["pod-cidr"],
          serviceCidr: args["service-cidr"],
          externalCidr: args["external-cidr"],
          reserved,
        },
        gatewayEndpoint: gateway && { ip: gateway.host, port: gateway.port },
      });
      await manager.start();
    } catch (err) {
      if (err instanceof IpamError) throw new CliError(err.message);
      throw err;
    }

    let peersError: string | undefined;
    let stopWatching: () => void | Promise<void>;
    if (!fcs) {
      stopWatching = watchConfigFile(peersFile!, () => {
        try {
          manager.setPeers(readPeersFile(peersFile!));
          peersError = undefined;
        } catch (err) {
          peersError = (err as Error).message;
          log.error("peers file rejected; keeping the previous peers", { err });
        }
      });
    } else stopWatching = () => fcs.stop();

    const server = await serveAdmin({
      args,
      registry,
      logger: log,
      client,
      title: "liqo network-manager",
      extensions: [networkManagerViews(manager)],
      checks: {
        "caches-synced": () => manager.synced() || { ok: false, reason: "informers are still listing" },
        ...(source === "file" ? { "peers-file": () => (peersError ? { ok: false, reason: peersError } : true) } : {}),
      },
    });
    log.info("network manager running", { admin: server.url, peersFrom: source, peers: manager.peers().length });
    console.log(`admin API on ${server.url}`);

    await new Promise<void>((resolve) => {
      for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => resolve());
    });
    log.info("stopping");
    await stopWatching();
    await server.stop();
    await manager.stop();
  },
});
