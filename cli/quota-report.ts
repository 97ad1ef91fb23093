// liqoctl status's quota section: per peering, what a consumer uses of the offer we made it
// (incoming: counted as the provider's ShadowPod controller counts, from its pods here) and what
// we use of each provider's offer (outgoing: the pods on its virtual nodes), with the mode this
// cluster enforces on its consumers and how many of their ShadowPods wait refused.
import {
  REMOTE_CLUSTER_ID_LABEL,
  REPLICATION_DESTINATION_LABEL,
  REPLICATION_ORIGIN_LABEL,
  TENANT_CORDONED_ANNOTATION,
} from "../core/apis/labels.ts";
import { formatQuantity, parseQuantity, unitOf } from "../core/kube/quantity.ts";
import type { KubeObject } from "../core/kube/resources.ts";
import type { Pod } from "../core/kube/types.ts";
import {
  addAmounts,
  isActivePod,
  isBase,
  podRequests,
  zeroAmounts,
  type Amounts,
} from "../core/peering/sharing/offer.ts";
import type { ForeignClusterObject } from "../core/peering/foreigncluster/index.ts";
import { table } from "./table.ts";

export type Offer = KubeObject & {
  spec: { clusterId?: string; resourceQuota?: { hard?: Record<string, string | number> } };
};
export type QuotaShadow = KubeObject & { status?: { quota?: { phase?: string } } };
/** A ResourceRequest, for the provider's answer to asked amounts (status.resourceGrants, replicated back). */
export type QuotaRequest = KubeObject & {
  status?: {
    resourceGrants?: { name: string; asked: string; granted: string; capped: boolean }[];
    resourceRefusal?: string;
  };
};

export interface QuotaInput {
  fcs: ForeignClusterObject[];
  /** Every ResourceOffer here: ours (to consumers) and the ones replicated from providers. */
  offers: Offer[];
  /** Every pod: ours on virtual nodes, and our consumers' in their twin namespaces. */
  pods: Pod[];
  /** The namespaces, for their remote-cluster-id label (a consumer's twin namespaces). */
  namespaces: KubeObject[];
  /** Virtual nodes, for their remote-cluster-id label (a provider's). */
  nodes: KubeObject[];
  shadowPods: QuotaShadow[];
  /** The controller manager's --peer-quota (undefined: hard, its default). */
  mode?: string;
  /** Consumers cordoned here (liqoctl cordon tenant). */
  cordoned?: Set<string>;
  /** ResourceRequests: ours (what we asked each provider for) and our consumers' (what they asked us for). */
  requests?: QuotaRequest[];
}

/** One peering's row: an offer (ours to a consumer, or a provider's to us) and what the pods take of it. */
export interface QuotaPeeringStatus {
  peering: string;
  clusterID: string;
  direction: "incoming" | "outgoing";
  /** incoming: we cordoned this consumer (liqoctl cordon tenant); outgoing: the provider cordoned us. */
  cordoned: boolean;
  /** What the offer states, per resource (a quantity that does not parse: as written). */
  offered: Record<string, string>;
  /** What the pods take: cpu, memory, pods, ephemeral-storage and every named resource offered or used. */
  used: Record<string, string>;
  /** incoming: the consumer's ShadowPods refused for quota; outgoing: our pods held back (OffloadingBackOff). */
  waiting: number;
}

/** A ResourceRequest with asked amounts: ours of a provider (outgoing) or a consumer's of us (incoming). */
export interface QuotaAskStatus {
  peering: string;
  direction: "incoming" | "outgoing";
  resources: { name: string; asked: string; granted: string; capped: boolean }[];
  /** Why the asked amounts were not read; the last offer stands. */
  refusal?: string;
}

export interface QuotaStatus {
  /** How this cluster enforces its offers on consumers (the controller manager's --peer-quota). */
  enforcement: string;
  peerings: QuotaPeeringStatus[];
  asked: QuotaAskStatus[];
}

function sum(pods: Pod[]): Amounts {
  const out = zeroAmounts();
  for (const p of pods) addAmounts(out, podRequests(p));
  return out;
}

/** The offer's amounts as quantities are written back (1000m: 1); one that does not parse, as it is. */
function offeredAmounts(hard: Record<string, string | number> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [r, v] of Object.entries(hard ?? {})) {
    try {
      out[r] = formatQuantity(parseQuantity(v), unitOf(r));
    } catch {
      out[r] = String(v);
    }
  }
  return out;
}

/** What the pods take of every resource they use or the offer states (0 where none). */
function usedAmounts(used: Amounts, offered: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of new Set([...Object.keys(used), ...Object.keys(offered)]))
    out[r] = formatQuantity(used[r] ?? 0n, unitOf(r));
  return out;
}

function askedStatus(i: QuotaInput, nameOf: (id: string | undefined) => string): QuotaAskStatus[] {
  const out: QuotaAskStatus[] = [];
  for (const rr of i.requests ?? []) {
    const grants = rr.status?.resourceGrants ?? [];
    const refusal = rr.status?.resourceRefusal;
    if (!grants.length && !refusal) continue;
    const origin = rr.metadata.labels?.[REPLICATION_ORIGIN_LABEL];
    out.push({
      peering: nameOf(origin || rr.metadata.labels?.[REPLICATION_DESTINATION_LABEL]),
      direction: origin ? "incoming" : "outgoing",
      resources: grants.map((g) => ({ name: g.name, asked: g.asked, granted: g.granted, capped: g.capped })),
      ...(refusal ? { refusal } : {}),
    });
  }
  return out;
}

/** Per peering, what is used of each offer made or received, and what was asked of each. */
export function quotaStatus(i: QuotaInput): QuotaStatus {
  const nameOf = (id: string | undefined) =>
    i.fcs.find((f) => f.spec.clusterIdentity?.clusterID === id)?.metadata.name ?? id ?? "?";
  const peerings: QuotaPeeringStatus[] = [];
  // Incoming: our offers to consumers, and what their pods here take.
  for (const offer of i.offers) {
    const consumer = offer.metadata.labels?.[REPLICATION_DESTINATION_LABEL];
    if (!consumer || offer.metadata.labels?.[REPLICATION_ORIGIN_LABEL]) continue;
    const twins = new Set(
      i.namespaces.filter((n) => n.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL] === consumer).map((n) => n.metadata.name),
    );
    const pods = i.pods.filter(
      (p) =>
        twins.has(p.metadata.namespace) &&
        p.metadata.labels?.["liqo.io/managed-by"] === "shadowpod" &&
        p.status?.phase !== "Succeeded" &&
        p.status?.phase !== "Failed",
    );
    const offered = offeredAmounts(offer.spec.resourceQuota?.hard);
    peerings.push({
      peering: nameOf(consumer),
      clusterID: consumer,
      direction: "incoming",
      cordoned: i.cordoned?.has(consumer) ?? false,
      offered,
      used: usedAmounts(sum(pods), offered),
      waiting: i.shadowPods.filter((s) => twins.has(s.metadata.namespace) && s.status?.quota?.phase === "Refused")
        .length,
    });
  }
  // Outgoing: each provider's offer to us, and what our pods on its virtual nodes take.
  for (const offer of i.offers) {
    const provider = offer.metadata.labels?.[REPLICATION_ORIGIN_LABEL];
    if (!provider) continue;
    const nodes = new Set(
      i.nodes.filter((n) => n.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL] === provider).map((n) => n.metadata.name),
    );
    const pods = i.pods.filter((p) => nodes.has(p.spec?.nodeName) && isActivePod(p));
    const offered = offeredAmounts(offer.spec.resourceQuota?.hard);
    peerings.push({
      peering: nameOf(provider),
      clusterID: provider,
      direction: "outgoing",
      cordoned: offer.metadata.annotations?.[TENANT_CORDONED_ANNOTATION] === "true",
      offered,
      used: usedAmounts(sum(pods), offered),
      waiting: pods.filter((p) => (p.status as { reason?: string } | undefined)?.reason === "OffloadingBackOff").length,
    });
  }
  return { enforcement: i.mode ?? "hard", peerings, asked: askedStatus(i, nameOf) };
}

/** "used/offered" for one resource, or "used" when the offer does not state it. */
function cell(p: QuotaPeeringStatus, r: string): string {
  return p.offered[r] === undefined ? p.used[r]! : `${p.used[r]}/${p.offered[r]}`;
}

/** The quota section's text: a table per peering, named resources and asked amounts under it. */
export function quotaText(q: QuotaStatus): string {
  if (!q.peerings.length) return "Quotas: no offer made or received";
  const mode = q.enforcement;
  const rows = [["PEERING", "DIRECTION", "MODE", "CPU", "MEMORY", "PODS", "WAITING (REFUSED)"]];
  // Extended resources and huge pages an offer states, or pods use: one line per peering under the table.
  const extra: string[] = [];
  for (const p of q.peerings) {
    const named = Object.keys(p.used)
      .filter((r) => !isBase(r))
      .sort();
    if (named.length) extra.push(`  ${p.peering} ${p.direction}: ${named.map((r) => `${r} ${cell(p, r)}`).join(", ")}`);
    const incoming = p.direction === "incoming";
    rows.push([
      p.peering,
      p.direction,
      incoming ? (p.cordoned ? `${mode}, cordoned` : mode) : p.cordoned ? "cordoned by the provider" : "-",
      cell(p, "cpu"),
      cell(p, "memory"),
      cell(p, "pods"),
      String(p.waiting),
    ]);
  }
  const grants = q.asked.map((a) => {
    const who = a.direction === "incoming" ? `${a.peering} asked here` : `asked of ${a.peering}`;
    const each = a.resources.map((g) => `${g.name} ${g.asked} → ${g.granted}${g.capped ? " (capped)" : ""}`).join(", ");
    return `  ${who}: ${each || "-"}${a.refusal ? `; refused: ${a.refusal}` : ""}`;
  });
  return (
    `Quotas (used/offered; incoming: what each consumer's pods take here, enforced ${mode}; outgoing: what ours take at each provider):\n${table(rows)}` +
    (extra.length ? `\nNamed resources (used/offered):\n${extra.join("\n")}` : "") +
    (grants.length ? `\nAsked amounts (asked → granted):\n${grants.join("\n")}` : "")
  );
}

export function quotaReport(i: QuotaInput): string {
  return quotaText(quotaStatus(i));
}
