import { describe, expect, test } from "bun:test";
import {
  backingOf,
  followCapacity,
  isReleasedVirtual,
  localResize,
  localVirtualVolume,
  remoteVirtualVolume,
  twinClaim,
  waitingNode,
  type Claim,
  type Volume,
} from "./forge.ts";
import { negotiatedStorageClass, offeredStorageClasses, storageFor, type StorageClassObject } from "./offer.ts";

const claim = (annotations: Record<string, string> = {}, spec: Claim["spec"] = {}): Claim => ({
  metadata: { name: "data-db-0", namespace: "app", uid: "u-1", annotations },
  spec: {
    storageClassName: "liqo",
    accessModes: ["ReadWriteOnce"],
    resources: { requests: { storage: "1Gi" } },
    ...spec,
  },
});
const placed = {
  "volume.kubernetes.io/storage-provisioner": "liqo.io/storage",
  "volume.kubernetes.io/selected-node": "rome-node-1",
};

describe("waitingNode", () => {
  test("a claim of the class placed by the scheduler", () =>
    expect(waitingNode(claim(placed), "liqo")).toBe("rome-node-1"));
  test("another class", () =>
    expect(waitingNode(claim(placed, { storageClassName: "local-path" }), "liqo")).toBeUndefined());
  test("a renamed virtual class", () =>
    expect(waitingNode(claim(placed, { storageClassName: "virtual" }), "virtual")).toBe("rome-node-1"));
  test("not placed yet", () =>
    expect(
      waitingNode(claim({ "volume.kubernetes.io/storage-provisioner": "liqo.io/storage" }), "liqo"),
    ).toBeUndefined());
  test("bound already", () => expect(waitingNode(claim(placed, { volumeName: "pvc-x" }), "liqo")).toBeUndefined());
  test("being deleted", () => {
    const c = claim(placed);
    c.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    expect(waitingNode(c, "liqo")).toBeUndefined();
  });
});

describe("twinClaim", () => {
  const t = twinClaim(claim(placed), "rome-node-1", "liqo-storage", "local-path");
  test("in the storage namespace, named by the claim's uid", () =>
    expect(t.metadata).toMatchObject({ name: "u-1", namespace: "liqo-storage" }));
  test("the real class", () => expect(t.spec?.storageClassName).toBe("local-path"));
  test("the same size and modes", () =>
    expect(t.spec).toMatchObject({ accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } }));
  test("on the node already chosen", () =>
    expect(t.metadata.annotations?.["volume.kubernetes.io/selected-node"]).toBe("rome-node-1"));
  test("labelled with the claim it stands for", () =>
    expect(t.metadata.labels).toEqual({
      "storage.liqo.io/virtual-pvc-namespace": "app",
      "storage.liqo.io/virtual-pvc-name": "data-db-0",
    }));
  test("no real class: the cluster default (no class set)", () =>
    expect(twinClaim(claim(placed), "n", "liqo-storage", "").spec).not.toHaveProperty("storageClassName"));
});

describe("localVirtualVolume", () => {
  const real: Volume = {
    metadata: { name: "pvc-real" },
    spec: {
      capacity: { storage: "1Gi" },
      hostPath: { path: "/v/n1/pvc-real" },
      storageClassName: "local-path",
      persistentVolumeReclaimPolicy: "Delete",
      claimRef: { namespace: "liqo-storage", name: "u-1" },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["rome-node-1"] }] },
          ],
        },
      },
    },
  };
  const v = localVirtualVolume(claim(placed), real, "u-1");
  test("named after the claim", () => expect(v.metadata.name).toBe("pvc-u-1"));
  test("the real volume's source", () => expect(v.spec?.hostPath).toEqual({ path: "/v/n1/pvc-real" }));
  test("the real volume's node affinity (data gravity)", () =>
    expect(v.spec?.nodeAffinity).toEqual(real.spec!.nodeAffinity));
  test("the virtual class", () => expect(v.spec?.storageClassName).toBe("liqo"));
  test("bound to the user's claim, by uid", () =>
    expect(v.spec?.claimRef).toMatchObject({ namespace: "app", name: "data-db-0", uid: "u-1" }));
  test("says what backs it", () => expect(backingOf(v)).toEqual({ where: "local", twin: "u-1" }));
});

describe("remoteVirtualVolume", () => {
  const v = remoteVirtualVolume(claim(placed), "milan-id");
  test("pinned to the provider's virtual nodes", () =>
    expect(v.spec?.nodeAffinity).toEqual({
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "liqo.io/remote-cluster-id", operator: "In", values: ["milan-id"] }] },
        ],
      },
    }));
  test("the claim's size", () => expect(v.spec?.capacity).toEqual({ storage: "1Gi" }));
  test("says what backs it", () => expect(backingOf(v)).toEqual({ where: "remote", clusterId: "milan-id" }));
});

test("only released virtual volumes are cleaned up", () => {
  const v = remoteVirtualVolume(claim(placed), "x");
  expect(isReleasedVirtual({ ...v, status: { phase: "Bound" } })).toBe(false);
  expect(isReleasedVirtual({ ...v, status: { phase: "Released" } })).toBe(true);
  expect(isReleasedVirtual({ metadata: { name: "other" }, status: { phase: "Released" } })).toBe(false);
});

describe("offers", () => {
  const sc = (name: string, opts: { def?: boolean; provisioner?: string } = {}): StorageClassObject => ({
    metadata: {
      name,
      annotations: opts.def
        ? { "storageclass.kubernetes.io/is-default-class": "true" }
        : ({} as Record<string, string>),
    },
    provisioner: opts.provisioner ?? "x",
  });
  test("the configured real class", () =>
    expect(offeredStorageClasses([sc("a", { def: true }), sc("b")], "b")).toEqual([
      { storageClassName: "b", default: true },
    ]));
  test("else the default", () =>
    expect(offeredStorageClasses([sc("a", { def: true }), sc("b")], "")).toEqual([
      { storageClassName: "a", default: true },
    ]));
  test("a configured class that does not exist: nothing", () =>
    expect(offeredStorageClasses([sc("a", { def: true })], "zz")).toEqual([]));
  test("never the virtual class", () =>
    expect(offeredStorageClasses([sc("liqo", { def: true, provisioner: "liqo.io/storage" })], "")).toEqual([]));
  test("negotiated: the default, else the first", () => {
    expect(negotiatedStorageClass([{ storageClassName: "a" }, { storageClassName: "b", default: true }])).toBe("b");
    expect(negotiatedStorageClass([{ storageClassName: "a" }])).toBe("a");
    expect(negotiatedStorageClass(undefined)).toBeUndefined();
  });
  test("storage for a virtual kubelet needs both sides", () => {
    expect(storageFor("liqo", [{ storageClassName: "a" }])).toEqual({ storageClass: "a", virtualStorageClass: "liqo" });
    expect(storageFor(undefined, [{ storageClassName: "a" }])).toBeUndefined();
    expect(storageFor("liqo", [])).toBeUndefined();
  });
});

describe("expanding a claim bound on a physical node (localResize)", () => {
  const bound = (request: string, capacity: string): Claim => ({
    ...claim(placed, { volumeName: "pvc-u-1", resources: { requests: { storage: request } } }),
    status: { phase: "Bound", capacity: { storage: capacity } },
  });
  const twin = (request: string, capacity: string, phase = "Bound"): Claim => ({
    ...bound(request, capacity),
    status: { phase, capacity: { storage: capacity } },
  });
  const pv = (capacity: string): Volume => ({
    metadata: { name: "pvc-u-1" },
    spec: { capacity: { storage: capacity } },
  });

  test("nothing asked: nothing to do", () =>
    expect(localResize(bound("1Gi", "1Gi"), twin("1Gi", "1Gi"), pv("1Gi"))).toBeUndefined());
  test("a larger request raises the twin's", () =>
    expect(localResize(bound("2Gi", "1Gi"), twin("1Gi", "1Gi"), pv("1Gi"))).toEqual({ step: "request", size: "2Gi" }));
  test("the same size spelled otherwise is no change", () =>
    expect(localResize(bound("1024Mi", "1Gi"), twin("1Gi", "1Gi"), pv("1Gi"))).toBeUndefined());
  test("the twin asked, not grown yet: waiting", () =>
    expect(localResize(bound("2Gi", "1Gi"), twin("2Gi", "1Gi"), pv("1Gi"))).toEqual({ step: "waiting", size: "2Gi" }));
  test("the twin grown: the virtual PV first", () =>
    expect(localResize(bound("2Gi", "1Gi"), twin("2Gi", "2Gi"), pv("1Gi"))).toEqual({ step: "volume", size: "2Gi" }));
  test("then the claim's status", () =>
    expect(localResize(bound("2Gi", "1Gi"), twin("2Gi", "2Gi"), pv("2Gi"))).toEqual({ step: "claim", size: "2Gi" }));
  test("the real class gave more than asked: that size", () =>
    expect(localResize(bound("2Gi", "1Gi"), twin("2Gi", "3Gi"), pv("3Gi"))).toEqual({ step: "claim", size: "3Gi" }));
  test("a refused expansion set back: the twin's request follows it down", () =>
    expect(localResize(bound("1Gi", "1Gi"), twin("100Ti", "1Gi"), pv("1Gi"))).toEqual({
      step: "request",
      size: "1Gi",
    }));
  test("the twin's request never goes below its capacity; the claim shows the real size", () =>
    expect(localResize(bound("1Gi", "1Gi"), twin("3Gi", "2Gi"), pv("2Gi"))).toEqual({ step: "claim", size: "2Gi" }));
  test("an unbound twin or claim: nothing", () => {
    expect(localResize(bound("2Gi", "1Gi"), twin("1Gi", "1Gi", "Pending"), pv("1Gi"))).toBeUndefined();
    expect(localResize({ ...bound("2Gi", "1Gi"), status: { phase: "Pending" } }, twin("1Gi", "1Gi"), pv("1Gi"))).toBe(
      undefined,
    );
  });
});

describe("the provider's size coming home (followCapacity)", () => {
  const c = (capacity: string): Claim => ({ ...claim(), status: { phase: "Bound", capacity: { storage: capacity } } });
  const pv = (capacity: string): Volume => ({
    metadata: { name: "pvc-u-1" },
    spec: { capacity: { storage: capacity } },
  });
  test("grown: the PV, then the claim", () => {
    expect(followCapacity("2Gi", pv("1Gi"), c("1Gi"))).toEqual({ step: "volume", size: "2Gi" });
    expect(followCapacity("2Gi", pv("2Gi"), c("1Gi"))).toEqual({ step: "claim", size: "2Gi" });
    expect(followCapacity("2Gi", pv("2Gi"), c("2Gi"))).toBeUndefined();
  });
  test("never shrinks", () => expect(followCapacity("1Gi", pv("2Gi"), c("2Gi"))).toBeUndefined());
  test("no size reported: nothing", () => expect(followCapacity(undefined, pv("1Gi"), c("1Gi"))).toBeUndefined());
});
