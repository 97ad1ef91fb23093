// What liqoctl create/delete virtualnode and liqoctl status share about VirtualNodes: the flags'
// parsing and checks (pure, refused before any cluster is contacted), finding the peering and the
// VirtualNode, the manifest, and waiting for the controller manager's verdict (Ready) or the drain.
import {
  ForeignClusterResource,
  REMOTE_CLUSTER_ID_LABEL,
  VIRTUAL_NODE_FINALIZER,
  VirtualNodeResource,
  type VirtualNodeCr,
  type VirtualNodeTaint,
} from "../core/apis/index.ts";
import type { KubeClient } from "../core/kube/client.ts";
import { KubeApiError } from "../core/kube/errors.ts";
import { keyOf, type KubeObject } from "../core/kube/resources.ts";
import type { ForeignClusterObject } from "../core/peering/foreigncluster/index.ts";
import { labelProblem } from "../core/peering/identity.ts";
import { parseQuantity } from "../core/kube/quantity.ts";
import { CliError, ExitCode } from "./errors.ts";
import { spinner, warn } from "./ui.ts";

export type VirtualNodeObject = VirtualNodeCr & KubeObject;
export type VirtualNodeCondition = NonNullable<NonNullable<VirtualNodeCr["status"]>["conditions"]>[number];

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"] as const;

/** The Node's name is the VirtualNode's: a DNS-1123 subdomain. */
export function checkVirtualNodeName(name: string): void {
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name))
    throw new CliError(
      `virtual node name "${name}" must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), e.g. milan-gpu`,
    );
}

export function checkNamespaceName(namespace: string): void {
  if (namespace.length > 63 || !DNS_LABEL.test(namespace))
    throw new CliError(
      `--namespace "${namespace}" is not a namespace name (a DNS-1123 label: lowercase letters, digits and '-')`,
    );
}

/** Comma-separated items, blanks dropped. */
const items = (text: string | undefined) =>
  (text ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/** `k=v,k2=v2` with Kubernetes' label rules (node labels, the remote node selector). */
export function parseLabelPairs(text: string | undefined, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of items(text)) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new CliError(`--${flag}: "${pair}" is not key=value, e.g. example.com/zone=a`);
    const key = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    const problem = labelProblem(key, value);
    if (problem) throw new CliError(`--${flag}: ${problem}`);
    if (key in out && out[key] !== value)
      throw new CliError(`--${flag}: "${key}" is given twice with different values`);
    out[key] = value;
  }
  return out;
}

/** `key=value:Effect` or `key:Effect`, as kubectl taint writes them. */
export function parseTaints(text: string | undefined): VirtualNodeTaint[] {
  const out: VirtualNodeTaint[] = [];
  for (const item of items(text)) {
    const colon = item.lastIndexOf(":");
    if (colon <= 0)
      throw new CliError(`--taints: "${item}" is not key=value:Effect or key:Effect, e.g. accelerator=gpu:NoSchedule`);
    const effect = item.slice(colon + 1);
    const kv = item.slice(0, colon);
    const eq = kv.indexOf("=");
    const key = eq >= 0 ? kv.slice(0, eq) : kv;
    const value = eq >= 0 ? kv.slice(eq + 1) : undefined;
    if (!(TAINT_EFFECTS as readonly string[]).includes(effect))
      throw new CliError(`--taints: "${item}": the effect "${effect}" must be one of ${TAINT_EFFECTS.join(", ")}`);
    const problem = labelProblem(key, value ?? "");
    if (problem) throw new CliError(`--taints: "${item}": ${problem.replace(/^label /, "taint ")}`);
    if (out.some((t) => t.key === key && t.effect === effect))
      throw new CliError(
        `--taints: "${key}" with effect ${effect} is given twice (a node holds one per key and effect)`,
      );
    out.push(
      value === undefined
        ? { key, effect: effect as VirtualNodeTaint["effect"] }
        : { key, value, effect: effect as VirtualNodeTaint["effect"] },
    );
  }
  return out;
}

function checkQuantity(flag: string, resource: string, value: string): void {
  let milli: bigint;
  try {
    milli = parseQuantity(value, resource);
  } catch {
    throw new CliError(`${flag}: "${value}" is not a quantity; use e.g. 2, 500m (cpu), 4Gi (memory), 110 (pods)`);
  }
  if (milli <= 0n) throw new CliError(`${flag}: ${resource} must be more than zero (leave it out to ask for none)`);
}

export interface ResourceFlags {
  cpu?: string;
  memory?: string;
  pods?: string;
  resource?: string;
}

/** The node's share of the offer (spec.resourceQuota.hard): at least one resource, each a positive quantity. */
export function parseResources(f: ResourceFlags): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ["cpu", "memory", "pods"] as const) {
    const value = f[name]?.trim();
    if (value === undefined) continue;
    if (name === "pods" && !/^\d+$/.test(value))
      throw new CliError(`--pods: "${value}" must be a whole number of pods, e.g. 20`);
    checkQuantity(`--${name}`, name, value);
    out[name] = value;
  }
  for (const pair of items(f.resource)) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new CliError(`--resource: "${pair}" is not name=quantity, e.g. nvidia.com/gpu=1`);
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    if (labelProblem(name, ""))
      throw new CliError(`--resource: "${name}" is not a resource name such as ephemeral-storage or nvidia.com/gpu`);
    if (name in out)
      throw new CliError(
        `--resource: ${name} is given twice${["cpu", "memory", "pods"].includes(name) ? ` (also by --${name})` : ""}`,
      );
    checkQuantity(`--resource ${name}`, name, value);
    out[name] = value;
  }
  if (!Object.keys(out).length)
    throw new CliError(
      "a virtual node needs a share of the provider's offer: pass at least one of --cpu, --memory, --pods or --resource",
    );
  return out;
}

export interface VirtualNodeRequest {
  name: string;
  namespace: string;
  clusterID: string;
  resources: Record<string, string>;
  labels: Record<string, string>;
  taints: VirtualNodeTaint[];
  nodeSelector: Record<string, string>;
}

/** The object liqoctl create virtualnode writes; empty optional parts are left out. */
export function virtualNodeManifest(r: VirtualNodeRequest): VirtualNodeObject {
  return {
    apiVersion: "virtualkubelet.liqo.io/v1alpha1",
    kind: "VirtualNode",
    metadata: { name: r.name, namespace: r.namespace, labels: { [REMOTE_CLUSTER_ID_LABEL]: r.clusterID } },
    spec: {
      clusterID: r.clusterID,
      resourceQuota: { hard: r.resources },
      ...(Object.keys(r.labels).length ? { labels: r.labels } : {}),
      ...(r.taints.length ? { taints: r.taints } : {}),
      ...(Object.keys(r.nodeSelector).length ? { offloadingPatch: { nodeSelector: r.nodeSelector } } : {}),
    },
  } as VirtualNodeObject;
}

/** cpu=2, memory=4Gi, pods=20 */
export function formatResources(list: Record<string, string | number> | undefined): string {
  const entries = Object.entries(list ?? {});
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(", ") : "-";
}

export const clusterNameOf = (fc: ForeignClusterObject) => fc.spec.clusterIdentity?.clusterName ?? fc.metadata.name!;
export const peeringNodeName = (fc: ForeignClusterObject) => `liqo-${clusterNameOf(fc)}`;

/** The peering a VirtualNode is for, by ForeignCluster name or cluster ID. */
export function pickPeering(fcs: ForeignClusterObject[], by: { name?: string; id?: string }): ForeignClusterObject {
  const fc = by.name
    ? fcs.find((f) => f.metadata.name === by.name)
    : fcs.find((f) => f.spec.clusterIdentity?.clusterID === by.id);
  if (fc) return fc;
  const known = fcs.map((f) => `${f.metadata.name} (${f.spec.clusterIdentity?.clusterID ?? "no ID"})`).join(", ");
  throw new CliError(
    `${by.name ? `ForeignCluster ${by.name}` : `no ForeignCluster has cluster ID ${by.id}; it`} does not exist: ${known ? `the peerings here are ${known}` : "this cluster has no peering"}; peer first (liqoctl peer out-of-band ...)`,
    ExitCode.Failure,
  );
}

/** Why a VirtualNode cannot be made for this peering, or undefined: it needs an established outgoing peering. */
export function outgoingProblem(fc: ForeignClusterObject): string | undefined {
  const name = fc.metadata.name!;
  if (fc.metadata.deletionTimestamp)
    return `ForeignCluster ${name} is being deleted (unpeering); a virtual node needs an established outgoing peering`;
  const cond = (t: string) => fc.status?.peeringConditions?.find((c) => c.type === t);
  const outgoing = cond("OutgoingPeering");
  if (outgoing?.status === "Established") return undefined;
  if (cond("IncomingPeering")?.status === "Established" && (!outgoing || outgoing.status === "None"))
    return `the peering with ${name} is incoming only (${name} uses this cluster's resources); a virtual node needs an outgoing peering, where ${name} offers resources: liqoctl peer ${name}`;
  return `the outgoing peering with ${name} is ${outgoing?.status ?? "None"}${outgoing?.message ? ` (${outgoing.message})` : ""}, not Established; ${fc.spec.outgoingPeeringEnabled === "No" || !outgoing || outgoing.status === "None" ? `peer first (liqoctl peer ${name})` : "wait for it (liqoctl status)"}`;
}

export function readyCondition(vn: VirtualNodeObject | undefined): VirtualNodeCondition | undefined {
  return vn?.status?.conditions?.find((c) => c.type === "Ready");
}

/** Ready=False reasons that do not go away by themselves: waiting on is pointless. */
export const REFUSALS: Record<string, string> = {
  OfferExceeded: "ask for less, or free some of the offer (liqoctl status lists the peering's virtual nodes)",
  NameTaken: "pick another name",
  NoPeering: "check the peering with liqoctl status",
  InvalidSpec: "fix the spec (kubectl edit virtualnode), or delete it and create it again",
};

export type Verdict = { state: "ready" } | { state: "refused"; fix: string } | { state: "waiting" };

export function verdict(vn: VirtualNodeObject): Verdict {
  const c = readyCondition(vn);
  if (c?.status === "True") return { state: "ready" };
  const fix = c?.status === "False" && c.reason && Object.hasOwn(REFUSALS, c.reason) ? REFUSALS[c.reason] : undefined;
  return fix ? { state: "refused", fix } : { state: "waiting" };
}

const describeCondition = (c: VirtualNodeCondition | undefined) =>
  c ? `Ready is ${c.status} (${c.reason ?? "no reason"})${c.message ? `: ${c.message}` : ""}` : undefined;

const noController = (liqoNamespace: string) =>
  `the controller manager has not reported on it: is liqo controller-manager running (kubectl -n ${liqoNamespace} get pods)?`;

export interface WaitOptions {
  timeoutMs: number;
  liqoNamespace: string;
  /** How long without any condition before liqoctl says no controller seems to run (default 20s). */
  hintAfterMs?: number;
  pollMs?: number;
  /**
   * Why the peering cannot carry the node now, or undefined. NoPeering ends the wait only when this
   * agrees: a controller manager that is starting says NoPeering until it has the peering's offer.
   */
  peeringProblem?: () => Promise<string | undefined>;
}

const deleteHint = (vn: { name: string; namespace: string }) =>
  `the VirtualNode is left in place: delete it with liqoctl delete virtualnode ${vn.name} --namespace ${vn.namespace}`;

/** Waits for Ready=True; fails at once on a refusal (REFUSALS) and names the last condition at the timeout. */
export async function waitReady(
  client: KubeClient,
  created: VirtualNodeObject,
  o: WaitOptions,
): Promise<VirtualNodeObject> {
  const name = created.metadata.name!;
  const namespace = created.metadata.namespace!;
  const key = keyOf(namespace, name);
  const begun = Date.now();
  const spin = spinner(`Waiting for virtual node ${name} to be ready`);
  let hinted = false;
  while (true) {
    const vn = await client.find<VirtualNodeObject>(VirtualNodeResource, name, namespace);
    if (!vn || vn.metadata.uid !== created.metadata.uid) {
      spin.fail(`VirtualNode ${key} disappeared`);
      throw new CliError(`VirtualNode ${key} was deleted while waiting for it to be ready`, ExitCode.Failure);
    }
    const c = readyCondition(vn);
    const v = verdict(vn);
    if (v.state === "ready") {
      spin.succeed(
        `Virtual node ${name} is Ready (${formatResources(vn.status?.resources ?? vn.spec.resourceQuota.hard)})`,
      );
      return vn;
    }
    if (v.state === "refused" && !(c!.reason === "NoPeering" && o.peeringProblem && !(await o.peeringProblem()))) {
      spin.fail(`Virtual node ${name} refused: ${c!.reason}`);
      throw new CliError(
        `virtual node ${name} was refused (${c!.reason}): ${c!.message ?? "no message"}; ${v.fix}. ${deleteHint({ name, namespace })}`,
        ExitCode.Failure,
      );
    }
    if (c)
      spin.update(
        `Waiting for virtual node ${name} to be ready (${c.reason ?? c.status}${c.message ? `: ${c.message}` : ""})`,
      );
    if (!c && !hinted && Date.now() - begun >= (o.hintAfterMs ?? 20_000)) {
      hinted = true;
      warn(
        `VirtualNode ${key} has no status after ${Math.round((Date.now() - begun) / 1000)}s: ${noController(o.liqoNamespace)}`,
      );
    }
    if (Date.now() - begun > o.timeoutMs) {
      spin.fail(`Waiting for virtual node ${name}: timed out`);
      throw new CliError(
        `virtual node ${name} is not ready after ${Math.round(o.timeoutMs / 1000)}s: ${describeCondition(c) ?? noController(o.liqoNamespace)}. ${deleteHint({ name, namespace })}`,
        ExitCode.Failure,
      );
    }
    await Bun.sleep(o.pollMs ?? 500);
  }
}

/** Waits until the VirtualNode of that UID is gone, showing the drain's progress (the Draining message). */
export async function waitDrained(client: KubeClient, deleted: VirtualNodeObject, o: WaitOptions): Promise<void> {
  const name = deleted.metadata.name!;
  const namespace = deleted.metadata.namespace!;
  const begun = Date.now();
  const spin = spinner(`Draining virtual node ${name}`);
  while (true) {
    const vn = await client.find<VirtualNodeObject>(VirtualNodeResource, name, namespace);
    if (!vn || vn.metadata.uid !== deleted.metadata.uid) {
      spin.succeed(`Virtual node ${name} drained and deleted`);
      return;
    }
    const c = readyCondition(vn);
    if (c?.reason === "Draining" && c.message) spin.update(`Draining virtual node ${name} (${c.message})`);
    if (Date.now() - begun > o.timeoutMs) {
      spin.fail(`Draining virtual node ${name}: timed out`);
      const held = vn.metadata.finalizers?.includes(VIRTUAL_NODE_FINALIZER);
      throw new CliError(
        `VirtualNode ${namespace}/${name} is still there after ${Math.round(o.timeoutMs / 1000)}s: ${describeCondition(c) ?? "no status"}${held ? `; its finalizer ${VIRTUAL_NODE_FINALIZER} goes once the node is drained (is liqo controller-manager running? kubectl -n ${o.liqoNamespace} get pods)` : ""}. It stays marked for deletion; run this again to keep waiting`,
        ExitCode.Failure,
      );
    }
    await Bun.sleep(o.pollMs ?? 500);
  }
}

/** Every VirtualNode in the cluster; a cluster without the CRD is named as such. */
export async function listVirtualNodes(client: KubeClient, namespace?: string): Promise<VirtualNodeObject[]> {
  try {
    return (await client.list<VirtualNodeObject>(VirtualNodeResource, { namespace })).items;
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404)
      throw new CliError(
        "this cluster has no VirtualNode CRD (virtualnodes.virtualkubelet.liqo.io): install or upgrade liqo (liqoctl install) to a version with virtual nodes",
        ExitCode.Failure,
      );
    throw err;
  }
}

/** The one VirtualNode NAME names, narrowed by namespace and/or peering; none or several is an error saying what to pass. */
export function pickVirtualNode(
  all: VirtualNodeObject[],
  name: string,
  fcs: ForeignClusterObject[],
  by: { namespace?: string; clusterID?: string; peering?: string },
): VirtualNodeObject {
  const peeringOf = (vn: VirtualNodeObject) =>
    fcs.find((f) => f.spec.clusterIdentity?.clusterID === vn.spec.clusterID)?.metadata.name ?? vn.spec.clusterID;
  const found = all.filter(
    (vn) =>
      vn.metadata.name === name &&
      (by.namespace === undefined || vn.metadata.namespace === by.namespace) &&
      (by.clusterID === undefined || vn.spec.clusterID === by.clusterID),
  );
  const where = [
    by.namespace ? `in namespace ${by.namespace}` : "in any namespace",
    by.peering ? `for the peering with ${by.peering}` : "",
  ]
    .filter(Boolean)
    .join(" ");
  if (!found.length)
    throw new CliError(
      `VirtualNode ${name} does not exist ${where}; liqoctl status lists the virtual nodes of each peering`,
      ExitCode.Failure,
    );
  if (found.length > 1)
    throw new CliError(
      `${found.length} VirtualNodes are named ${name}: ${found.map((vn) => `${vn.metadata.namespace}/${name} (peering ${peeringOf(vn)})`).join(", ")}; pass --namespace to pick one`,
      ExitCode.Failure,
    );
  return found[0]!;
}

/** ForeignClusters, for commands that need them all. */
export async function listForeignClusters(client: KubeClient): Promise<ForeignClusterObject[]> {
  return (await client.list<ForeignClusterObject>(ForeignClusterResource)).items;
}
