import { describe, expect, test } from "bun:test";
import { sampleForeignCluster, sampleForeignClusterStatus } from "../samples.ts";
import { InvalidObjectError } from "../validation.ts";
import { ForeignClusterKind, parseForeignCluster } from "./foreigncluster.ts";

function rejection(input: unknown): InvalidObjectError {
  try {
    parseForeignCluster(input);
  } catch (err) {
    if (err instanceof InvalidObjectError) return err;
    throw err;
  }
  throw new Error("the input was accepted");
}

describe("parseForeignCluster accepts what Liqo writes", () => {
  test("the ForeignCluster of liqoctl peer out-of-band", () => {
    const fc = parseForeignCluster(sampleForeignCluster());
    expect(fc.spec.clusterIdentity?.clusterID).toBe("4858caa2-7848-4aab-a6b4-6984389bac56");
    expect(fc.spec.outgoingPeeringEnabled).toBe("Yes");
  });

  test("a status with every peering condition", () => {
    const fc = parseForeignCluster({ ...sampleForeignCluster(), status: sampleForeignClusterStatus() });
    expect(fc.status?.peeringConditions?.map((c) => c.type)).toEqual([
      "OutgoingPeering",
      "IncomingPeering",
      "NetworkStatus",
      "AuthenticationStatus",
    ]);
    expect(fc.status?.tenantNamespace?.local).toBe("liqo-tenant-milan-3f1c2a");
  });

  test("fills Liqo's defaults as the API server does", () => {
    const fc = parseForeignCluster({
      metadata: { name: "milan" },
      spec: { foreignAuthUrl: "https://auth.milan.example.com" },
    });
    expect(fc.spec.outgoingPeeringEnabled).toBe("Auto");
    expect(fc.spec.incomingPeeringEnabled).toBe("Auto");
    expect(fc.spec.networkingEnabled).toBe("Yes");
    expect(fc.spec.insecureSkipTLSVerify).toBe(true);
  });

  test("a condition without status defaults to None", () => {
    const fc = parseForeignCluster({
      ...sampleForeignCluster(),
      status: { peeringConditions: [{ type: "NetworkStatus" }] },
    });
    expect(fc.status?.peeringConditions?.[0]?.status).toBe("None");
  });
});

describe("parseForeignCluster rejects bad input, naming the field", () => {
  test("an unknown peering mode", () => {
    const fc = sampleForeignCluster();
    fc.spec.outgoingPeeringEnabled = "Maybe";
    const err = rejection(fc);
    expect(err.issues).toEqual([
      { path: "spec.outgoingPeeringEnabled", message: 'must be one of Auto, No, Yes (got "Maybe")' },
    ]);
    expect(err.message).toStartWith("ForeignCluster milan is invalid: spec.outgoingPeeringEnabled");
  });

  test("networkingEnabled None is a code placeholder, not a valid spec value", () => {
    const err = rejection({
      ...sampleForeignCluster(),
      spec: { ...sampleForeignCluster().spec, networkingEnabled: "None" },
    });
    expect(err.issues[0]?.path).toBe("spec.networkingEnabled");
  });

  test("a missing foreignAuthUrl", () => {
    const { foreignAuthUrl: _, ...spec } = sampleForeignCluster().spec;
    expect(rejection({ ...sampleForeignCluster(), spec }).issues).toEqual([
      { path: "spec.foreignAuthUrl", message: "is required" },
    ]);
  });

  test("an auth URL that is not https", () => {
    const err = rejection({
      ...sampleForeignCluster(),
      spec: { ...sampleForeignCluster().spec, foreignAuthUrl: "http://auth.milan.example.com" },
    });
    expect(err.issues[0]?.path).toBe("spec.foreignAuthUrl");
    expect(err.issues[0]?.message).toContain("https URL");
  });

  test("a malformed clusterID", () => {
    const fc = sampleForeignCluster();
    fc.spec.clusterIdentity.clusterID = "not a/cluster id!";
    const err = rejection(fc);
    expect(err.issues.map((i) => i.path)).toEqual(["spec.clusterIdentity.clusterID"]);
    expect(err.issues[0]?.message).toContain("must be a cluster ID");
  });

  test("an empty clusterID and a missing clusterName are both reported", () => {
    const err = rejection({
      ...sampleForeignCluster(),
      spec: { ...sampleForeignCluster().spec, clusterIdentity: { clusterID: "" } },
    });
    expect(err.issues.map((i) => i.path).sort()).toEqual([
      "spec.clusterIdentity.clusterID",
      "spec.clusterIdentity.clusterName",
    ]);
  });

  test("a cluster name that is not a DNS label", () => {
    const fc = sampleForeignCluster();
    fc.spec.clusterIdentity.clusterName = "Milan_1";
    expect(rejection(fc).issues[0]).toMatchObject({ path: "spec.clusterIdentity.clusterName" });
  });

  test("a negative or fractional ttl", () => {
    expect(
      rejection({ ...sampleForeignCluster(), spec: { ...sampleForeignCluster().spec, ttl: -1 } }).issues[0],
    ).toEqual({ path: "spec.ttl", message: "must be 0 or more seconds" });
    expect(
      rejection({ ...sampleForeignCluster(), spec: { ...sampleForeignCluster().spec, ttl: 1.5 } }).issues[0]?.path,
    ).toBe("spec.ttl");
  });

  test("an unknown condition type or status", () => {
    const err = rejection({
      ...sampleForeignCluster(),
      status: { peeringConditions: [{ type: "Outgoing", status: "Up" }] },
    });
    expect(err.issues.map((i) => i.path)).toEqual([
      "status.peeringConditions.0.type",
      "status.peeringConditions.0.status",
    ]);
  });

  test("a wrong type names what was expected", () => {
    const err = rejection({
      ...sampleForeignCluster(),
      spec: { ...sampleForeignCluster().spec, insecureSkipTLSVerify: "yes" },
    });
    expect(err.issues).toEqual([
      { path: "spec.insecureSkipTLSVerify", message: 'must be of type boolean (got "yes")' },
    ]);
  });

  test("a wrong apiVersion", () => {
    expect(rejection({ ...sampleForeignCluster(), apiVersion: "discovery.liqo.io/v1" }).issues).toEqual([
      { path: "apiVersion", message: "must be discovery.liqo.io/v1alpha1" },
    ]);
  });

  test("issues() lists the same problems without throwing", () => {
    expect(ForeignClusterKind.issues(sampleForeignCluster())).toEqual([]);
    expect(ForeignClusterKind.issues({ metadata: {}, spec: {} })).toEqual([
      { path: "spec.foreignAuthUrl", message: "is required" },
    ]);
  });
});
