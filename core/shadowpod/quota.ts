// What a consumer may run here: every ShadowPod is admitted against its consumer's offer (the
// ResourceOffer's resourceQuota.hard), counting the pods of all that consumer's twin namespaces
// together. Pure: the ledger of admitted amounts and the decision; the controller does the I/O.
//
// Modes, as Liqo 1.x's resource enforcement:
// - hard (the default): a ShadowPod that would take the consumer past its offer gets no pod; it
//   waits, refused, until enough is released or the offer grows.
// - soft: every ShadowPod gets its pod; one past the offer is flagged (an Event, its status).
// - none: nothing is counted.
import { formatQuantity, parseQuantity, unitOf } from "../kube/quantity.ts";
import type { Container, PodSpec } from "../kube/types.ts";
import {
  addAmounts,
  formatResourceList,
  isBase,
  OFFERED_RESOURCES,
  zeroAmounts,
  type Amounts,
} from "../peering/sharing/offer.ts";

export const QUOTA_MODES = ["hard", "soft", "none"] as const;
export type QuotaMode = (typeof QUOTA_MODES)[number];

/**
 * Requests written into containers that state none (as a LimitRange's defaults), so that such pods
 * count. Off by default: a pod is then counted as the consumer's scheduler counts it on the
 * virtual node (no cpu or memory, one pod), so an honest consumer is never refused.
 */
export interface DefaultRequests {
  cpu: string;
  memory: string;
}

/** Parses `cpu=100m,memory=128Mi` (both needed); errors name the flag and the fix. */
export function parseDefaultRequests(text: string, flag = "--peer-default-requests"): DefaultRequests {
  const out: Partial<DefaultRequests> = {};
  for (const pair of text.split(",")) {
    const [key, value, ...rest] = pair.split("=").map((s) => s.trim());
    if (rest.length || !value || (key !== "cpu" && key !== "memory"))
      throw new Error(
        `${flag} "${text}": "${pair}" is not cpu=<quantity> or memory=<quantity> (e.g. cpu=100m,memory=128Mi)`,
      );
    if (parseQuantity(value, `${flag} ${key}`) <= 0n) throw new Error(`${flag} "${text}": ${key} must be more than 0`);
    out[key] = value;
  }
  if (!out.cpu || !out.memory) throw new Error(`${flag} "${text}": give both, e.g. cpu=100m,memory=128Mi`);
  return out as DefaultRequests;
}

/** The spec with `defaults` in every container (init containers too) that requests neither cpu nor memory of its own. */
export function withDefaultRequests(spec: PodSpec, defaults: DefaultRequests): PodSpec {
  const fill = (c: Container): Container => {
    const requests = { ...c.resources?.requests };
    const limits = c.resources?.limits ?? {};
    let changed = false;
    for (const r of ["cpu", "memory"] as const) {
      // A limit alone is the request (Kubernetes defaulting), so it stays as it is.
      if (requests[r] === undefined && limits[r] === undefined) {
        requests[r] = defaults[r];
        changed = true;
      }
    }
    return changed ? { ...c, resources: { ...c.resources, requests } } : c;
  };
  return {
    ...spec,
    containers: (spec.containers ?? []).map(fill),
    ...(spec.initContainers ? { initContainers: spec.initContainers.map(fill) } : {}),
  };
}

/** Admitted amounts by consumer and ShadowPod UID. */
export class QuotaLedger {
  private readonly byConsumer = new Map<string, Map<string, Amounts>>();
  private readonly consumerOf = new Map<string, string>();

  set(consumer: string, uid: string, amounts: Amounts): void {
    this.delete(uid);
    let m = this.byConsumer.get(consumer);
    if (!m) this.byConsumer.set(consumer, (m = new Map()));
    m.set(uid, amounts);
    this.consumerOf.set(uid, consumer);
  }

  /** Forgets a ShadowPod; answers its consumer, if it was counted. */
  delete(uid: string): string | undefined {
    const consumer = this.consumerOf.get(uid);
    if (consumer === undefined) return undefined;
    this.consumerOf.delete(uid);
    this.byConsumer.get(consumer)?.delete(uid);
    return consumer;
  }

  /** What the consumer's admitted ShadowPods take, `except` one of them. */
  used(consumer: string, except?: string): Amounts {
    const out = zeroAmounts();
    for (const [uid, a] of this.byConsumer.get(consumer) ?? []) {
      if (uid !== except) addAmounts(out, a);
    }
    return out;
  }
}

/**
 * What `asked` on top of `used` would take past `hard`, one line per resource (empty: it fits).
 * Of cpu, memory, pods and ephemeral-storage, only those the offer states are bounded; a named
 * resource (`nvidia.com/gpu`, `hugepages-2Mi`) the offer does not state is not offered: bounded
 * to nothing. A malformed quantity in the offer bounds that resource to nothing rather than to everything.
 */
export function exceeded(used: Amounts, asked: Amounts, hard: Record<string, string | number>): string[] {
  const out: string[] = [];
  for (const [r, wants] of Object.entries(asked)) {
    const base = isBase(r);
    if (wants === 0n || (base && hard[r] === undefined)) continue;
    let limit: bigint;
    try {
      limit = hard[r] === undefined ? 0n : parseQuantity(hard[r], `offer ${r}`);
    } catch {
      limit = 0n;
    }
    const inUse = used[r] ?? 0n;
    if (inUse + wants > limit) {
      const f = (n: bigint) => formatQuantity(n, unitOf(r));
      out.push(`${r}: asks ${f(wants)} with ${f(inUse)} of ${f(limit)} in use`);
    }
  }
  return out;
}

/** Amounts as the status records them (canonical quantities): the four always, named resources when asked for. */
export function formatAmounts(a: Amounts): Record<string, string> {
  return formatResourceList(Object.fromEntries(Object.entries(a).filter(([r, v]) => v !== 0n || isBase(r))) as Amounts);
}
