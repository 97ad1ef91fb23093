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
import { addAmounts, isActivePod, podRequests, zeroAmounts, type Amounts } from "../core/peering/sharing/offer.ts";
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

/** One line per request with asked amounts: each resource asked → granted, "capped" where the provider gave less. */
function grantLines(i: QuotaInput, nameOf: (id: string | undefined) => string): string[] {
  const out: string[] = [];
  for (const rr of i.requests ?? []) {
    const grants = rr.status?.resourceGrants ?? [];
    const refusal = rr.status?.resourceRefusal;
    if (!grants.length && !refusal) continue;
    const origin = rr.metadata.labels?.[REPLICATION_ORIGIN_LABEL];
    const who = origin
      ? `${nameOf(origin)} asked here`
      : `asked of ${nameOf(rr.metadata.labels?.[REPLICATION_DESTINATION_LABEL])}`;
    const each = grants.map((g) => `${g.name} ${g.asked} → ${g.granted}${g.capped ? " (capped)" : ""}`).join(", ");
    out.push(`  ${who}: ${each || "-"}${refusal ? `; refused: ${refusal}` : ""}`);
  }
  return out;
}

function sum(pods: Pod[]): Amounts {
  const out = zeroAmounts();
  for (const p of pods) addAmounts(out, podRequests(p));
  return out;
}

/** "used/offered" for one resource, or "used" when the offer does not state it. */
function cell(used: Amounts, hard: Record<string, string | number> | undefined, r: string) {
  const f = (n: bigint) => formatQuantity(n, unitOf(r));
  const limit = hard?.[r];
  if (limit === undefined) return f(used[r] ?? 0n);
  try {
    return `${f(used[r] ?? 0n)}/${f(parseQuantity(limit))}`;
  } catch {
    return `${f(used[r] ?? 0n)}/${limit}`;
  }
}

export function quotaReport(i: QuotaInput): string {
  const nameOf = (id: string | undefined) =>
    i.fcs.find((f) => f.spec.clusterIdentity?.clusterID === id)?.metadata.name ?? id ?? "?";
  const mode = i.mode ?? "hard";
  const rows = [["PEERING", "DIRECTION", "MODE", "CPU", "MEMORY", "PODS", "WAITING (REFUSED)"]];
  // Extended resources and huge pages an offer states, or pods use: one line per peering under the table.
  const extra: string[] = [];
  const named = (row: string, used: Amounts, hard: Record<string, string | number> | undefined) => {
    const names = [...new Set([...Object.keys(hard ?? {}), ...Object.keys(used)])]
      .filter((r) => !["cpu", "memory", "pods", "ephemeral-storage"].includes(r))
      .sort();
    if (names.length) extra.push(`  ${row}: ${names.map((r) => `${r} ${cell(used, hard, r)}`).join(", ")}`);
  };
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
    const refused = i.shadowPods.filter(
      (s) => twins.has(s.metadata.namespace) && s.status?.quota?.phase === "Refused",
    ).length;
    const used = sum(pods);
    const hard = offer.spec.resourceQuota?.hard;
    named(`${nameOf(consumer)} incoming`, used, hard);
    rows.push([
      nameOf(consumer),
      "incoming",
      i.cordoned?.has(consumer) ? `${mode}, cordoned` : mode,
      cell(used, hard, "cpu"),
      cell(used, hard, "memory"),
      cell(used, hard, "pods"),
      String(refused),
    ]);
  }
  // Outgoing: each provider's offer to us, and what our pods on its virtual nodes take.
  for (const offer of i.offers) {
    const provider = offer.metadata.labels?.[REPLICATION_ORIGIN_LABEL];
    if (!provider) continue;
    const nodes = new Set(
      i.nodes.filter((n) => n.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL] === provider).map((n) => n.metadata.name),
    );
    const pods = i.pods.filter((p) => nodes.has(p.spec?.nodeName) && isActivePod(p));
    const held = pods.filter(
      (p) => (p.status as { reason?: string } | undefined)?.reason === "OffloadingBackOff",
    ).length;
    const used = sum(pods);
    const hard = offer.spec.resourceQuota?.hard;
    named(`${nameOf(provider)} outgoing`, used, hard);
    rows.push([
      nameOf(provider),
      "outgoing",
      offer.metadata.annotations?.[TENANT_CORDONED_ANNOTATION] === "true" ? "cordoned by the provider" : "-",
      cell(used, hard, "cpu"),
      cell(used, hard, "memory"),
      cell(used, hard, "pods"),
      String(held),
    ]);
  }
  if (rows.length === 1) return "Quotas: no offer made or received";
  const grants = grantLines(i, nameOf);
  return (
    `Quotas (used/offered; incoming: what each consumer's pods take here, enforced ${mode}; outgoing: what ours take at each provider):\n${table(rows)}` +
    (extra.length ? `\nNamed resources (used/offered):\n${extra.join("\n")}` : "") +
    (grants.length ? `\nAsked amounts (asked → granted):\n${grants.join("\n")}` : "")
  );
}
