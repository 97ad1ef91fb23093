// Whether a remote cluster may peer with this one (use our resources): the ForeignCluster that
// stands for it says so in spec.incomingPeeringEnabled. No refuses; Yes and Auto accept, as in
// Liqo, where any cluster holding our auth token may peer unless told otherwise. Checked by the
// auth service (no identity is issued) and the resourcerequest controller (no offer is made, and
// one already made is withdrawn), and by the consumer before it hands its own token to a provider.
import { ForeignClusterResource, type ForeignCluster } from "../apis/index.ts";
import type { KubeClient } from "../kube/client.ts";

export function incomingAllowed(fc: Pick<ForeignCluster, "spec"> | undefined): boolean {
  return fc?.spec.incomingPeeringEnabled !== "No";
}

/** The message shown wherever an incoming peering is refused, naming the fix. */
export function incomingDisabledMessage(fcName: string, remoteName: string, localName: string): string {
  return (
    `cluster ${localName} does not accept incoming peerings from ${remoteName}: its ForeignCluster ${fcName} says spec.incomingPeeringEnabled: No ` +
    `(on ${localName}: kubectl patch foreigncluster ${fcName} --type merge -p '{"spec":{"incomingPeeringEnabled":"Auto"}}' to allow it)`
  );
}

/** The live ForeignCluster holding `clusterId`, the oldest if several claim it. */
export async function foreignClusterOf(client: KubeClient, clusterId: string): Promise<ForeignCluster | undefined> {
  const all = (await client.list<ForeignCluster>(ForeignClusterResource)).items
    .filter((f) => f.spec?.clusterIdentity?.clusterID === clusterId && !f.metadata.deletionTimestamp)
    .sort((a, b) => (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? ""));
  return all[0];
}
