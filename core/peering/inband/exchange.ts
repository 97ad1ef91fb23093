// The NetworkConfig exchange without a CRD replicator: in-band peering needs the tunnel before
// authentication, so liqoctl (holding both kubeconfigs) copies each cluster's NetworkConfig for
// the other into the other's tenant namespace and the status back, as the replicator does later.
// The copies carry the replicator's labels (replicaLabels), so it adopts them once it runs.
import { NetworkConfigResource, type NetworkConfig } from "../../apis/index.ts";
import {
  REPLICATION_DESTINATION_LABEL,
  REPLICATION_ORIGIN_LABEL,
  REPLICATION_REQUESTED_LABEL,
  REPLICATION_STATUS_LABEL,
} from "../../apis/labels.ts";
import type { KubeClient } from "../../kube/client.ts";
import { replicaLabels, sameJson } from "../replicator/forge.ts";

/** One cluster of a peering: its client, its cluster ID, and its tenant namespace for the other. */
export interface ExchangeEnd {
  client: KubeClient;
  id: string;
  tenant: string;
}

export interface ExchangeReport {
  /** NetworkConfigs copied or updated, as "<cluster>:<namespace>/<name>". */
  copied: string[];
  /** Statuses carried back to the original. */
  statuses: string[];
}

/** One pass both ways; idempotent (a second pass with nothing new changes nothing). */
export async function exchangeNetworkConfigs(a: ExchangeEnd, b: ExchangeEnd): Promise<ExchangeReport> {
  const report: ExchangeReport = { copied: [], statuses: [] };
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const) {
    const sent = (
      await from.client.list<NetworkConfig>(NetworkConfigResource, {
        namespace: from.tenant,
        labelSelector: `${REPLICATION_REQUESTED_LABEL}=true,${REPLICATION_DESTINATION_LABEL}=${to.id}`,
      })
    ).items;
    const copies = (
      await to.client.list<NetworkConfig>(NetworkConfigResource, {
        namespace: to.tenant,
        labelSelector: `${REPLICATION_STATUS_LABEL}=true,${REPLICATION_ORIGIN_LABEL}=${from.id}`,
      })
    ).items;
    for (const orig of sent) {
      const labels = replicaLabels(orig, from.id);
      let copy = copies.find((c) => c.metadata.name === orig.metadata.name);
      const where = `${to.id}:${to.tenant}/${orig.metadata.name}`;
      if (!copy) {
        copy = await to.client.create<NetworkConfig>(NetworkConfigResource, {
          apiVersion: "net.liqo.io/v1alpha1",
          kind: "NetworkConfig",
          metadata: { name: orig.metadata.name, namespace: to.tenant, labels },
          spec: orig.spec,
        });
        report.copied.push(where);
      } else if (!sameJson(copy.spec, orig.spec) || !sameJson(copy.metadata.labels, labels)) {
        copy = await to.client.replace<NetworkConfig>(NetworkConfigResource, {
          ...copy,
          metadata: { ...copy.metadata, labels },
          spec: orig.spec,
        });
        report.copied.push(where);
      }
      if (copy.status && Object.keys(copy.status).length && !sameJson(copy.status, orig.status ?? {})) {
        await from.client.mergePatch(
          NetworkConfigResource,
          orig.metadata.name!,
          from.tenant,
          { status: copy.status },
          "status",
        );
        report.statuses.push(`${from.id}:${from.tenant}/${orig.metadata.name}`);
      }
    }
  }
  return report;
}

/** Deletes the copies of the other cluster's NetworkConfig in each tenant namespace (unpeer). */
export async function deleteExchangedCopies(a: ExchangeEnd, b: ExchangeEnd): Promise<number> {
  let deleted = 0;
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const) {
    const copies = (
      await to.client.list<NetworkConfig>(NetworkConfigResource, {
        namespace: to.tenant,
        labelSelector: `${REPLICATION_STATUS_LABEL}=true,${REPLICATION_ORIGIN_LABEL}=${from.id}`,
      })
    ).items;
    for (const c of copies) {
      await to.client
        .delete(NetworkConfigResource, c.metadata.name!, to.tenant, { uid: c.metadata.uid })
        .catch(() => undefined);
      deleted++;
    }
  }
  return deleted;
}
