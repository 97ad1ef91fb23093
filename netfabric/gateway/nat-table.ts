// Renders the gateway's whole nftables NAT table. Every rule carries a comment naming its peer,
// its purpose and a hash of its text, so drift (a rule deleted or changed by hand) and config
// changes both show up as a different set of comments. The table also clears DF on WireGuard's own
// UDP packets (see wireguardNoDfRule), the one rule that is not per peer.
import { formatIpv4, parseCidr, parseIpv4, remapIp } from "../ipam/ipv4.ts";
import type { GatewayConfig, GatewayOptions, PeerTunnel } from "./config.ts";
import { natOf } from "../shared/nat.ts";

export interface NatTable {
  script: string;
  /** Comments of all rules, in order. */
  ruleIds: string[];
}

interface Rule {
  chain: "prerouting" | "postrouting" | "output";
  id: string;
  body: string;
}

/** The short hash of a rule's text its comment carries (here and in the filter table). */
export const ruleHash = (body: string) => Bun.hash(body).toString(16).padStart(16, "0").slice(0, 10);

function withId(peer: PeerTunnel, kind: string, chain: Rule["chain"], body: string): Rule {
  return { chain, body, id: `${peer.clusterId}/${kind}/${ruleHash(body)}` };
}

/** The address the gateway puts on traffic it forwards from elsewhere (hub-and-spoke): the first
 * host of our external CIDR, as the peer sees it. The IPAM never gives this address to endpoints. */
export function masqueradeAddress(config: GatewayConfig, peer: PeerTunnel): string {
  const own = parseCidr(config.localExternalCidr);
  const seen = parseCidr(natOf(peer.localNatExternalCidr, config.localExternalCidr));
  return formatIpv4(remapIp(own.base + 1, own, seen));
}

export function peerNatRules(config: GatewayConfig, peer: PeerTunnel): Rule[] {
  const dev = JSON.stringify(config.device);
  const remote = `{ ${peer.remoteNatPodCidr}, ${peer.remoteNatExternalCidr} }`;
  const natPod = natOf(peer.localNatPodCidr, config.localPodCidr);
  const natExternal = natOf(peer.localNatExternalCidr, config.localExternalCidr);
  const rules: Rule[] = [];
  const mappings = Object.entries(peer.natMappings ?? {});
  if (mappings.length > 0) {
    // Per-endpoint DNAT comes first: nat chains stop at the first dnat, and these addresses also
    // match the external CIDR netmap below.
    const own = parseCidr(config.localExternalCidr);
    const seen = parseCidr(natExternal);
    const pairs = mappings
      .map(([endpoint, external]) => [formatIpv4(remapIp(parseIpv4(external), own, seen)), endpoint] as const)
      .sort(([a], [b]) => parseIpv4(a) - parseIpv4(b));
    const map = pairs.map(([seenIp, endpoint]) => `${seenIp} : ${endpoint}`).join(", ");
    rules.push(
      withId(
        peer,
        "natmapping",
        "prerouting",
        `iifname ${dev} ip saddr ${remote} ip daddr { ${pairs.map(([s]) => s).join(", ")} } dnat ip to ip daddr map { ${map} }`,
      ),
    );
  }
  if (natPod !== config.localPodCidr) {
    rules.push(
      withId(
        peer,
        "pod-dnat",
        "prerouting",
        `iifname ${dev} ip saddr ${remote} ip daddr ${natPod} dnat ip prefix to ip daddr map { ${natPod} : ${config.localPodCidr} }`,
      ),
    );
    rules.push(
      withId(
        peer,
        "pod-snat",
        "postrouting",
        `oifname ${dev} ip daddr ${remote} ip saddr ${config.localPodCidr} snat ip prefix to ip saddr map { ${config.localPodCidr} : ${natPod} }`,
      ),
    );
  }
  if (natExternal !== config.localExternalCidr) {
    rules.push(
      withId(
        peer,
        "external-dnat",
        "prerouting",
        `iifname ${dev} ip saddr ${remote} ip daddr ${natExternal} dnat ip prefix to ip daddr map { ${natExternal} : ${config.localExternalCidr} }`,
      ),
    );
  }
  // Anything else leaving for this peer (forwarded from another peer, or from the gateway itself)
  // gets an address the peer routes back to us.
  rules.push(
    withId(
      peer,
      "masquerade",
      "postrouting",
      `oifname ${dev} ip daddr ${remote} ip saddr != ${config.localPodCidr} snat ip to ${masqueradeAddress(config, peer)}`,
    ),
  );
  return rules;
}

/** The comment prefix of the rule that is not a peer's. */
export const WIREGUARD_RULE_OWNER = "wireguard";

/**
 * WireGuard's encrypted packets leave without DF (Don't Fragment), so a router in front of a
 * smaller hop fragments them instead of dropping them: the tunnel then works across a path whose
 * MTU is below the device's even when ICMP "fragmentation needed" never comes back (a PMTUD
 * black hole). wireguard-go's socket sets DF (Linux's default for UDP); kernel WireGuard does not
 * set it on IPv4, so the rule changes nothing there. Matched by the listen port, the gateway's
 * other traffic keeps its DF. Measured in tests/netns/mtu-path.test.ts: without it, TCP through
 * the tunnel stalls behind a 1280-byte hop whose router's ICMP is dropped; with it, 1 MiB passes.
 */
export function wireguardNoDfRule(config: Pick<GatewayConfig, "listenPort">): Rule {
  const body = `udp sport ${config.listenPort} ip frag-off set ip frag-off & 0xbfff`;
  return { chain: "output", body, id: `${WIREGUARD_RULE_OWNER}/no-df/${ruleHash(body)}` };
}

export function renderNatTable(config: GatewayConfig, options: Pick<GatewayOptions, "natTable">): NatTable {
  const rules = [
    wireguardNoDfRule(config),
    ...[...config.peers]
      .sort((a, b) => (a.clusterId < b.clusterId ? -1 : a.clusterId > b.clusterId ? 1 : 0))
      .flatMap((peer) => peerNatRules(config, peer)),
  ];
  const chain = (name: Rule["chain"], type: string, hook: string) => [
    `  chain ${name} {`,
    `    type ${type} hook ${name} priority ${hook}; policy accept;`,
    ...rules.filter((r) => r.chain === name).map((r) => `    ${r.body} comment ${JSON.stringify(r.id)}`),
    "  }",
  ];
  const t = options.natTable;
  // Declaring then deleting the table inside the same transaction replaces it atomically,
  // whether or not it existed before.
  const script = [
    `table ip ${t} {}`,
    `delete table ip ${t}`,
    `table ip ${t} {`,
    ...chain("prerouting", "nat", "dstnat"),
    ...chain("postrouting", "nat", "srcnat"),
    ...chain("output", "filter", "mangle"),
    "}",
    "",
  ].join("\n");
  return { script, ruleIds: rules.map((r) => r.id) };
}
