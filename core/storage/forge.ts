// The objects of the virtual storage class, as pure functions: the twin claim a claim of the
// `liqo` class gets in the storage namespace when its first pod lands on a physical node, and the
// virtual PersistentVolume that binds the claim, mirroring the real one (physical node) or pinned
// to the provider's cluster (virtual node). Names and labels let each side find the other.
import {
  REMOTE_CLUSTER_ID_LABEL,
  STORAGE_AVAILABLE_LABEL,
  STORAGE_PROVISIONER,
  TYPE_LABEL,
  VIRTUAL_NODE_TYPE,
  VIRTUAL_PVC_NAME_LABEL,
  VIRTUAL_PVC_NAMESPACE_LABEL,
} from "../apis/labels.ts";
import type { KubeObject } from "../kube/resources.ts";
import { parseQuantity } from "../kube/quantity.ts";

export const SELECTED_NODE = "volume.kubernetes.io/selected-node";
export const PROVISIONER_ANNOTATION = "volume.kubernetes.io/storage-provisioner";
const PROVISIONER_ANNOTATION_BETA = "volume.beta.kubernetes.io/storage-provisioner";
export const PROVISIONED_BY = "pv.kubernetes.io/provisioned-by";
/** On a virtual PV: where its data is, `local/<twin claim name>` or `remote/<cluster id>`. */
export const BACKING_ANNOTATION = "storage.liqo.io/backing";

export interface Claim extends KubeObject {
  spec?: {
    storageClassName?: string;
    volumeName?: string;
    accessModes?: string[];
    volumeMode?: string;
    resources?: { requests?: { storage?: string } };
  };
  status?: { phase?: string; capacity?: { storage?: string } };
}

export interface Volume extends KubeObject {
  spec?: Record<string, unknown> & {
    capacity?: { storage?: string };
    claimRef?: { apiVersion?: string; kind?: string; namespace?: string; name?: string; uid?: string };
    persistentVolumeReclaimPolicy?: string;
    nodeAffinity?: unknown;
    storageClassName?: string;
  };
  status?: { phase?: string };
}

export interface NodeInfo {
  name: string;
  labels: Record<string, string>;
}

/** The node a claim of the virtual class waits on: set by the scheduler for its first pod. */
export function waitingNode(claim: Claim, virtualClass: string): string | undefined {
  if (claim.spec?.storageClassName !== virtualClass || claim.spec?.volumeName || claim.metadata.deletionTimestamp)
    return undefined;
  const a = claim.metadata.annotations ?? {};
  if ((a[PROVISIONER_ANNOTATION] ?? a[PROVISIONER_ANNOTATION_BETA]) !== STORAGE_PROVISIONER) return undefined;
  return a[SELECTED_NODE] || undefined;
}

export const isVirtualNode = (node: NodeInfo) => node.labels[TYPE_LABEL] === VIRTUAL_NODE_TYPE;
export const offersStorage = (node: NodeInfo) => node.labels[STORAGE_AVAILABLE_LABEL] === "true";

/** The virtual PV of a claim: one per claim, named like a dynamically provisioned one. */
export const virtualVolumeName = (claim: Claim) => `pvc-${claim.metadata.uid}`;
/** The twin claim in the storage namespace: named by the claim's UID (unique, whatever its namespace). */
export const twinClaimName = (claim: Claim) => `${claim.metadata.uid}`;

export function twinClaim(claim: Claim, node: string, storageNamespace: string, realClass: string): Claim {
  const spec: Claim["spec"] = {
    accessModes: claim.spec?.accessModes ?? ["ReadWriteOnce"],
    resources: { requests: { storage: claim.spec?.resources?.requests?.storage } },
    volumeMode: claim.spec?.volumeMode ?? "Filesystem",
  };
  // No class: the cluster's default class, which the API server fills in on create.
  if (realClass) spec.storageClassName = realClass;
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: twinClaimName(claim),
      namespace: storageNamespace,
      labels: {
        [VIRTUAL_PVC_NAMESPACE_LABEL]: claim.metadata.namespace!,
        [VIRTUAL_PVC_NAME_LABEL]: claim.metadata.name!,
      },
      // The real class may wait for a first consumer too: the node is already chosen, say which.
      annotations: { [SELECTED_NODE]: node },
    },
    spec,
  };
}

function base(claim: Claim, capacity: string | undefined, backing: string): Volume {
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: {
      name: virtualVolumeName(claim),
      annotations: { [PROVISIONED_BY]: STORAGE_PROVISIONER, [BACKING_ANNOTATION]: backing },
    },
    spec: {
      capacity: { storage: capacity ?? claim.spec?.resources?.requests?.storage },
      accessModes: claim.spec?.accessModes ?? ["ReadWriteOnce"],
      volumeMode: claim.spec?.volumeMode ?? "Filesystem",
      persistentVolumeReclaimPolicy: "Delete",
      storageClassName: claim.spec?.storageClassName,
      claimRef: {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        namespace: claim.metadata.namespace,
        name: claim.metadata.name,
        uid: claim.metadata.uid,
      },
    },
  };
}

const VOLUME_SOURCE_KEYS = [
  "capacity",
  "accessModes",
  "volumeMode",
  "persistentVolumeReclaimPolicy",
  "storageClassName",
  "claimRef",
  "mountOptions",
];

/** Mirrors the real PV bound to the twin claim: same source and node affinity, bound to the claim. */
export function localVirtualVolume(claim: Claim, real: Volume, twinName: string): Volume {
  const out = base(claim, real.spec?.capacity?.storage, `local/${twinName}`);
  const source = Object.fromEntries(Object.entries(real.spec ?? {}).filter(([k]) => !VOLUME_SOURCE_KEYS.includes(k)));
  out.spec = { ...source, ...out.spec };
  return out;
}

/**
 * For a claim whose first pod went to a virtual node: bound at once, so the pod can be scheduled
 * and offloaded; the provider provisions the real volume for the offloaded pod. Pinned to every
 * virtual node of that provider (data gravity). The hostPath is never mounted: no kubelet runs
 * a virtual node's pods here.
 */
export function remoteVirtualVolume(claim: Claim, remoteClusterId: string): Volume {
  const out = base(claim, undefined, `remote/${remoteClusterId}`);
  out.spec = {
    ...out.spec,
    hostPath: { path: `/var/lib/liqo/remote-volumes/${remoteClusterId}/${claim.metadata.uid}` },
    nodeAffinity: {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: REMOTE_CLUSTER_ID_LABEL, operator: "In", values: [remoteClusterId] }] },
        ],
      },
    },
  };
  return out;
}

/** Where a virtual PV's data lives, from its annotation. */
export function backingOf(
  pv: Volume,
): { where: "local"; twin: string } | { where: "remote"; clusterId: string } | undefined {
  const b = pv.metadata.annotations?.[BACKING_ANNOTATION] ?? "";
  const slash = b.indexOf("/");
  if (b.startsWith("local/")) return { where: "local", twin: b.slice(slash + 1) };
  if (b.startsWith("remote/")) return { where: "remote", clusterId: b.slice(slash + 1) };
  return undefined;
}

/** A virtual PV whose claim is gone, to be removed with what backs it. */
export function isReleasedVirtual(pv: Volume): boolean {
  return (
    pv.metadata.annotations?.[PROVISIONED_BY] === STORAGE_PROVISIONER &&
    (pv.status?.phase === "Released" || pv.status?.phase === "Failed")
  );
}

/** Bytes of a storage quantity; undefined when absent or not a quantity. */
export function storageBytes(q: string | undefined): bigint | undefined {
  if (!q) return undefined;
  try {
    return parseQuantity(q) / 1000n;
  } catch {
    return undefined;
  }
}

const below = (a: string | undefined, b: string | undefined) => {
  const [x, y] = [storageBytes(a), storageBytes(b)];
  return x !== undefined && y !== undefined && x < y;
};

/**
 * What a grown real volume means for the claim it backs, as an external resizer does it: first the
 * virtual PV's capacity, then the claim's status. Never shrinks either (a real volume reported
 * smaller than its virtual PV is left to a person).
 */
export function followCapacity(
  real: string | undefined,
  pv: Volume,
  claim: Claim,
): { step: "volume" | "claim"; size: string } | undefined {
  if (!real) return undefined;
  if (below(pv.spec?.capacity?.storage, real)) return { step: "volume", size: real };
  if (below(claim.status?.capacity?.storage ?? "0", real)) return { step: "claim", size: real };
  return undefined;
}

export type LocalResize =
  /** The twin claim's request is set to the claim's (raised, or lowered back after a refused expansion). */
  | { step: "request"; size: string }
  /** The real resize is under way, or refused: the claim waits at its size. */
  | { step: "waiting"; size: string }
  | { step: "volume" | "claim"; size: string }
  | undefined;

/** The next step of a claim bound on a physical node whose request changed, from its twin claim and virtual PV. */
export function localResize(claim: Claim, twin: Claim, pv: Volume): LocalResize {
  if (twin.status?.phase !== "Bound" || claim.status?.phase !== "Bound") return undefined;
  const want = claim.spec?.resources?.requests?.storage;
  const asked = twin.spec?.resources?.requests?.storage;
  const real = twin.status?.capacity?.storage;
  const [w, a] = [storageBytes(want), storageBytes(asked)];
  if (w === undefined || a === undefined || !real) return undefined;
  // Kubernetes lets a request go down again only while it stays at least the capacity (recovering
  // from a refused expansion): the twin follows it down under the same rule.
  if (w > a || (w < a && !below(want, real))) return { step: "request", size: want! };
  if (below(real, want)) return { step: "waiting", size: want! };
  return followCapacity(real, pv, claim);
}
