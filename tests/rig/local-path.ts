// A dynamic hostPath provisioner for rig clusters with real nodes, in the manner of Rancher's
// local-path-provisioner: StorageClass `local-path` (the cluster default, WaitForFirstConsumer);
// a claim gets a directory under <cluster>/volumes/<node>/ and a PersistentVolume pinned to that
// node; a Released volume with reclaim policy Delete loses its directory and its PV. The class allows
// expansion: a bound claim asking for more grows its PV, then its status, as an external resizer
// does (a directory has no size of its own: only the free space of its file system is checked).
//
// It runs on the host, next to the rig's control plane, rather than as a pod: the real nodes are
// network namespaces sharing the host's file system, so the provisioner makes and removes the
// directories itself, with no helper pods, no image and no Go build added to the rig.
import { mkdirSync, rmSync, statfsSync } from "node:fs";
import { dirname, join } from "node:path";
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { createInformer } from "../../core/kube/informer.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { parseQuantity } from "../../core/kube/quantity.ts";
import type { Claim } from "../../core/storage/forge.ts";

export const LOCAL_PATH_CLASS = "local-path";
export const LOCAL_PATH_PROVISIONER = "rig.liqo.io/local-path";
const ANN_PROVISIONER = "volume.kubernetes.io/storage-provisioner";
const ANN_PROVISIONER_BETA = "volume.beta.kubernetes.io/storage-provisioner";
const ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node";
const ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by";

export const storageClasses: ResourceRef = {
  group: "storage.k8s.io",
  version: "v1",
  kind: "StorageClass",
  plural: "storageclasses",
  namespaced: false,
};

export interface Volume extends KubeObject {
  spec?: {
    capacity?: { storage?: string };
    persistentVolumeReclaimPolicy?: string;
    hostPath?: { path: string };
    claimRef?: { namespace?: string; name?: string; uid?: string };
    nodeAffinity?: unknown;
    storageClassName?: string;
  };
  status?: { phase?: string };
}

export function localPathClass(): KubeObject {
  return {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name: LOCAL_PATH_CLASS, annotations: { "storageclass.kubernetes.io/is-default-class": "true" } },
    provisioner: LOCAL_PATH_PROVISIONER,
    volumeBindingMode: "WaitForFirstConsumer",
    reclaimPolicy: "Delete",
    allowVolumeExpansion: true,
  } as KubeObject;
}

/** The node a claim waits on, when it is ours to provision and not provisioned yet. */
export function pendingNode(claim: Claim): string | undefined {
  const a = claim.metadata.annotations ?? {};
  if ((a[ANN_PROVISIONER] ?? a[ANN_PROVISIONER_BETA]) !== LOCAL_PATH_PROVISIONER) return undefined;
  if (claim.spec?.volumeName || claim.metadata.deletionTimestamp) return undefined;
  return a[ANN_SELECTED_NODE] || undefined;
}

export const volumeName = (claim: Claim) => `pvc-${claim.metadata.uid}`;

/** The PV for a claim on a node, its directory under `root`; an error naming the claim when it cannot be. */
export function plannedVolume(claim: Claim, node: string, root: string, freeBytes: bigint): Volume {
  const key = `${claim.metadata.namespace}/${claim.metadata.name}`;
  const asked = claim.spec?.resources?.requests?.storage;
  if (!asked) throw new Error(`claim ${key} requests no storage: set spec.resources.requests.storage`);
  const bytes = parseQuantity(asked, `claim ${key} spec.resources.requests.storage`) / 1000n;
  if (bytes > freeBytes) {
    throw new Error(
      `claim ${key} asks for ${asked} but node ${node} has ${freeBytes / (1n << 20n)}Mi free for local-path volumes: ask for less`,
    );
  }
  if (claim.spec?.volumeMode === "Block")
    throw new Error(`claim ${key} asks for a Block volume; local-path gives Filesystem volumes only`);
  const name = volumeName(claim);
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name, annotations: { [ANN_PROVISIONED_BY]: LOCAL_PATH_PROVISIONER } },
    spec: {
      capacity: { storage: asked },
      accessModes: claim.spec?.accessModes ?? ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Delete",
      storageClassName: claim.spec?.storageClassName ?? LOCAL_PATH_CLASS,
      volumeMode: "Filesystem",
      hostPath: { path: join(root, node, name), type: "DirectoryOrCreate" },
      claimRef: {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        namespace: claim.metadata.namespace,
        name: claim.metadata.name,
        uid: claim.metadata.uid,
      },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: [node] }] },
          ],
        },
      },
    },
  } as Volume;
}

const bytesOf = (q: string | undefined, what: string) => (q ? parseQuantity(q, what) / 1000n : 0n);

/**
 * The next step of resizing a bound claim of ours, as an external resizer goes: the PV's capacity
 * first (if the file system has room for the difference), then the claim's status. An error naming
 * the claim, the sizes and the fix when there is no room.
 */
export function plannedResize(
  claim: Claim & { status?: { phase?: string; capacity?: { storage?: string } } },
  pv: Volume,
  freeBytes: bigint,
): { step: "volume" | "claim"; size: string } | undefined {
  if (pv.metadata.annotations?.[ANN_PROVISIONED_BY] !== LOCAL_PATH_PROVISIONER) return undefined;
  if (claim.status?.phase !== "Bound" || claim.spec?.volumeName !== pv.metadata.name) return undefined;
  const key = `${claim.metadata.namespace}/${claim.metadata.name}`;
  const asked = claim.spec?.resources?.requests?.storage;
  const has = pv.spec?.capacity?.storage;
  const want = bytesOf(asked, `claim ${key} spec.resources.requests.storage`);
  const cap = bytesOf(has, `volume ${pv.metadata.name} spec.capacity.storage`);
  if (asked && want > cap) {
    if (want - cap > freeBytes)
      throw new Error(
        `claim ${key} asks for ${asked} but its volume ${pv.metadata.name} (${has}) can grow by ${freeBytes / (1n << 20n)}Mi only: ask for less`,
      );
    return { step: "volume", size: asked };
  }
  if (has && bytesOf(claim.status?.capacity?.storage, `claim ${key} status.capacity.storage`) < cap)
    return { step: "claim", size: has };
  return undefined;
}

/** A volume of ours to remove: released by its claim, reclaim policy Delete. */
export function isReleasedOurs(pv: Volume): boolean {
  return (
    pv.metadata.annotations?.[ANN_PROVISIONED_BY] === LOCAL_PATH_PROVISIONER &&
    pv.spec?.persistentVolumeReclaimPolicy === "Delete" &&
    (pv.status?.phase === "Released" || pv.status?.phase === "Failed")
  );
}

export interface LocalPathProvisioner {
  stop(): Promise<void>;
}

/** Watches claims and volumes and provisions or deletes; level-triggered, all work on one queue. */
export function runLocalPathProvisioner(
  client: KubeClient,
  root: string,
  log: (m: string) => void = () => {},
): LocalPathProvisioner {
  const claims = createInformer<Claim>({ client, resource: Resources.persistentVolumeClaims, resyncMs: 15_000 });
  const volumes = createInformer<Volume>({ client, resource: Resources.persistentVolumes, resyncMs: 15_000 });
  const queue = new Set<string>();
  let draining = false;
  const warned = new Set<string>();

  const enqueue = (key: string) => {
    queue.add(key);
    if (!draining) void drain();
  };
  async function drain() {
    draining = true;
    while (queue.size) {
      const key = queue.values().next().value!;
      queue.delete(key);
      try {
        if (key.startsWith("pv:")) await reconcileVolume(key.slice(3));
        else await reconcileClaim(key);
      } catch (err) {
        log(`${key}: ${(err as Error).message}`);
        setTimeout(() => enqueue(key), 2_000);
      }
    }
    draining = false;
  }

  async function reconcileClaim(key: string) {
    const claim = claims.get(key);
    const bound = claim?.spec?.volumeName ? volumes.get(claim.spec.volumeName) : undefined;
    if (claim && bound) return resize(key, claim, bound);
    const node = claim && pendingNode(claim);
    if (!claim || !node) return;
    if (volumes.get(volumeName(claim))) return;
    mkdirSync(join(root, node), { recursive: true });
    const fs = statfsSync(join(root, node));
    let pv: Volume;
    try {
      pv = plannedVolume(claim, node, root, BigInt(fs.bavail) * BigInt(fs.bsize));
    } catch (err) {
      const message = (err as Error).message;
      if (!warned.has(`${key}|${message}`)) {
        warned.add(`${key}|${message}`);
        await claimEvent(claim, "ProvisioningFailed", message).catch(() => {});
      }
      log(message);
      return;
    }
    mkdirSync(pv.spec!.hostPath!.path, { recursive: true, mode: 0o777 });
    try {
      await client.create(Resources.persistentVolumes, pv);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) throw err;
    }
    log(`provisioned ${pv.metadata.name} for ${key} on ${node}`);
    await claimEvent(claim, "ProvisioningSucceeded", `volume ${pv.metadata.name} on node ${node}`, "Normal").catch(
      () => {},
    );
  }

  async function resize(key: string, claim: Claim, pv: Volume) {
    const path = pv.spec?.hostPath?.path;
    if (!path?.startsWith(root + "/")) return;
    const fs = statfsSync(dirname(path));
    let step: ReturnType<typeof plannedResize>;
    try {
      step = plannedResize(claim, pv, BigInt(fs.bavail) * BigInt(fs.bsize));
    } catch (err) {
      const message = (err as Error).message;
      if (!warned.has(`${key}|${message}`)) {
        warned.add(`${key}|${message}`);
        await claimEvent(claim, "VolumeResizeFailed", message).catch(() => {});
        // What the external resizer records for a resize that cannot succeed as asked.
        await client
          .mergePatch(
            Resources.persistentVolumeClaims,
            claim.metadata.name!,
            claim.metadata.namespace,
            { status: { allocatedResourceStatuses: { storage: "ControllerResizeInfeasible" } } },
            "status",
          )
          .catch((e) => log(`${key}: marking the resize infeasible: ${(e as Error).message}`));
      }
      log(message);
      return;
    }
    if (step?.step === "volume") {
      await client.mergePatch(Resources.persistentVolumes, pv.metadata.name!, undefined, {
        spec: { capacity: { storage: step.size } },
      });
      log(`resized ${pv.metadata.name} of ${key} to ${step.size}`);
      return; // the PV's update brings the claim back here for its status
    }
    const infeasible = (claim as { status?: { allocatedResourceStatuses?: object } }).status?.allocatedResourceStatuses;
    if (step?.step === "claim" || infeasible) {
      await client.mergePatch(
        Resources.persistentVolumeClaims,
        claim.metadata.name!,
        claim.metadata.namespace,
        { status: { ...(step ? { capacity: { storage: step.size } } : {}), allocatedResourceStatuses: null } },
        "status",
      );
      if (step)
        await claimEvent(claim, "VolumeResizeSuccessful", `volume ${pv.metadata.name} is ${step.size}`, "Normal").catch(
          () => {},
        );
    }
  }

  async function reconcileVolume(name: string) {
    const pv = volumes.get(name);
    if (!pv || !isReleasedOurs(pv)) return;
    const path = pv.spec?.hostPath?.path;
    if (path?.startsWith(root + "/")) rmSync(path, { recursive: true, force: true });
    await client.delete(Resources.persistentVolumes, name, undefined, { uid: pv.metadata.uid });
    log(`deleted ${name} and ${path}`);
  }

  async function claimEvent(claim: Claim, reason: string, message: string, type = "Warning") {
    const m = claim.metadata;
    await client.create(Resources.events, {
      apiVersion: "v1",
      kind: "Event",
      metadata: { generateName: `${m.name}.`, namespace: m.namespace },
      involvedObject: {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
      },
      reason,
      message,
      type,
      source: { component: LOCAL_PATH_PROVISIONER },
      firstTimestamp: new Date().toISOString(),
      lastTimestamp: new Date().toISOString(),
      count: 1,
    } as KubeObject);
  }

  const key = (o: KubeObject) => `${o.metadata.namespace}/${o.metadata.name}`;
  claims.on({ add: (o) => enqueue(key(o)), update: (_, o) => enqueue(key(o)) });
  // A volume's change (grown) brings its claim back for its status.
  const volumeChanged = (o: Volume) => {
    enqueue(`pv:${o.metadata.name}`);
    const ref = o.spec?.claimRef;
    if (ref?.namespace && ref.name) enqueue(`${ref.namespace}/${ref.name}`);
  };
  volumes.on({ add: volumeChanged, update: (_, o) => volumeChanged(o) });
  claims.start();
  volumes.start();
  return {
    stop: async () => {
      await Promise.all([claims.stop(), volumes.stop()]);
    },
  };
}
