// The `liqo controller-manager --controllers=discovery` flags: LAN discovery over mDNS (and the
// SearchDomain controller for WAN discovery). Not among the default controllers: mDNS needs the
// node's network (the chart runs it in its own Deployment with hostNetwork, as Liqo's liqo-discovery).
import { CliError } from "../cli-errors.ts";
import { createLanDiscovery } from "../discovery/lan.ts";
import { createSearchDomainController } from "../discovery/wan.ts";
import type { KubeClient } from "../kube/client.ts";
import type { Logger } from "../log.ts";
import type { Registry } from "../metrics/index.ts";

export const discoveryArgs = {
  "discovery-advertise": {
    type: "boolean",
    default: true,
    description: "answer mDNS queries with this cluster's ID, name and auth service (discovery)",
  },
  "discovery-discover": {
    type: "boolean",
    default: true,
    description: "find clusters on the LAN by mDNS and keep a ForeignCluster for each (discovery)",
  },
  "discovery-autojoin": {
    type: "boolean",
    default: false,
    description: "peer with discovered clusters by themselves (their auth token is still needed) (discovery)",
  },
  "discovery-ttl": {
    type: "string",
    default: "90",
    description:
      "seconds an mDNS answer is valid; a round every ttl/3, a cluster removed after three missed rounds (discovery)",
  },
  "dns-server": {
    type: "string",
    description:
      "host:port of the DNS server SearchDomains are read from (default: the first nameserver of /etc/resolv.conf) (searchdomain)",
  },
  "discovery-interface-address": {
    type: "string",
    description:
      "IPv4 address of the interface to use for mDNS (default: the kernel's choice; the chart passes the node's)",
  },
} as const;

type Args = {
  "dns-server"?: string;
  "discovery-advertise"?: boolean;
  "discovery-discover"?: boolean;
  "discovery-autojoin"?: boolean;
  "discovery-ttl"?: string;
  "discovery-interface-address"?: string;
  "liqo-namespace"?: string;
  "cluster-id": string;
  "cluster-name": string;
};

export function discoveryTtl(text: string | undefined): number {
  const ttl = Number(text ?? "90");
  if (!Number.isInteger(ttl) || ttl < 3 || ttl > 86_400)
    throw new CliError(`--discovery-ttl "${text}" is not a number of seconds from 3 to 86400 (Liqo's default is 90)`);
  return ttl;
}

export function searchDomainController(args: Args, o: { client: KubeClient; logger: Logger }) {
  const server = args["dns-server"];
  const m = server === undefined ? undefined : /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/.exec(server);
  if (server !== undefined && (!m || Number(m[2]) < 1 || Number(m[2]) > 65535))
    throw new CliError(`--dns-server must be an IPv4 address and port such as 10.96.0.10:53, got ${server}`);
  return createSearchDomainController({
    client: o.client,
    logger: o.logger,
    localClusterId: args["cluster-id"],
    ...(m ? { dnsServer: { host: m[1]!, port: Number(m[2]) } } : {}),
  });
}

export function discoveryController(args: Args, o: { client: KubeClient; registry: Registry; logger: Logger }) {
  const address = args["discovery-interface-address"];
  if (address !== undefined && !/^\d{1,3}(\.\d{1,3}){3}$/.test(address))
    throw new CliError(`--discovery-interface-address must be an IPv4 address, got ${address}`);
  return createLanDiscovery({
    client: o.client,
    registry: o.registry,
    logger: o.logger,
    local: { clusterId: args["cluster-id"], clusterName: args["cluster-name"] },
    liqoNamespace: args["liqo-namespace"] ?? "liqo",
    advertise: args["discovery-advertise"] !== false,
    discover: args["discovery-discover"] !== false,
    autojoin: args["discovery-autojoin"] === true,
    ttlSeconds: discoveryTtl(args["discovery-ttl"]),
    interfaceAddress: address,
  });
}
