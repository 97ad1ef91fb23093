// What a provider offers a consumer: a share of its FREE physical capacity. Pure functions over
// the nodes and pods the controller caches, so the arithmetic is tested without a cluster.
import { LABEL_ORIGIN } from "../../reflection/abi.ts";
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_SHADOWPOD,
  REMOTE_CLUSTER_ID_LABEL,
  TYPE_LABEL,
  VIRTUAL_NODE_TYPE,
} from "../../apis/labels.ts";
import type { Container, Node, Pod } from "../../kube/types.ts";
import { formatQuantity, parseQuantity, percentOf, unitOf } from "../../kube/quantity.ts";

/** The resources every offer states, as Liqo's (cpu, memory, pods, ephemeral-storage). */
export const OFFERED_RESOURCES = ["cpu", "memory", "pods", "ephemeral-storage"] as const;
export type OfferedResource = (typeof OFFERED_RESOURCES)[number];
export type Amounts = Record<OfferedResource, bigint>;

export const DEFAULT_SHARING_PERCENTAGE = 50;

export class SharingPercentageError extends Error {
  override name = "SharingPercentageError";
}

/** Accepts 0–100 (a number or its text, decimals allowed); anything else is refused with the fix. */
export function parseSharingPercentage(value: unknown): number {
  const n =
    typeof value === "number" ? value : typeof value === "string" && value.trim() !== "" ? Number(value.trim()) : NaN;
  if (!Number.isFinite(n) || n < 0 || n > 100) {
    throw new SharingPercentageError(
      `--sharing-percentage ${JSON.stringify(value)} is not a percentage: give a number from 0 to 100 (default ${DEFAULT_SHARING_PERCENTAGE}), e.g. --sharing-percentage 30`,
    );
  }
  return n;
}

export type { Node, Pod };

const zero = (): Amounts => ({ cpu: 0n, memory: 0n, pods: 0n, "ephemeral-storage": 0n });

/** Nodes that can take the consumer's pods: real (not a virtual node), schedulable and Ready. */
export function isOfferingNode(node: Node): boolean {
  if (node.metadata.labels?.[TYPE_LABEL] === VIRTUAL_NODE_TYPE) return false;
  if (node.spec?.unschedulable) return false;
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

function read(list: Record<string, string | number> | undefined, resource: string, what: string): bigint {
  const v = list?.[resource];
  return v === undefined ? 0n : parseQuantity(v, what);
}

// Informers replace an object on every change, so its identity is a safe memo key.
const requestsOf = new WeakMap<Pod, Amounts>();

/** A pod's requests as the scheduler counts them: max(sum of containers, largest init container) + overhead, and one pod. */
export function podRequests(pod: Pod): Amounts {
  let out = requestsOf.get(pod);
  if (!out) {
    out = computeRequests(pod);
    requestsOf.set(pod, out);
  }
  return out;
}

function computeRequests(pod: Pod): Amounts {
  const out = zero();
  const key = `pod ${pod.metadata.namespace}/${pod.metadata.name}`;
  for (const r of ["cpu", "memory", "ephemeral-storage"] as const) {
    // A container with only a limit has that limit as its request (Kubernetes defaulting).
    const req = (c: Container) => read(c.resources?.requests ?? {}, r, key) || read(c.resources?.limits, r, key);
    const sum = (pod.spec?.containers ?? []).reduce((acc, c) => acc + req(c), 0n);
    const init = (pod.spec?.initContainers ?? []).reduce((acc, c) => (req(c) > acc ? req(c) : acc), 0n);
    out[r] = (sum > init ? sum : init) + read(pod.spec?.overhead, r, key);
  }
  out.pods = 1000n;
  return out;
}

/** Pods that hold node resources: bound and not finished. */
export function isActivePod(pod: Pod): boolean {
  return !!pod.spec?.nodeName && pod.status?.phase !== "Succeeded" && pod.status?.phase !== "Failed";
}

/**
 * The consumer a pod runs for, when it is the provider half of an offloaded pod (made by the
 * ShadowPod controller): the remote-cluster-id label of its twin namespace, which only that
 * consumer's namespaces carry (an admission policy), else the origin label on the pod. The pod's
 * labels are the consumer's to write, so they never move its pods to another consumer's account;
 * the ShadowPod controller's quota counts by the namespace too.
 */
export function offloadedFor(
  pod: Pod,
  namespaceLabels: (ns: string) => Record<string, string> | undefined,
): string | undefined {
  if (pod.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY_SHADOWPOD) return undefined;
  return (
    namespaceLabels(pod.metadata.namespace ?? "")?.[REMOTE_CLUSTER_ID_LABEL] ?? pod.metadata.labels?.[LABEL_ORIGIN]
  );
}

export interface FreeInput {
  nodes: Node[];
  pods: Pod[];
  /** The consumer the offer is for: its own offloaded pods do not shrink its offer. */
  consumerClusterId: string;
  namespaceLabels?: (ns: string) => Record<string, string> | undefined;
}

/** One pass over nodes and pods that serves every consumer's offer: what is left, and what each consumer's offloaded pods use. */
export interface Usage {
  /** Allocatable of the offering nodes minus the requests of every active pod on them (may be negative). */
  left: Amounts;
  /** Requests of the pods offloaded by each consumer, by cluster ID. */
  byConsumer: Map<string, Amounts>;
}

export function summarizeUsage(i: Omit<FreeInput, "consumerClusterId">): Usage {
  const left = zero();
  const byConsumer = new Map<string, Amounts>();
  const offering = new Set<string>();
  for (const n of i.nodes) {
    if (!isOfferingNode(n)) continue;
    offering.add(n.metadata.name!);
    for (const r of OFFERED_RESOURCES) left[r] += read(n.status?.allocatable, r, `node ${n.metadata.name} allocatable`);
  }
  const labels = i.namespaceLabels ?? (() => undefined);
  for (const p of i.pods) {
    if (!isActivePod(p) || !offering.has(p.spec!.nodeName!)) continue;
    const used = podRequests(p);
    for (const r of OFFERED_RESOURCES) left[r] -= used[r];
    const consumer = offloadedFor(p, labels);
    if (consumer === undefined) continue;
    let own = byConsumer.get(consumer);
    if (!own) byConsumer.set(consumer, (own = zero()));
    for (const r of OFFERED_RESOURCES) own[r] += used[r];
  }
  return { left, byConsumer };
}

/** Free for one consumer: what is left plus what its own offloaded pods use (never below zero). */
export function freeFor(usage: Usage, consumerClusterId: string): Amounts {
  const own = usage.byConsumer.get(consumerClusterId);
  const free = zero();
  for (const r of OFFERED_RESOURCES) {
    const v = usage.left[r] + (own?.[r] ?? 0n);
    free[r] = v < 0n ? 0n : v;
  }
  return free;
}

/** Allocatable of the offering nodes minus what active pods on them request, the consumer's own excepted. */
export function freeResources(i: FreeInput): Amounts {
  return freeFor(summarizeUsage(i), i.consumerClusterId);
}

/** The offer's resourceQuota.hard: `percentage` % of the free resources, in canonical quantities. */
export function offeredQuota(free: Amounts, percentage: number): Record<OfferedResource, string> {
  const out = {} as Record<OfferedResource, string>;
  for (const r of OFFERED_RESOURCES) {
    let share = percentOf(free[r], percentage);
    // Whole pods, whole bytes: an offer of 55.5 pods means 55.
    if (unitOf(r) !== "cpu") share -= share % 1000n;
    out[r] = formatQuantity(share, unitOf(r));
  }
  return out;
}

/** Two quota maps are the same offer when every stated resource parses to the same amount. */
export function sameQuota(a: Record<string, string | number> | undefined, b: Record<string, string | number>): boolean {
  if (!a) return false;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    if (a[k] === undefined || b[k] === undefined) return false;
    try {
      if (parseQuantity(a[k]!) !== parseQuantity(b[k]!)) return false;
    } catch {
      return false;
    }
  }
  return true;
}
