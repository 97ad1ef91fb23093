// The VirtualNode controller (consumer side): runs the extra virtual nodes users ask for on the
// virtual kubelet of their peering. Per provider cluster, in one pass: the offer is split between
// the VirtualNodes (node/split.ts) and the peering's own node; each that fits runs with its own
// Node, Lease and health; each deleted one is drained (cordoned, its pods deleted so that their
// controllers reschedule them) before its Node goes and its finalizer is removed. Status says
// what happened in one Ready condition whose reason names the cause (see docs/virtual-nodes.md).
import {
  VIRTUAL_NODE_CR_LABEL,
  VIRTUAL_NODE_FINALIZER,
  VirtualNodeResource,
  type VirtualNodeCr,
  type VirtualNodeSpec,
} from "../../apis/virtualkubelet/virtualnode.ts";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../../kube/errors.ts";
import { createInformer } from "../../kube/informer.ts";
import { keyOf, objectKey, Resources, type KubeObject } from "../../kube/resources.ts";
import { REMOTE_CLUSTER_ID_LABEL } from "../../apis/labels.ts";
import { createWorkQueue } from "../../kube/workqueue.ts";
import { silentLogger, type Logger } from "../../log.ts";
import { createEventRecorder } from "../../kube/events.ts";
import { QuantityError, parseQuantity } from "../../kube/quantity.ts";
import type { NodeResources } from "../../virtualkubelet/node/forge.ts";
import { splitOffer, type NodeAsk } from "../../virtualkubelet/node/split.ts";
import { VirtualNodeError } from "../../virtualkubelet/node/virtual-node.ts";
import type { PeerRuntime } from "./runtime.ts";

type Vn = VirtualNodeCr & KubeObject;
type Ready = { status: "True" | "False" | "Unknown"; reason: string; message: string };

/** How often every provider's VirtualNodes are looked at again (their node's health shows in status). */
const RESYNC_MS = 15_000;
/** Between two looks at a node being drained. */
const DRAIN_POLL_MS = 2000;

export interface VirtualNodeController {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** What the peering's own node keeps of the provider's `offer` once its VirtualNodes have their share. */
  share(clusterId: string, offer: NodeResources): NodeResources;
  /** The peering's virtual kubelet started, stopped or got a new offer: its VirtualNodes follow. */
  kick(clusterId: string): void;
  handle(clusterId: string): Promise<void>;
  idle(): Promise<void>;
}

const capacityText = (r: NodeResources) =>
  Object.entries(r)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");

/** Why a spec cannot run whatever the offer, or undefined. */
function invalidSpec(spec: VirtualNodeSpec | undefined): string | undefined {
  const hard = spec?.resourceQuota?.hard ?? {};
  if (Object.keys(hard).length === 0)
    return "spec.resourceQuota.hard names no resource: give the node its share, e.g. cpu: 2, memory: 4Gi, pods: 20";
  for (const [k, v] of Object.entries(hard)) {
    try {
      if (parseQuantity(v, `spec.resourceQuota.hard.${k}`) < 0n) return `spec.resourceQuota.hard.${k} is negative`;
    } catch (err) {
      if (err instanceof QuantityError) return err.message;
      throw err;
    }
  }
  return undefined;
}

export function createVirtualNodeController(o: {
  client: KubeClient;
  peers: Map<string, PeerRuntime>;
  /**
   * Whether a ForeignCluster of that cluster ID says its outgoing peering is Established: while
   * its virtual kubelet is not running yet (a controller manager that just started), VirtualNodes
   * keep their status instead of flapping to NoPeering; the virtual kubelet's start kicks them.
   */
  established?: (clusterId: string) => boolean;
  logger?: Logger;
  resyncMs?: number;
}): VirtualNodeController {
  const log = (o.logger ?? silentLogger).child({ component: "virtualnodes" });
  const events = createEventRecorder(o.client, "liqo-virtualnode", log);
  const informer = createInformer<Vn>({ client: o.client, resource: VirtualNodeResource, logger: log });
  const queue = createWorkQueue({
    name: "virtualnodes",
    logger: log,
    workers: 1,
    baseDelayMs: 500,
    maxDelayMs: 30_000,
    handler: (id) => reconcile(id),
  });
  const byAge = (a: Vn, b: Vn) =>
    (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") ||
    objectKey(a).localeCompare(objectKey(b));
  const ofCluster = (id: string) =>
    informer
      .list()
      .filter((v) => v.spec?.clusterID === id)
      .sort(byAge);

  /** The VirtualNodes that may take a share (valid, not deleted, first of their name), and the rest's causes. */
  function candidates(id: string, rt: PeerRuntime | undefined) {
    const vk = rt?.vk;
    const running = vk?.extraNodes();
    const asks: (NodeAsk & { vn: Vn })[] = [];
    const refused = new Map<Vn, Ready>();
    const names = new Set<string>();
    for (const vn of ofCluster(id)) {
      if (vn.metadata.deletionTimestamp) continue;
      const name = vn.metadata.name!;
      const bad = invalidSpec(vn.spec);
      if (bad) refused.set(vn, { status: "False", reason: "InvalidSpec", message: bad });
      else if (name === (vk?.nodeName ?? `liqo-${rt?.offerFrom}`))
        refused.set(vn, {
          status: "False",
          reason: "NameTaken",
          message: `${name} is the peering's own virtual node; choose another name`,
        });
      else if (names.has(name))
        refused.set(vn, {
          status: "False",
          reason: "NameTaken",
          message: `an older VirtualNode in another namespace is already called ${name}; choose another name`,
        });
      else {
        names.add(name);
        // Running: in this process, or before a restart (its status says it ran); never refused, only capped.
        const ran = ["NodeReady", "NodeNotReady"].includes(
          vn.status?.conditions?.find((c) => c.type === "Ready")?.reason ?? "",
        );
        asks.push({
          name,
          asks: { ...(vn.spec.resourceQuota.hard as NodeResources) },
          running: !!running?.has(name) || ran,
          vn,
        });
      }
    }
    return { asks, refused };
  }

  async function setStatus(vn: Vn, ready: Ready, resources?: NodeResources) {
    const was = vn.status?.conditions?.find((c) => c.type === "Ready");
    const same =
      was?.status === ready.status &&
      was.reason === ready.reason &&
      was.message === ready.message &&
      JSON.stringify(vn.status?.resources ?? null) === JSON.stringify(resources ?? null);
    if (same) return;
    const condition = {
      type: "Ready" as const,
      ...ready,
      lastTransitionTime:
        was?.status === ready.status && was.lastTransitionTime
          ? was.lastTransitionTime
          : new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    };
    await o.client
      .mergePatch(
        VirtualNodeResource,
        vn.metadata.name!,
        vn.metadata.namespace,
        { status: { conditions: [condition], resources: resources ?? null } },
        "status",
      )
      .catch((err) => {
        if (!(err instanceof KubeApiError && err.notFound)) throw err;
      });
    if (ready.status === "False" && was?.reason !== ready.reason && ready.reason !== "Draining")
      events.warning(vn, ready.reason, ready.message);
  }

  async function setFinalizer(vn: Vn, present: boolean) {
    const finalizers = vn.metadata.finalizers ?? [];
    if (finalizers.includes(VIRTUAL_NODE_FINALIZER) === present) return;
    await o.client.mergePatch(VirtualNodeResource, vn.metadata.name!, vn.metadata.namespace, {
      metadata: {
        resourceVersion: vn.metadata.resourceVersion,
        finalizers: present
          ? [...finalizers, VIRTUAL_NODE_FINALIZER]
          : finalizers.filter((f) => f !== VIRTUAL_NODE_FINALIZER),
      },
    });
  }

  /** Per virtual kubelet: Nodes of VirtualNodes it found at its start and has not adopted or removed yet. */
  const listedAtStart = new WeakMap<object, Set<string>>();

  async function reconcile(id: string): Promise<void> {
    const rt = o.peers.get(id);
    const vk = rt?.vk;
    let draining = false;
    const all = ofCluster(id);
    // Deleted ones first: their share goes back to the others.
    for (const vn of all) {
      if (!vn.metadata.deletionTimestamp) {
        await setFinalizer(vn, true);
        continue;
      }
      const name = vn.metadata.name!;
      const ours =
        vk?.extraNodes().has(name) &&
        !all.some((v) => v !== vn && v.metadata.name === name && !v.metadata.deletionTimestamp);
      if (vk && ours) {
        const left = await vk.drainNode(name);
        if (left > 0) {
          draining = true;
          await setStatus(vn, {
            status: "False",
            reason: "Draining",
            message: `node ${name} is cordoned; waiting for ${left} pod(s) bound to it to be deleted (their controllers reschedule them on other nodes)`,
          });
          continue;
        }
        await vk.removeNode(name);
      }
      await setFinalizer(vn, false);
      log.info("virtual node deleted", { virtualNode: keyOf(vn.metadata.namespace, name), node: name });
    }
    const { asks, refused } = candidates(id, rt);
    if ((!vk || !rt?.offer) && o.established?.(id)) return;
    if (!vk || !rt?.offer) {
      for (const a of asks)
        refused.set(a.vn, {
          status: "False",
          reason: "NoPeering",
          message: `there is no established outgoing peering with cluster ${id}: peer with it first (liqoctl peer), then this node starts`,
        });
      for (const [vn, r] of refused) await setStatus(vn, r);
      return;
    }
    const split = splitOffer(rt.offer, asks, `the offer of ${rt.offerFrom ?? id}`);
    const wanted = new Set<string>();
    for (const a of asks) {
      const why = split.refused.get(a.name);
      if (why) {
        refused.set(a.vn, { status: "False", reason: "OfferExceeded", message: `${a.name} ${why}` });
        continue;
      }
      const given = split.given.get(a.name)!;
      wanted.add(a.name);
      try {
        await vk.putNode({
          name: a.name,
          resources: given,
          labels: { ...a.vn.spec.labels, [VIRTUAL_NODE_CR_LABEL]: "true" },
          taints: a.vn.spec.taints,
          patch: a.vn.spec.offloadingPatch,
        });
      } catch (err) {
        if (!(err instanceof VirtualNodeError)) throw err;
        wanted.delete(a.name);
        refused.set(a.vn, { status: "False", reason: "NameTaken", message: err.message });
        continue;
      }
      const node = vk.extraNodes().get(a.name)!.status();
      const capped = capacityText(given) !== capacityText(a.asks);
      await setStatus(
        a.vn,
        node.ready
          ? {
              status: "True",
              reason: "NodeReady",
              message: `node ${a.name} is Ready with ${capacityText(given)} of ${rt.offerFrom ?? id}'s offer${capped ? ` (asked ${capacityText(a.asks)}; the offer shrank)` : ""}`,
            }
          : {
              status: "False",
              reason: "NodeNotReady",
              message: `node ${a.name} is not Ready: ${node.error ?? node.lastProbeError ?? "waiting for the first health probe of the provider"}`,
            },
        given,
      );
    }
    for (const [vn, r] of refused) await setStatus(vn, r);
    // A node whose VirtualNode vanished without its finalizer (removed by hand, maybe while this
    // process was down) is drained and goes too. The Nodes are listed once per virtual kubelet: later
    // ones are all made by it, so its extra nodes name them.
    let found = listedAtStart.get(vk);
    if (!found) {
      const nodes = await o.client.list(Resources.nodes, {
        labelSelector: `${REMOTE_CLUSTER_ID_LABEL}=${id},${VIRTUAL_NODE_CR_LABEL}=true`,
      });
      found = new Set(nodes.items.map((n) => n.metadata.name!));
      listedAtStart.set(vk, found);
    }
    for (const name of new Set([...vk.extraNodes().keys(), ...found])) {
      if (name === vk.nodeName || wanted.has(name) || all.some((v) => v.metadata.name === name)) {
        found.delete(name);
        continue;
      }
      if ((await vk.drainNode(name)) > 0) draining = true;
      else {
        await vk.removeNode(name);
        found.delete(name);
      }
    }
    const rest = JSON.stringify(Object.entries(split.rest).sort());
    if (rt.resources !== rest) {
      await vk.updateResources(split.rest);
      rt.resources = rest;
      log.info("the peering's own node keeps the rest of the offer", { node: vk.nodeName, resources: split.rest });
    }
    if (draining) throw new RetryAfterError(DRAIN_POLL_MS, "virtual nodes draining");
  }

  let resync: ReturnType<typeof setInterval> | undefined;
  const enqueue = (vn: Vn) => vn.spec?.clusterID && queue.add(vn.spec.clusterID);
  informer.on({
    add: enqueue,
    update: (a, b) => {
      enqueue(b);
      if (a.spec?.clusterID !== b.spec?.clusterID) enqueue(a);
    },
    delete: enqueue,
  });
  const everyone = () => {
    for (const id of new Set([...informer.list().map((v) => v.spec?.clusterID), ...o.peers.keys()]))
      if (id) queue.add(id);
  };
  return {
    async start() {
      informer.start();
      await informer.waitForSync();
      queue.start();
      everyone();
      resync = setInterval(everyone, o.resyncMs ?? RESYNC_MS);
    },
    async stop() {
      clearInterval(resync);
      await queue.shutdown();
      await informer.stop();
    },
    share(id, offer) {
      const { asks } = candidates(id, o.peers.get(id));
      try {
        return splitOffer(offer, asks).rest;
      } catch {
        return offer;
      }
    },
    kick: (id) => queue.add(id),
    handle: reconcile,
    idle: () => queue.idle(),
  };
}
