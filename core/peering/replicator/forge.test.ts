import { describe, expect, test } from "bun:test";
import {
  annotationsSetBy,
  REPLICATED_KINDS,
  isReplicaOf,
  replicaOf,
  replicaUpToDate,
  sourceSelector,
  statusPatch,
  targetSelector,
} from "./forge.ts";

const push = REPLICATED_KINDS.find((k) => k.direction === "push" && k.resource.kind === "ResourceRequest")!;
const source = {
  apiVersion: "discovery.liqo.io/v1alpha1",
  kind: "ResourceRequest",
  metadata: {
    name: "rome-id",
    namespace: "liqo-tenant-milan-abc123",
    uid: "u1",
    resourceVersion: "7",
    labels: { "liqo.io/replication": "true", "liqo.io/remoteID": "milan-id", app: "x" },
    annotations: { note: "kept", "kubectl.kubernetes.io/last-applied-configuration": "{}" },
  },
  spec: { clusterIdentity: { clusterID: "rome-id", clusterName: "rome" }, authUrl: "https://a.b:1" },
  status: { offerState: "None" },
};

describe("which objects travel", () => {
  test("the consumer pushes requests and its NetworkConfig, pulls offers and the provider's NetworkConfig", () => {
    expect(REPLICATED_KINDS.map((k) => `${k.direction} ${k.resource.kind}`)).toEqual([
      "push ResourceRequest",
      "push NetworkConfig",
      "pull ResourceOffer",
      "pull NetworkConfig",
    ]);
  });
  test("selectors use Liqo's labels", () => {
    expect(sourceSelector("milan-id")).toBe("liqo.io/replication=true,liqo.io/remoteID=milan-id");
    expect(targetSelector("rome-id")).toBe("liqo.io/replicated=true,liqo.io/originID=rome-id");
  });
});

describe("the replica", () => {
  const r = replicaOf(source, push, "liqo-tenant-rome-def456", "rome-id");
  test("keeps name and spec, moves namespace", () => {
    expect(r.metadata.name).toBe("rome-id");
    expect(r.metadata.namespace).toBe("liqo-tenant-rome-def456");
    expect(r.spec).toEqual(source.spec);
  });
  test("is marked as a replica from its origin and never asks to be replicated again", () => {
    expect(r.metadata.labels).toEqual({ app: "x", "liqo.io/replicated": "true", "liqo.io/originID": "rome-id" });
  });
  test("carries no status, uid, resourceVersion or kubectl's last-applied annotation", () => {
    expect(r.status).toBeUndefined();
    expect(r.metadata.uid).toBeUndefined();
    expect(r.metadata.resourceVersion).toBeUndefined();
    expect(r.metadata.annotations).toEqual({ note: "kept" });
  });
  test("isReplicaOf checks both marks and the origin", () => {
    expect(isReplicaOf(r, "rome-id")).toBe(true);
    expect(isReplicaOf(r, "paris-id")).toBe(false);
    expect(isReplicaOf({ metadata: { labels: { "liqo.io/originID": "rome-id" } } }, "rome-id")).toBe(false);
    expect(isReplicaOf(undefined, "rome-id")).toBe(false);
  });
  test("up to date ignores key order and extra server fields, not spec changes", () => {
    const onServer = {
      ...r,
      metadata: {
        ...r.metadata,
        uid: "u2",
        labels: { "liqo.io/originID": "rome-id", "liqo.io/replicated": "true", app: "x" },
      },
      spec: { authUrl: "https://a.b:1", clusterIdentity: { clusterName: "rome", clusterID: "rome-id" } },
    };
    expect(replicaUpToDate(onServer, r)).toBe(true);
    expect(replicaUpToDate({ ...onServer, spec: { ...onServer.spec, authUrl: "https://c.d:1" } }, r)).toBe(false);
    expect(replicaUpToDate({ ...onServer, metadata: { ...onServer.metadata, labels: { app: "x" } } }, r)).toBe(false);
    // A label the source dropped is still on the copy.
    expect(
      replicaUpToDate(
        { ...onServer, metadata: { ...onServer.metadata, labels: { ...onServer.metadata.labels, old: "y" } } },
        r,
      ),
    ).toBe(false);
  });
  test("an annotation the replicator set that the source dropped makes the copy stale; one someone else set does not", () => {
    const managed = (manager: string, keys: string[]) => ({
      manager,
      operation: "Apply",
      fieldsV1: { "f:metadata": { "f:annotations": Object.fromEntries(keys.map((k) => [`f:${k}`, {}])) } },
    });
    const copy = (managedFields: unknown[]) => ({
      ...r,
      metadata: {
        ...r.metadata,
        annotations: { note: "kept", "liqo.io/tenant-cordoned": "true", "team.example/owner": "ops" },
        managedFields,
      },
    });
    const desired = replicaOf(
      { ...source, metadata: { ...source.metadata, annotations: { note: "kept" } } },
      push,
      "t",
      "rome-id",
    );
    expect(
      annotationsSetBy(
        copy([managed("liqo-crd-replicator", ["note", "liqo.io/tenant-cordoned"])]),
        "liqo-crd-replicator",
      ),
    ).toEqual(["note", "liqo.io/tenant-cordoned"]);
    expect(
      replicaUpToDate(
        copy([
          managed("liqo-crd-replicator", ["note", "liqo.io/tenant-cordoned"]),
          managed("kubectl", ["team.example/owner"]),
        ]),
        desired,
        "liqo-crd-replicator",
      ),
    ).toBe(false);
    expect(
      replicaUpToDate(
        copy([
          managed("liqo-crd-replicator", ["note"]),
          managed("kubectl", ["liqo.io/tenant-cordoned", "team.example/owner"]),
        ]),
        desired,
        "liqo-crd-replicator",
      ),
    ).toBe(true);
  });
});

describe("status flowing back", () => {
  test("nothing while the owner has written no status", () => {
    expect(statusPatch({ offerState: "None" }, undefined)).toBeUndefined();
    expect(statusPatch({ offerState: "None" }, {})).toBeUndefined();
  });
  test("nothing when equal", () => expect(statusPatch({ a: 1, b: { c: 2 } }, { b: { c: 2 }, a: 1 })).toBeUndefined());
  test("the owner's status, with keys it dropped removed", () => {
    expect(statusPatch({ offerState: "None", offerWithdrawalTimestamp: "t" }, { offerState: "Created" })).toEqual({
      offerState: "Created",
      offerWithdrawalTimestamp: null,
    });
  });
});
