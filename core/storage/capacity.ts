// The size of a provider's volume comes home. A claim of the virtual class bound on a virtual node
// lives twice: here, bound to a virtual PV pinned to the provider, and in the provider's twin
// namespace (the storage reflector's copy, request included), bound to the real volume. When the
// user raises the request, the copy's request follows through reflection and the provider's class
// grows the real volume; this loop, run by the virtual kubelet, then does what an external resizer
// does here: the virtual PV's capacity, then the claim's status.capacity. The peer identity reads
// claims in twin namespaces only, which is all it needs.
import type { KubeClient } from "../kube/client.ts";
import { createNamespacedInformers } from "../kube/namespaced-informers.ts";
import { keyOf, objectKey, Resources } from "../kube/resources.ts";
import { withoutManagedFields } from "../kube/slim.ts";
import { createWorkQueue } from "../kube/workqueue.ts";
import { silentLogger, type Logger } from "../log.ts";
import { LABEL_MANAGED_BY, LABEL_ORIGIN, MANAGED_BY_REFLECTION } from "../reflection/abi.ts";
import { createEventRecorder } from "../kube/events.ts";
import { backingOf, followCapacity, type Claim, type Volume } from "./forge.ts";

export interface CapacityFollowerOptions {
  local: KubeClient;
  remote: KubeClient;
  localClusterId: string;
  remoteClusterId: string;
  virtualStorageClass: string;
  logger?: Logger;
}

export interface CapacityFollower {
  addPair(pair: { localNamespace: string; remoteNamespace: string }): void;
  removePair(localNamespace: string): Promise<void>;
  /** Handles one provider claim now, by `<twin namespace>/<name>` (tests call it directly). */
  handle(key: string): Promise<void>;
  stop(): Promise<void>;
}

export function createCapacityFollower(o: CapacityFollowerOptions): CapacityFollower {
  const log = (o.logger ?? silentLogger).child({ component: "storage-capacity" });
  const events = createEventRecorder(o.local, "liqo-storage", log);
  // Only the copies our reflection made for this cluster.
  const copies = createNamespacedInformers<Claim>({
    client: o.remote,
    resource: Resources.persistentVolumeClaims,
    labelSelector: `${LABEL_MANAGED_BY}=${MANAGED_BY_REFLECTION},${LABEL_ORIGIN}=${o.localClusterId}`,
    logger: log,
    transform: withoutManagedFields,
  });
  /** twin namespace → local namespace */
  const pairs = new Map<string, string>();

  async function handle(key: string) {
    const copy = copies.get(key);
    if (copy?.status?.phase !== "Bound") return;
    const localNamespace = pairs.get(copy.metadata.namespace!);
    if (!localNamespace) return;
    const claim = await o.local.find<Claim>(Resources.persistentVolumeClaims, copy.metadata.name!, localNamespace);
    if (claim?.spec?.storageClassName !== o.virtualStorageClass || !claim.spec.volumeName) return;
    let pv = await o.local.find<Volume>(Resources.persistentVolumes, claim.spec.volumeName);
    const backing = pv && backingOf(pv);
    if (!pv || backing?.where !== "remote" || backing.clusterId !== o.remoteClusterId) return;
    const real = copy.status?.capacity?.storage;
    let step = followCapacity(real, pv, claim);
    if (step?.step === "volume") {
      pv = await o.local.mergePatch<Volume>(Resources.persistentVolumes, pv.metadata.name!, undefined, {
        spec: { capacity: { storage: step.size } },
      });
      step = followCapacity(real, pv, claim);
    }
    if (step?.step !== "claim") return;
    await o.local.mergePatch(
      Resources.persistentVolumeClaims,
      claim.metadata.name!,
      localNamespace,
      { status: { capacity: { storage: step.size } } },
      "status",
    );
    events.normal(
      { ...claim, apiVersion: "v1", kind: "PersistentVolumeClaim" },
      "VolumeResizeSuccessful",
      `expanded to ${step.size}: the claim's copy ${key} in cluster ${o.remoteClusterId} is ${step.size}`,
    );
    log.info("claim expanded in the provider", { key: keyOf(localNamespace, claim.metadata.name!), size: step.size });
  }

  const queue = createWorkQueue({ name: "storage-capacity", workers: 1, logger: log, handler: handle });
  copies.on({ add: (c) => queue.add(objectKey(c)), update: (_a, c) => queue.add(objectKey(c)) });
  queue.start();

  return {
    handle,
    addPair({ localNamespace, remoteNamespace }) {
      pairs.set(remoteNamespace, localNamespace);
      copies.addNamespace(remoteNamespace);
    },
    async removePair(localNamespace) {
      for (const [r, l] of [...pairs]) {
        if (l !== localNamespace) continue;
        pairs.delete(r);
        await copies.removeNamespace(r);
      }
    },
    async stop() {
      await queue.shutdown();
      await events.flush();
      await copies.stop();
    },
  };
}
