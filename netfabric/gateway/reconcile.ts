// Applies the gateway's desired state and repairs drift. Level-triggered: every call reads the
// live state (device, rules, routes, NAT table, the security mode's filter table) and changes only what differs, so it is safe to
// run on a timer and after a crash.
import { CommandError } from "../os/errors.ts";
import type { IpAdapter } from "../os/ip.ts";
import type { NftAdapter, NftTable } from "../os/nft.ts";
import type { CommandRunner } from "../os/run.ts";
import type { UapiClient } from "../os/wireguard-uapi.ts";
import { defaultGatewayOptions, tunnelMtu, type GatewayConfig, type GatewayOptions } from "./config.ts";
import {
  deleteFilterTableScript,
  renderFilterTable,
  UNKNOWN_PEER,
  type RejectCount,
  type SecurityMode,
} from "./filter-table.ts";
import { renderNatTable } from "./nat-table.ts";
import { desiredRoutes, desiredRules, planRouting, type RouteJson, type RuleJson } from "./routing.ts";
import { desiredWireguard, keepRoamedEndpoints, wireguardDrift } from "./wireguard.ts";

export interface GatewayAdapters {
  ip: IpAdapter;
  nft: NftAdapter;
  wireguard: UapiClient;
  /** Used for sysctl only; runs in the same netns as `ip`. */
  runner: CommandRunner;
}

export interface ReconcileReport {
  /** Human-readable list of what was changed; empty when nothing drifted. */
  changes: string[];
  /** IntraClusterTrafficSegregation: packets and bytes the filter rejected so far, per peer (and "unknown"). */
  rejected: Map<string, RejectCount>;
}

/** The security mode, and in IntraClusterTrafficSegregation what each peer may reach (filter-table.ts). */
export interface SecuritySpec {
  mode: SecurityMode;
  /** Per peer cluster ID; a peer of the config missing here gets empty sets (still filtered). */
  sets?: ReadonlyMap<string, { sources: string[]; destinations: string[] }>;
}

/** The reject counters of a live filter table, by the peer its rule comment names. */
export function rejectCounts(table: NftTable | undefined): Map<string, RejectCount> {
  const counts = new Map<string, RejectCount>();
  for (const rule of table?.rules ?? []) {
    const parts = rule.comment?.split("/") ?? [];
    const peer = parts[0] === UNKNOWN_PEER ? UNKNOWN_PEER : parts[1] === "reject" ? parts[0] : undefined;
    if (peer === undefined) continue;
    for (const e of rule.expr as { counter?: { packets?: number; bytes?: number } }[])
      if (e?.counter) counts.set(peer, { packets: e.counter.packets ?? 0, bytes: e.counter.bytes ?? 0 });
  }
  return counts;
}

const sameSets = (a: Record<string, unknown[]>, b: Record<string, string[]>) => {
  const names = Object.keys(b);
  return (
    Object.keys(a).length === names.length &&
    names.every(
      (n) => a[n] !== undefined && JSON.stringify([...a[n]!].map(String).sort()) === JSON.stringify([...b[n]!].sort()),
    )
  );
};

export function createGatewayReconciler(adapters: GatewayAdapters, options: Partial<GatewayOptions> = {}) {
  const opts: GatewayOptions = { ...defaultGatewayOptions, ...options };
  const { ip, nft, wireguard, runner } = adapters;

  async function forwarding(changes: string[]) {
    const netns = ip.netns;
    const value = (await runner.run(["sysctl", "-n", "net.ipv4.ip_forward"], { netns })).trim();
    if (value !== "1") {
      await runner.run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"], { netns });
      changes.push("net.ipv4.ip_forward=1");
    }
  }

  async function device(config: GatewayConfig, changes: string[]) {
    const want = desiredWireguard(config);
    const have = await wireguard.get();
    const drift = wireguardDrift(want, have);
    if (drift.length > 0) {
      // Not `want` as is: a peer that roamed (it is behind NAT) must keep its working endpoint.
      await wireguard.set(keepRoamedEndpoints(want, have));
      changes.push(`wireguard ${config.device}: ${drift.join("; ")}`);
    }
    const [link] = await ip.json<{ mtu: number; flags: string[] }>(["link", "show", "dev", config.device]);
    const mtu = tunnelMtu(config);
    if (!link || link.mtu !== mtu || !link.flags.includes("UP")) {
      await ip.batch([`link set ${config.device} mtu ${mtu} up`]);
      changes.push(`link ${config.device} mtu ${mtu} up`);
    }
  }

  async function routing(config: GatewayConfig, changes: string[]) {
    const rules = await ip.json<RuleJson>(["rule", "show"]);
    let routes: RouteJson[] = [];
    try {
      routes = await ip.json<RouteJson>(["route", "show", "table", String(opts.routingTable)]);
    } catch (err) {
      // An empty table does not exist yet; that is the same as no routes.
      if (!(err instanceof CommandError && /table does not exist/.test(err.stderr))) throw err;
    }
    const lines = planRouting(desiredRules(config, opts), desiredRoutes(config), rules, routes, opts);
    await ip.batch(lines);
    changes.push(...lines);
  }

  async function nat(config: GatewayConfig, changes: string[]) {
    const want = renderNatTable(config, opts);
    const have = await nft.listTable("ip", opts.natTable);
    const haveIds = have?.rules.map((r) => r.comment ?? `(no comment, handle ${r.handle})`) ?? [];
    const same =
      have !== undefined &&
      have.chains.length === 3 &&
      haveIds.length === want.ruleIds.length &&
      [...haveIds].sort().join("\n") === [...want.ruleIds].sort().join("\n");
    if (!same) {
      await nft.apply(want.script);
      const missing = want.ruleIds.filter((id) => !haveIds.includes(id));
      const extra = haveIds.filter((id) => !want.ruleIds.includes(id));
      changes.push(
        `nft table ${opts.natTable} replaced (missing: ${missing.join(", ") || "none"}; unexpected: ${extra.join(", ") || "none"})`,
      );
    }
  }

  /** The security mode's filter table: absent in FullPodToPod, else replaced whenever its rules or sets differ. */
  async function filter(config: GatewayConfig, security: SecuritySpec, changes: string[]) {
    const t = opts.filterTable;
    const have = await nft.listTable("ip", t);
    if (security.mode === "FullPodToPod") {
      if (have) {
        await nft.apply(deleteFilterTableScript(t));
        changes.push(`nft table ${t} deleted (FullPodToPod)`);
      }
      return new Map<string, RejectCount>();
    }
    const counts = rejectCounts(have);
    const want = renderFilterTable(
      {
        device: config.device,
        table: t,
        peers: config.peers.map((p) => ({
          clusterId: p.clusterId,
          networks: [p.remoteNatPodCidr, p.remoteNatExternalCidr],
          sources: security.sets?.get(p.clusterId)?.sources ?? [],
          destinations: security.sets?.get(p.clusterId)?.destinations ?? [],
        })),
      },
      // Carried into the new table, so its counters keep counting across replacements.
      counts,
    );
    const haveIds = have?.rules.map((r) => r.comment ?? `(no comment, handle ${r.handle})`) ?? [];
    const same =
      have !== undefined &&
      have.chains.length === 1 &&
      have.chains[0] === "forward" &&
      [...haveIds].sort().join("\n") === [...want.ruleIds].sort().join("\n") &&
      sameSets(have.sets, want.sets);
    if (!same) {
      await nft.apply(want.script);
      const missing = want.ruleIds.filter((id) => !haveIds.includes(id));
      const extra = haveIds.filter((id) => !want.ruleIds.includes(id));
      const sets = Object.entries(want.sets)
        .filter(([name, elements]) => JSON.stringify(have?.sets[name]?.map(String).sort()) !== JSON.stringify(elements))
        .map(([name, elements]) => `${name}=${elements.length}`);
      changes.push(
        `nft table ${t} replaced (digest ${want.digest}; missing: ${missing.join(", ") || "none"}; unexpected: ${extra.join(", ") || "none"}; sets changed: ${sets.join(", ") || "none"})`,
      );
    }
    return counts;
  }

  return {
    options: opts,
    async reconcile(
      config: GatewayConfig,
      security: SecuritySpec = { mode: "FullPodToPod" },
    ): Promise<ReconcileReport> {
      const changes: string[] = [];
      await forwarding(changes);
      await device(config, changes);
      await routing(config, changes);
      await nat(config, changes);
      const rejected = await filter(config, security, changes);
      return { changes, rejected };
    },
  };
}
