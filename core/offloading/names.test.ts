import { describe, expect, test } from "bun:test";
import {
  namespaceMapName,
  namespaceNameProblem,
  remoteNamespaceName,
  tenantNamespaceName,
  uniqueName,
} from "./names.ts";

const florence = { clusterID: "4858caa2-7848-4aab-a6b4-6984389bac56", clusterName: "florence" };

describe("uniqueName", () => {
  test("is the cluster name and the first 6 hex of sha256(clusterID), as in Liqo's docs (florence-539f8b)", () => {
    expect(uniqueName(florence)).toBe("florence-539f8b");
  });
  test("differs for two clusters with the same name", () => {
    expect(uniqueName({ clusterID: "other", clusterName: "florence" })).not.toBe(uniqueName(florence));
  });
});

describe("per-peer names", () => {
  test("the tenant namespace is liqo-tenant-<unique name>", () => {
    expect(tenantNamespaceName(florence)).toBe("liqo-tenant-florence-539f8b");
  });
  test("the NamespaceMap is named after the unique name", () => {
    expect(namespaceMapName(florence)).toBe("florence-539f8b");
  });
});

describe("remoteNamespaceName", () => {
  test("DefaultName appends the local cluster's unique name", () => {
    expect(remoteNamespaceName("foo", "DefaultName", florence)).toBe("foo-florence-539f8b");
  });
  test("EnforceSameName keeps the name", () => {
    expect(remoteNamespaceName("liqo-demo", "EnforceSameName", florence)).toBe("liqo-demo");
  });
});

describe("namespaceNameProblem", () => {
  test("accepts a DNS label", () => expect(namespaceNameProblem("foo-florence-539f8b")).toBeUndefined());
  test("rejects more than 63 characters and says so", () =>
    expect(namespaceNameProblem("a".repeat(64))).toContain("more than the 63"));
  test("rejects uppercase", () => expect(namespaceNameProblem("Foo")).toContain("DNS-1123"));
});
