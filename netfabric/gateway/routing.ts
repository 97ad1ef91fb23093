// Policy routing into the tunnel: rules send the peers' networks to a dedicated table whose
// routes point at the WireGuard device. Pure planning, so drift repair is testable in memory.
import type { GatewayConfig, GatewayOptions } from "./config.ts";

export interface RuleEntry {
  to: string;
  table: number;
  priority: number;
}
export interface RouteEntry {
  to: string;
  dev: string;
}

export function desiredRules(config: GatewayConfig, options: GatewayOptions): RuleEntry[] {
  return config.peers
    .flatMap((p) => [p.remoteNatPodCidr, p.remoteNatExternalCidr])
    .map((to) => ({ to, table: options.routingTable, priority: options.rulePriority }));
}

export function desiredRoutes(config: GatewayConfig): RouteEntry[] {
  return config.peers
    .flatMap((p) => [p.remoteNatPodCidr, p.remoteNatExternalCidr])
    .map((to) => ({ to, dev: config.device }));
}

/** `ip -json rule show` entry. */
export interface RuleJson {
  priority: number;
  dst?: string;
  dstlen?: number;
  table: string;
}
/** `ip -json route show table N` entry. */
export interface RouteJson {
  dst: string;
  dev?: string;
}

export function planRouting(
  rules: readonly RuleEntry[],
  routes: readonly RouteEntry[],
  observedRules: readonly RuleJson[],
  observedRoutes: readonly RouteJson[],
  options: GatewayOptions,
): string[] {
  const table = String(options.routingTable);
  const ours = observedRules
    .filter((r) => r.table === table)
    .map((r) => ({
      to: r.dst === undefined ? "0.0.0.0/0" : `${r.dst}/${r.dstlen ?? 32}`,
      priority: r.priority,
    }));
  const lines: string[] = [];
  for (const r of rules) {
    if (!ours.some((o) => o.to === r.to && o.priority === r.priority))
      lines.push(`rule add to ${r.to} lookup ${table} priority ${r.priority}`);
  }
  for (const o of ours) {
    if (!rules.some((r) => r.to === o.to && r.priority === o.priority))
      lines.push(`rule del to ${o.to} lookup ${table} priority ${o.priority}`);
  }
  // The kernel prints host routes without /32.
  const seen = observedRoutes.map((r) => ({ to: r.dst.includes("/") ? r.dst : `${r.dst}/32`, dev: r.dev }));
  for (const r of routes) {
    if (!seen.some((o) => o.to === r.to && o.dev === r.dev))
      lines.push(`route replace ${r.to} dev ${r.dev} table ${table}`);
  }
  for (const o of seen) {
    if (!routes.some((r) => r.to === o.to)) lines.push(`route del ${o.to} table ${table}`);
  }
  return lines;
}
