// The node Lease in kube-node-lease: the cheap heartbeat the node lifecycle controller watches.
// Renewed with an optimistic-concurrency update, as kubelet does; a conflict means another writer
// raced us and the next renewal will win.
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { Resources } from "../../kube/resources.ts";
import { microTime, nodeLease, NODE_LEASE_NAMESPACE, type LeaseObject } from "./forge.ts";

export async function renewNodeLease(
  local: KubeClient,
  nodeName: string,
  nodeUid: string,
  durationSeconds: number,
  now: Date,
): Promise<LeaseObject> {
  const existing = await local.find<LeaseObject>(Resources.leases, nodeName, NODE_LEASE_NAMESPACE);
  if (!existing) {
    try {
      return await local.create<LeaseObject>(Resources.leases, nodeLease(nodeName, nodeUid, durationSeconds, now));
    } catch (err) {
      // Created between our read and write (a restart of ourselves): renew that one next time.
      if (err instanceof KubeApiError && err.conflict)
        return await local.get<LeaseObject>(Resources.leases, nodeName, NODE_LEASE_NAMESPACE);
      throw err;
    }
  }
  const wanted = nodeLease(nodeName, nodeUid, durationSeconds, now);
  // A Lease left over from an earlier Node of the same name must follow the new Node's lifetime.
  const owners = existing.metadata.ownerReferences?.some((o) => o.uid === nodeUid)
    ? existing.metadata.ownerReferences
    : wanted.metadata.ownerReferences;
  return local.replace<LeaseObject>(Resources.leases, {
    ...existing,
    metadata: { ...existing.metadata, ownerReferences: owners },
    spec: {
      ...existing.spec,
      holderIdentity: nodeName,
      leaseDurationSeconds: durationSeconds,
      renewTime: microTime(now),
    },
  });
}
