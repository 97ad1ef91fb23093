// NatMapping objects (cluster-scoped, one per peer whose view of our networks is known) kept equal
// to what the IPAM says; the gateway turns them into DNAT rules for hub-and-spoke traffic.
import { NatMappingResource, NAT_MAPPING_LABEL, type NatMapping } from "../../core/apis/net/natmapping.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import type { Logger } from "../../core/log.ts";
import { createHash } from "node:crypto";
import type { Ipam } from "../ipam/index.ts";
import { natMappingLabels, natMappingSpec } from "./forge.ts";
import { CLUSTER_ID_LABEL } from "../shared/labels.ts";
import { canonicalJson } from "./ipam-storage.ts";
import { endpointRequestKey, requestedEndpoints } from "./translation-watch.ts";

export type NatMappingObjectSpec = ReturnType<typeof natMappingSpec>;

/** A stable name, so two managers (or a retry) never create two objects for one peer. */
export function natMappingName(clusterId: string): string {
  return `natmapping-${createHash("sha256").update(clusterId).digest("hex").slice(0, 10)}`;
}

/** The NatMapping specs the IPAM implies, by cluster ID; only peers in `wanted` that reported how they see us. */
export function desiredNatMappings(
  ipam: Ipam,
  wanted: (clusterId: string) => boolean,
): Map<string, NatMappingObjectSpec> {
  const snapshot = ipam.snapshot();
  const out = new Map<string, NatMappingObjectSpec>();
  for (const m of ipam.natMappings()) {
    const c = snapshot.clusters[m.clusterId];
    if (!c || c.localNatPodCidr === undefined || c.localNatExternalCidr === undefined || !wanted(m.clusterId)) continue;
    out.set(m.clusterId, natMappingSpec(m, c.podCidr, snapshot.externalCidr));
  }
  return out;
}

export async function syncNatMappings(
  client: KubeClient,
  desired: Map<string, NatMappingObjectSpec>,
  logger: Logger,
): Promise<void> {
  const existing = (
    await client.list<NatMapping>(NatMappingResource, {
      labelSelector: `${NAT_MAPPING_LABEL.key}=${NAT_MAPPING_LABEL.value}`,
    })
  ).items;
  const seen = new Set<string>();
  for (const obj of existing) {
    const clusterId = obj.metadata.labels?.[CLUSTER_ID_LABEL] ?? obj.spec?.clusterID;
    const spec = clusterId ? desired.get(clusterId) : undefined;
    if (!clusterId || !spec || seen.has(clusterId)) {
      await client.delete(NatMappingResource, obj.metadata.name!, undefined, { uid: obj.metadata.uid });
      logger.info("NatMapping deleted", { key: obj.metadata.name, peer: clusterId });
      continue;
    }
    seen.add(clusterId);
    if (canonicalJson(obj.spec) !== canonicalJson(spec)) {
      await client.replace(NatMappingResource, {
        ...obj,
        apiVersion: "net.liqo.io/v1alpha1",
        kind: "NatMapping",
        spec,
      });
      logger.info("NatMapping updated", { key: obj.metadata.name, peer: clusterId });
    }
    // Requests (translation-watch.ts) the spec answers are done; each key is removed alone, so a
    // request written meanwhile for another address survives.
    const done = requestedEndpoints(obj.metadata.annotations).filter((ip) => spec.clusterMappings?.[ip] !== undefined);
    if (done.length) await dropEndpointRequests(client, obj.metadata.name!, done);
  }
  for (const [clusterId, spec] of desired) {
    if (seen.has(clusterId)) continue;
    await client.create(NatMappingResource, {
      apiVersion: "net.liqo.io/v1alpha1",
      kind: "NatMapping",
      metadata: { name: natMappingName(clusterId), labels: natMappingLabels(clusterId) },
      spec,
    });
    logger.info("NatMapping created", { key: natMappingName(clusterId), peer: clusterId });
  }
}

/** Removes answered (or unanswerable) endpoint requests from a NatMapping, one annotation key each. */
export async function dropEndpointRequests(client: KubeClient, name: string, ips: string[]): Promise<void> {
  const annotations = Object.fromEntries(ips.map((ip) => [endpointRequestKey(ip), null]));
  await client.mergePatch(NatMappingResource, name, undefined, { metadata: { annotations } });
}
