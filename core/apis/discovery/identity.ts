// ClusterIdentity: how Liqo names a cluster everywhere (ForeignCluster, ResourceRequest, NetworkConfig).
import * as v from "valibot";
import { clusterId, clusterName } from "../fields.ts";

export const ClusterIdentitySchema = v.object({
  clusterID: clusterId("The unique identifier of the cluster (a UUID in Liqo)."),
  clusterName: clusterName("The name of the cluster, as shown to people."),
});

export type ClusterIdentity = v.InferOutput<typeof ClusterIdentitySchema>;

export const DISCOVERY_GROUP = "discovery.liqo.io";
