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
/**
 * Milli-units by resource name: always the four of every offer, and any named resource (an
 * extended resource such as `nvidia.com/gpu`, or `hugepages-2Mi`) that a node or a pod states.
 */
export type Amounts = Record<OfferedResource, bigint> & { [name: string]: bigint };

/**
 * Named resources offered besides the four: extended resources (a name with a domain, e.g.
 * `example.com/dongle`, `nvidia.com/gpu`; the `kubernetes.io` domains are Kubernetes' own, never
 * extended) and huge pages (`hugepages-<page size>`), which a pod can only get where a node has them.
 */
export function isNamedResource(name: string): boolean {
  if (name.startsWith("hugepages-")) return true;
  const slash = name.indexOf("/");
  if (slash <= 0) return false;
  const domain = name.slice(0, slash);
  return domain !== "kubernetes.io" && !domain.endsWith(".kubernetes.io") && domain !== "requests";
}

/** One of the four every offer states (cpu, memory, pods, ephemeral-storage). */
export const isBase = (name: string): name is OfferedResource =>
  (OFFERED_RESOURCES as readonly string[]).includes(name);

/** A resource the offers count: one of the four, or a named resource. */
export const isOfferedResource = (name: string) => isBase(name) || isNamedResource(name);

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

export const zeroAmounts = (): Amounts => ({ cpu: 0n, memory: 0n, pods: 0n, "ephemeral-storage": 0n });

/** `into` += `add`, resource by resource (named resources `add` has and `into` lacks are added). */
export function addAmounts(into: Amounts, add: Amounts): Amounts {
  for (const [r, v] of Object.entries(add)) into[r] = (into[r] ?? 0n) + v;
  return into;
}

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
  const out = zeroAmounts();
  const key = `pod ${pod.metadata.namespace}/${pod.metadata.name}`;
  const all = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  // The named resources any container states (extended resources are often given as limits only).
  const named = new Set<string>();
  for (const c of all)
    for (const list of [c.resources?.requests, c.resources?.limits])
      for (const r of Object.keys(list ?? {})) if (isNamedResource(r)) named.add(r);
  for (const r of ["cpu", "memory", "ephemeral-storage", ...named]) {
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
  const left = zeroAmounts();
  const byConsumer = new Map<string, Amounts>();
  const offering = new Set<string>();
  for (const n of i.nodes) {
    if (!isOfferingNode(n)) continue;
    offering.add(n.metadata.name!);
    const allocatable = n.status?.allocatable ?? {};
    for (const r of [...OFFERED_RESOURCES, ...Object.keys(allocatable).filter(isNamedResource)])
      left[r] = (left[r] ?? 0n) + read(allocatable, r, `node ${n.metadata.name} allocatable`);
  }
  // A named resource no node has (nodes state hugepages-2Mi: 0 even without huge pages) is not offered.
  for (const r of Object.keys(left)) if (!isBase(r) && left[r]! <= 0n) delete left[r];
  const labels = i.namespaceLabels ?? (() => undefined);
  for (const p of i.pods) {
    if (!isActivePod(p) || !offering.has(p.spec!.nodeName!)) continue;
    const used = podRequests(p);
    // Only what some node offers: a pod's other named resources come from nowhere the offer counts.
    for (const [r, v] of Object.entries(used)) if (left[r] !== undefined) left[r] -= v;
    const consumer = offloadedFor(p, labels);
    if (consumer === undefined) continue;
    let own = byConsumer.get(consumer);
    if (!own) byConsumer.set(consumer, (own = zeroAmounts()));
    addAmounts(own, used);
  }
  return { left, byConsumer };
}

/** Free for one consumer: what is left plus what its own offloaded pods use (never below zero). */
export function freeFor(usage: Usage, consumerClusterId: string): Amounts {
  const own = usage.byConsumer.get(consumerClusterId);
  const free = zeroAmounts();
  for (const r of Object.keys(usage.left)) {
    const v = usage.left[r]! + (own?.[r] ?? 0n);
    free[r] = v < 0n ? 0n : v;
  }
  return free;
}

/** Allocatable of the offering nodes minus what active pods on them request, the consumer's own excepted. */
export function freeResources(i: FreeInput): Amounts {
  return freeFor(summarizeUsage(i), i.consumerClusterId);
}

/**
 * The smallest amount of a resource an offer hands out, in milli-units: a milli-cpu; one byte, one
 * pod, one device; one page of huge pages (`hugepages-2Mi`: 2Mi).
 */
export function grainOf(resource: string): bigint {
  if (unitOf(resource) === "cpu") return 1n;
  if (resource.startsWith("hugepages-")) {
    try {
      const page = parseQuantity(resource.slice("hugepages-".length));
      if (page > 0n) return page;
    } catch {
      // A page size that is not a quantity: whole bytes.
    }
  }
  return 1000n;
}

/** `milli` rounded down to whole units of the resource (see grainOf). */
export const wholeUnits = (resource: string, milli: bigint) => (milli <= 0n ? 0n : milli - (milli % grainOf(resource)));

/** `percentage` % of every free resource, rounded down to whole units: 55.5 pods means 55, 1.5 GPUs 1. */
export function percentShare(free: Amounts, percentage: number): Amounts {
  const out = zeroAmounts();
  for (const [r, v] of Object.entries(free)) out[r] = wholeUnits(r, percentOf(v, percentage));
  return out;
}

/** Amounts in canonical quantities (cores for cpu, binary suffixes for bytes, counts for the rest). */
export function formatResourceList(a: Amounts): Record<string, string> {
  return Object.fromEntries(Object.entries(a).map(([r, v]) => [r, formatQuantity(v, unitOf(r))]));
}

/** The offer's resourceQuota.hard: `percentage` % of the free resources, in canonical quantities. */
export function offeredQuota(free: Amounts, percentage: number): Record<string, string> {
  return formatResourceList(percentShare(free, percentage));
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
