import { describe, expect, test } from "bun:test";
import { peersOfForeignClusters } from "./fc-peers.ts";

const fc = (name: string, spec: object, tenant?: string, deleting = false) =>
  ({
    metadata: { name, ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}) },
    spec,
    status: tenant ? { tenantNamespace: { local: tenant } } : {},
  }) as never;

describe("peers from ForeignClusters", () => {
  test("networking disabled, no tenant namespace, no identity or being deleted: not a peer", () => {
    expect(
      peersOfForeignClusters([
        fc("a", { clusterIdentity: { clusterID: "id-a", clusterName: "a" }, networkingEnabled: "No" }, "t-a"),
        fc("b", { clusterIdentity: { clusterID: "id-b", clusterName: "b" }, networkingEnabled: "Yes" }),
        fc("c", { networkingEnabled: "Yes" }, "t-c"),
        fc("e", { clusterIdentity: { clusterID: "id-e", clusterName: "e" }, networkingEnabled: "Yes" }, "t-e", true),
        fc("d", { clusterIdentity: { clusterID: "id-d", clusterName: "dee" }, networkingEnabled: "Yes" }, "t-d"),
      ]),
    ).toEqual([{ remoteClusterId: "id-d", remoteClusterName: "dee", tenantNamespace: "t-d" }]);
  });

  test("sorted by cluster ID; the ForeignCluster's name stands in for a missing cluster name", () => {
    expect(
      peersOfForeignClusters([
        fc("zeta", { clusterIdentity: { clusterID: "id-2", clusterName: "" } }, "t-2"),
        fc("alpha", { clusterIdentity: { clusterID: "id-1", clusterName: "one" } }, "t-1"),
      ]).map((p) => [p.remoteClusterId, p.remoteClusterName]),
    ).toEqual([
      ["id-1", "one"],
      ["id-2", "zeta"],
    ]);
  });
});
