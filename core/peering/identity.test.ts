import { describe, expect, test } from "bun:test";
import {
  clusterIdProblem,
  clusterNameProblem,
  generatedClusterName,
  labelProblem,
  MAX_CLUSTER_NAME,
  parseClusterLabels,
} from "./identity.ts";

describe("generatedClusterName", () => {
  test("is the same for the same cluster ID", () => {
    expect(generatedClusterName("4858caa2-7848-4aab-a6b4-6984389bac56")).toBe(
      generatedClusterName("4858caa2-7848-4aab-a6b4-6984389bac56"),
    );
  });
  test("is adjective-noun and a valid cluster name", () => {
    const name = generatedClusterName("4858caa2-7848-4aab-a6b4-6984389bac56");
    expect(name).toMatch(/^[a-z]+-[a-z]+$/);
    expect(clusterNameProblem(name)).toBeUndefined();
  });
  test("differs across cluster IDs (most of the time)", () => {
    const names = new Set(Array.from({ length: 50 }, (_, i) => generatedClusterName(`id-${i}`)));
    expect(names.size).toBeGreaterThan(40);
  });
});

describe("clusterNameProblem", () => {
  test("accepts a DNS label", () => expect(clusterNameProblem("milan")).toBeUndefined());
  test("rejects uppercase", () => expect(clusterNameProblem("Milan")).toContain("DNS-1123"));
  test("rejects empty", () => expect(clusterNameProblem("")).toContain("empty"));
  test("rejects names too long for the tenant namespace", () =>
    expect(clusterNameProblem("a".repeat(MAX_CLUSTER_NAME + 1))).toContain(`at most ${MAX_CLUSTER_NAME}`));
  test("the longest accepted name fits a tenant namespace", () =>
    expect(`liqo-tenant-${"a".repeat(MAX_CLUSTER_NAME)}-abcdef`.length).toBe(63));
});

describe("clusterIdProblem", () => {
  test("accepts a UUID", () => expect(clusterIdProblem("4858caa2-7848-4aab-a6b4-6984389bac56")).toBeUndefined());
  test("rejects a slash", () => expect(clusterIdProblem("a/b")).toContain("DNS-1123"));
  test("rejects uppercase (it becomes part of object names)", () =>
    expect(clusterIdProblem("ABC")).toContain("lowercase"));
});

describe("parseClusterLabels", () => {
  test("parses k=v pairs", () =>
    expect(parseClusterLabels("region=eu,topology.kubernetes.io/zone=a")).toEqual({
      region: "eu",
      "topology.kubernetes.io/zone": "a",
    }));
  test("empty and undefined give no labels", () => {
    expect(parseClusterLabels("")).toEqual({});
    expect(parseClusterLabels(undefined)).toEqual({});
  });
  test("allows empty values", () => expect(parseClusterLabels("edge=")).toEqual({ edge: "" }));
  test("names a pair without =", () => expect(() => parseClusterLabels("region")).toThrow('"region" is not key=value'));
  test("names a bad key", () => expect(() => parseClusterLabels("bad key=1")).toThrow('label key "bad key"'));
  test("names a bad value", () => expect(() => parseClusterLabels("k=not ok")).toThrow('value "not ok"'));
  test("rejects a key given twice with different values", () =>
    expect(() => parseClusterLabels("a=1,a=2")).toThrow("twice"));
  test("labelProblem rejects a bad prefix", () => expect(labelProblem("Bad_Prefix/x", "1")).toContain("prefix"));
});
