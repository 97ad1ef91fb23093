// The provisioner of the virtual storage class (provisioner liqo.io/storage), on the consumer.
// A claim of the class waits until the scheduler places its first pod (WaitForFirstConsumer) and
// names the node; then:
// - a physical node: a twin claim in the storage namespace with the real class (none: the
//   cluster's default) on the same node; once the real volume is bound, a virtual PV mirroring it
//   binds the claim (same source, same node affinity: later pods go where the data is);
// - a virtual node offering storage: a virtual PV pinned to that provider binds the claim at once;
//   the virtual kubelet's storage reflector sends the claim to the provider with the negotiated
//   class, where the offloaded pod makes the provider's class provision the real volume;
// - a virtual node without storage: an Event, and the node is un-selected so the scheduler
//   tries again (as Liqo does).
// A virtual PV released by its claim takes its twin claim with it (the real volume follows the
// real class's reclaim policy); the provider's copy goes with the claim (reflection).
import { STORAGE_PROVISIONER, VIRTUAL_PVC_NAME_LABEL, VIRTUAL_PVC_NAMESPACE_LABEL } from "../apis/labels.ts";
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError, RetryAfterError } from "../kube/errors.ts";
import { createInformer, type Informer } from "../kube/informer.ts";
import { keyOf, objectKey, Resources, type KubeObject, type ResourceRef } from "../kube/resources.ts";
import type { Node } from "../kube/types.ts";
import { withoutManagedFields } from "../kube/slim.ts";
import { createWorkQueue, type WorkQueue } from "../kube/workqueue.ts";
import { silentLogger, type Logger } from "../log.ts";
import { createEventRecorder } from "../kube/events.ts";
import {
  backingOf,
  isReleasedVirtual,
  isVirtualNode,
  localResize,
  localVirtualVolume,
  offersStorage,
  remoteVirtualVolume,
  SELECTED_NODE,
  twinClaim,
  twinClaimName,
  virtualVolumeName,
  waitingNode,
  type Claim,
  type NodeInfo,
  type Volume,
} from "./forge.ts";

export const StorageClassResource: ResourceRef = {
  group: "storage.k8s.io",
  version: "v1",
  kind: "StorageClass",
  plural: "storageclasses",
  namespaced: false,
};

export interface StorageOptions {
  client: KubeClient;
  /** The virtual class (`liqo`). */
  virtualStorageClass: string;
  /** The class twin claims use; empty: the cluster's default. */
  realStorageClass: string;
  /** Where twin claims live (`liqo-storage`). */
  storageNamespace: string;
  logger?: Logger;
}

export interface StorageController {
  handle(key: string): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly synced: boolean;
}

export function createStorageController(o: StorageOptions): StorageController {
  const { client } = o;
  const log = (o.logger ?? silentLogger).child({ controller: "storage" });
  const events = createEventRecorder(client, "liqo-storage", log);
  const claims: Informer<Claim> = createInformer({
    client,
    resource: Resources.persistentVolumeClaims,
    logger: log,
    transform: withoutManagedFields,
    resyncMs: 30_000,
  });
  const volumes: Informer<Volume> = createInformer({
    client,
    resource: Resources.persistentVolumes,
    logger: log,
    transform: withoutManagedFields,
    resyncMs: 30_000,
  });
  const nodes: Informer<Node> = createInformer({
    client,
    resource: Resources.nodes,
    logger: log,
    transform: (n) => ({
      apiVersion: n.apiVersion,
      kind: n.kind,
      metadata: { name: n.metadata.name, uid: n.metadata.uid, labels: n.metadata.labels },
    }),
  });
  let queue: WorkQueue | undefined;
  const claimRef = (c: Claim) => ({ ...c, apiVersion: "v1", kind: "PersistentVolumeClaim" });

  async function ensureNamespace() {
    if (await client.find(Resources.namespaces, o.storageNamespace)) return;
    await client
      .create(Resources.namespaces, { apiVersion: "v1", kind: "Namespace", metadata: { name: o.storageNamespace } })
      .catch((err) => {
        if (!(err instanceof KubeApiError && err.status === 409)) throw err;
      });
  }

  async function createIgnoringConflict(res: ResourceRef, obj: KubeObject) {
    try {
      await client.create(res, obj);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) throw err;
    }
  }

  /** Warnings of the twin claim (a real class that cannot provision or expand it) shown on the user's claim. */
  async function relayTwinWarnings(claim: Claim, twin: Claim, resizingTo?: string) {
    const list = await client.list<KubeObject & { type?: string; reason?: string; message?: string }>(
      Resources.events,
      {
        namespace: o.storageNamespace,
        fieldSelector: `involvedObject.uid=${twin.metadata.uid}`,
      },
    );
    const real = `the real volume (class ${twin.spec?.storageClassName ?? "default"}, claim ${o.storageNamespace}/${twin.metadata.name})`;
    for (const e of list.items) {
      if (e.type !== "Warning") continue;
      if (!resizingTo)
        events.warning(
          claimRef(claim),
          e.reason ?? "ProvisioningFailed",
          `${real} cannot be provisioned: ${e.message}`,
        );
      else if (/resize|expan/i.test(`${e.reason} ${e.message}`))
        events.warning(
          claimRef(claim),
          e.reason ?? "VolumeResizeFailed",
          `${real} cannot be expanded to ${resizingTo}: ${e.message}; the claim keeps its size (${claim.status?.capacity?.storage}) and its data: lower its request to a size that fits (Kubernetes accepts any size above ${claim.status?.capacity?.storage})`,
        );
    }
  }

  /**
   * A bound claim whose request changed: the twin claim's request follows it, the real class's
   * resizer grows the real volume, then the virtual PV's capacity and the claim's status follow the
   * twin's capacity, as an external resizer would. A refusal is an Event on the claim; its size and
   * data stay.
   */
  async function resizeLocal(claim: Claim, pv: Volume, twinName: string, key: string) {
    const twin = claims.get(keyOf(o.storageNamespace, twinName));
    if (!twin) return;
    let step = localResize(claim, twin, pv);
    if (step?.step === "request") {
      try {
        await client.mergePatch(Resources.persistentVolumeClaims, twinName, o.storageNamespace, {
          spec: { resources: { requests: { storage: step.size } } },
        });
      } catch (err) {
        if (!(err instanceof KubeApiError && (err.status === 403 || err.status === 422))) throw err;
        const cls = twin.spec?.storageClassName ?? "default";
        events.warning(
          claimRef(claim),
          "VolumeResizeFailed",
          `cannot expand ${key} to ${step.size}: the real claim ${o.storageNamespace}/${twinName} (class ${cls}) refused it: ${err.message}. ` +
            `If StorageClass ${cls} does not allow expansion, set allowVolumeExpansion: true on it. The claim keeps its size (${claim.status?.capacity?.storage}) and data meanwhile`,
        );
        return;
      }
      log.info("real claim's request raised", { key, twin: keyOf(o.storageNamespace, twinName), size: step.size });
      return;
    }
    if (step?.step === "waiting") return relayTwinWarnings(claim, twin, step.size);
    if (step?.step === "volume") {
      const grown = await client.mergePatch<Volume>(Resources.persistentVolumes, pv.metadata.name!, undefined, {
        spec: { capacity: { storage: step.size } },
      });
      step = localResize(claim, twin, grown);
    }
    if (step?.step === "claim") {
      await client.mergePatch(
        Resources.persistentVolumeClaims,
        claim.metadata.name!,
        claim.metadata.namespace,
        { status: { capacity: { storage: step.size } } },
        "status",
      );
      events.normal(
        claimRef(claim),
        "VolumeResizeSuccessful",
        `expanded to ${step.size}: the real claim ${o.storageNamespace}/${twinName} and volume ${pv.metadata.name}`,
      );
      log.info("claim expanded", { key, size: step.size });
    }
  }

  async function provisionLocal(claim: Claim, node: string, key: string) {
    await ensureNamespace();
    const name = twinClaimName(claim);
    let twin = await client.find<Claim>(Resources.persistentVolumeClaims, name, o.storageNamespace);
    if (!twin) {
      try {
        twin = await client.create<Claim>(
          Resources.persistentVolumeClaims,
          twinClaim(claim, node, o.storageNamespace, o.realStorageClass),
        );
      } catch (err) {
        if (err instanceof KubeApiError && (err.status === 422 || err.status === 400 || err.status === 403)) {
          events.warning(
            claimRef(claim),
            "ProvisioningFailed",
            `cannot create the real claim for ${key} in ${o.storageNamespace}: ${err.message}`,
          );
          return;
        }
        throw err;
      }
      events.normal(
        claimRef(claim),
        "Provisioning",
        `real claim ${o.storageNamespace}/${name} created on node ${node} (class ${o.realStorageClass || "the cluster default"})`,
      );
    }
    if (twin.status?.phase !== "Bound" || !twin.spec?.volumeName) {
      await relayTwinWarnings(claim, twin);
      throw new RetryAfterError(2_000, `waiting for the real claim ${o.storageNamespace}/${name} to be bound`);
    }
    const real = await client.find<Volume>(Resources.persistentVolumes, twin.spec.volumeName);
    if (!real) throw new RetryAfterError(2_000, `waiting for the real volume ${twin.spec.volumeName}`);
    await createIgnoringConflict(Resources.persistentVolumes, localVirtualVolume(claim, real, name));
    events.normal(
      claimRef(claim),
      "ProvisioningSucceeded",
      `bound to volume ${virtualVolumeName(claim)}, backed by ${real.metadata.name} on node ${node}`,
    );
    log.info("claim provisioned on a physical node", { key, node, real: real.metadata.name });
  }

  /** A twin claim whose user's claim is gone before any volume bound it (else the PV's release removes it). */
  async function handleTwin(key: string) {
    const twin = claims.get(key);
    if (!twin) return;
    const ns = twin.metadata.labels?.[VIRTUAL_PVC_NAMESPACE_LABEL];
    const name = twin.metadata.labels?.[VIRTUAL_PVC_NAME_LABEL];
    if (!ns || !name) return; // not ours
    const owner = claims.get(keyOf(ns, name));
    if (owner?.metadata.uid === twin.metadata.name || volumes.get(`pvc-${twin.metadata.name}`)) return;
    await client.delete(Resources.persistentVolumeClaims, twin.metadata.name!, o.storageNamespace, {
      uid: twin.metadata.uid,
    });
    log.info("real claim deleted: its claim is gone", { twin: key, claim: keyOf(ns, name) });
  }

  async function handleClaim(key: string) {
    if (key.startsWith(`${o.storageNamespace}/`)) return handleTwin(key);
    const claim = claims.get(key);
    if (!claim) return;
    const bound = claim.spec?.volumeName ? volumes.get(claim.spec.volumeName) : undefined;
    const backing = bound && claim.spec?.storageClassName === o.virtualStorageClass ? backingOf(bound) : undefined;
    // On a virtual node, the provider's claim grows: the virtual kubelet brings its size home (capacity.ts).
    if (backing?.where === "local") return resizeLocal(claim, bound!, backing.twin, key);
    const nodeName = waitingNode(claim, o.virtualStorageClass);
    if (!nodeName || volumes.get(virtualVolumeName(claim))) return;
    const n = nodes.get(nodeName);
    if (!n) throw new RetryAfterError(2_000, `node ${nodeName} of claim ${key} is not in the cache yet`);
    const node: NodeInfo = { name: nodeName, labels: n.metadata.labels ?? {} };
    if (!isVirtualNode(node)) return provisionLocal(claim, nodeName, key);
    if (!offersStorage(node)) {
      events.warning(
        claimRef(claim),
        "ReschedulingRequired",
        `virtual node ${nodeName} offers no storage (its cluster negotiated no storage class, or storage is disabled here); the claim's pod must go elsewhere`,
      );
      const annotations = { ...claim.metadata.annotations };
      delete annotations[SELECTED_NODE];
      await client.replace(Resources.persistentVolumeClaims, {
        ...claimRef(claim),
        metadata: { ...claim.metadata, annotations },
      });
      return;
    }
    const clusterId = node.labels["liqo.io/remote-cluster-id"]!;
    await createIgnoringConflict(Resources.persistentVolumes, remoteVirtualVolume(claim, clusterId));
    events.normal(
      claimRef(claim),
      "ProvisioningSucceeded",
      `bound to volume ${virtualVolumeName(claim)} in the cluster of virtual node ${nodeName}; the real volume is provisioned there`,
    );
    log.info("claim provisioned on a virtual node", { key, node: nodeName, remoteClusterId: clusterId });
  }

  async function handleVolume(name: string) {
    const pv = volumes.get(name);
    if (!pv || !isReleasedVirtual(pv)) return;
    const backing = backingOf(pv);
    if (backing?.where === "local") {
      const twin = await client.find<Claim>(Resources.persistentVolumeClaims, backing.twin, o.storageNamespace);
      if (twin) {
        await client.delete(Resources.persistentVolumeClaims, backing.twin, o.storageNamespace, {
          uid: twin.metadata.uid,
        });
        log.info("real claim deleted with its virtual volume", {
          volume: name,
          twin: keyOf(o.storageNamespace, backing.twin),
        });
      }
    }
    await client.delete(Resources.persistentVolumes, name, undefined, { uid: pv.metadata.uid });
  }

  async function handle(key: string) {
    if (key.startsWith("pv:")) return handleVolume(key.slice(3));
    return handleClaim(key);
  }

  const informers = [claims, volumes, nodes] as Informer<KubeObject>[];
  return {
    handle,
    get synced() {
      return informers.every((i) => i.synced);
    },
    async start() {
      queue = createWorkQueue({ name: "storage", handler: handle, workers: 4, logger: log });
      const onClaim = (c: Claim) => {
        if (c.spec?.storageClassName === o.virtualStorageClass || c.metadata.namespace === o.storageNamespace)
          queue!.add(objectKey(c));
        // A twin bound (or failing): its user's claim is looked at now, not at its next retry.
        const owner = c.metadata.namespace === o.storageNamespace && c.metadata.labels?.[VIRTUAL_PVC_NAME_LABEL];
        if (owner) queue!.add(keyOf(c.metadata.labels![VIRTUAL_PVC_NAMESPACE_LABEL], owner));
      };
      const onClaimGone = (c: Claim) => {
        if (c.spec?.storageClassName === o.virtualStorageClass) queue!.add(keyOf(o.storageNamespace, c.metadata.uid!));
      };
      const onVolume = (v: Volume) => {
        if (v.metadata.annotations?.["pv.kubernetes.io/provisioned-by"] === STORAGE_PROVISIONER)
          queue!.add(`pv:${v.metadata.name}`);
      };
      claims.on({ add: onClaim, update: (_a, b) => onClaim(b), delete: onClaimGone });
      volumes.on({ add: onVolume, update: (_a, b) => onVolume(b) });
      for (const i of informers) i.start();
      await Promise.all(informers.map((i) => i.waitForSync()));
      queue.start();
    },
    async stop() {
      await queue?.shutdown();
      await events.flush();
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
