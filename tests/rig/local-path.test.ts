import { describe, expect, test } from "bun:test";
import {
  isReleasedOurs,
  localPathClass,
  LOCAL_PATH_PROVISIONER,
  pendingNode,
  plannedResize,
  plannedVolume,
  type Volume,
} from "./local-path.ts";
import type { Claim } from "../../core/storage/forge.ts";

const claim = (annotations: Record<string, string>, spec: Claim["spec"] = {}): Claim => ({
  metadata: { name: "data", namespace: "app", uid: "u1", annotations },
  spec: {
    storageClassName: "local-path",
    accessModes: ["ReadWriteOnce"],
    resources: { requests: { storage: "1Gi" } },
    ...spec,
  },
});
const ours = {
  "volume.kubernetes.io/storage-provisioner": LOCAL_PATH_PROVISIONER,
  "volume.kubernetes.io/selected-node": "n1",
};

describe("pendingNode", () => {
  test("our claim with a selected node waits on that node", () => expect(pendingNode(claim(ours))).toBe("n1"));
  test("another provisioner's claim is not ours", () =>
    expect(pendingNode(claim({ ...ours, "volume.kubernetes.io/storage-provisioner": "x" }))).toBeUndefined());
  test("no selected node yet: nothing to do", () =>
    expect(pendingNode(claim({ "volume.kubernetes.io/storage-provisioner": LOCAL_PATH_PROVISIONER }))).toBeUndefined());
  test("already bound: nothing to do", () => expect(pendingNode(claim(ours, { volumeName: "pv" }))).toBeUndefined());
});

describe("plannedVolume", () => {
  const pv = plannedVolume(claim(ours), "n1", "/r", 10n << 30n);
  test("named after the claim's uid", () => expect(pv.metadata.name).toBe("pvc-u1"));
  test("a directory per node", () => expect(pv.spec?.hostPath?.path).toBe("/r/n1/pvc-u1"));
  test("pinned to the node", () => expect(JSON.stringify(pv.spec?.nodeAffinity)).toContain('"values":["n1"]'));
  test("pre-bound to the claim by uid", () =>
    expect(pv.spec?.claimRef).toMatchObject({ namespace: "app", name: "data", uid: "u1" }));
  test("a claim larger than the free space is refused, naming the claim and the fix", () => {
    expect(() =>
      plannedVolume(claim(ours, { resources: { requests: { storage: "20Gi" } } }), "n1", "/r", 10n << 30n),
    ).toThrow(/claim app\/data asks for 20Gi but node n1 has 10240Mi free.*ask for less/);
  });
  test("a claim without a size is refused", () => {
    expect(() => plannedVolume(claim(ours, { resources: {} }), "n1", "/r", 1n << 40n)).toThrow(/requests no storage/);
  });
  test("a Block claim is refused", () => {
    expect(() => plannedVolume(claim(ours, { volumeMode: "Block" }), "n1", "/r", 1n << 40n)).toThrow(
      /Filesystem volumes only/,
    );
  });
});

test("only our released volumes with reclaim Delete are removed", () => {
  const v = (phase: string, by = LOCAL_PATH_PROVISIONER, policy = "Delete"): Volume => ({
    metadata: { name: "p", annotations: { "pv.kubernetes.io/provisioned-by": by } },
    spec: { persistentVolumeReclaimPolicy: policy },
    status: { phase },
  });
  expect(isReleasedOurs(v("Released"))).toBe(true);
  expect(isReleasedOurs(v("Bound"))).toBe(false);
  expect(isReleasedOurs(v("Released", "other"))).toBe(false);
  expect(isReleasedOurs(v("Released", LOCAL_PATH_PROVISIONER, "Retain"))).toBe(false);
});

describe("plannedResize", () => {
  const pv = plannedVolume(claim(ours), "n1", "/r", 10n << 30n);
  const bound = (request: string, capacity: string) => ({
    ...claim(ours, { volumeName: pv.metadata.name, resources: { requests: { storage: request } } }),
    status: { phase: "Bound", capacity: { storage: capacity } },
  });
  // biome-ignore lint/suspicious/noExplicitAny: a StorageClass manifest, asserted on one field
  test("the class allows expansion", () => expect((localPathClass() as any).allowVolumeExpansion).toBe(true));
  test("nothing asked: nothing", () => expect(plannedResize(bound("1Gi", "1Gi"), pv, 1n << 30n)).toBeUndefined());
  test("more asked, room for it: the PV grows first", () =>
    expect(plannedResize(bound("2Gi", "1Gi"), pv, 1n << 30n)).toEqual({ step: "volume", size: "2Gi" }));
  test("the PV grown: then the claim's status", () => {
    const grown = { ...pv, spec: { ...pv.spec, capacity: { storage: "2Gi" } } };
    expect(plannedResize(bound("2Gi", "1Gi"), grown, 0n)).toEqual({ step: "claim", size: "2Gi" });
  });
  test("no room for the difference: refused, naming the claim, the sizes and the fix", () =>
    expect(() => plannedResize(bound("3Gi", "1Gi"), pv, 1n << 30n)).toThrow(
      /claim app\/data asks for 3Gi but its volume pvc-u1 \(1Gi\) can grow by 1024Mi only: ask for less/,
    ));
  test("another provisioner's volume, or a claim not bound to it: not ours", () => {
    const theirs = { ...pv, metadata: { ...pv.metadata, annotations: {} } };
    expect(plannedResize(bound("2Gi", "1Gi"), theirs, 1n << 30n)).toBeUndefined();
    expect(plannedResize({ ...bound("2Gi", "1Gi"), status: { phase: "Pending" } }, pv, 1n << 30n)).toBeUndefined();
  });
});
