import { describe, expect, test } from "bun:test";
import { localVirtualVolume, remoteVirtualVolume, type Claim } from "../core/storage/forge.ts";
import {
  fabricRefusal,
  lastProgress,
  moveRefusal,
  peersCrossed,
  podsUsing,
  recreatedClaim,
  temporaryClaim,
} from "./storage-move.ts";

const claim: Claim = {
  metadata: {
    name: "data",
    namespace: "app",
    uid: "u1",
    labels: { app: "db" },
    annotations: { "pv.kubernetes.io/bind-completed": "yes", "volume.kubernetes.io/selected-node": "n1", keep: "me" },
  },
  spec: {
    storageClassName: "liqo",
    volumeName: "pvc-u1",
    accessModes: ["ReadWriteOnce"],
    resources: { requests: { storage: "1Gi" } },
  },
};
const real = {
  metadata: { name: "r" },
  spec: {
    hostPath: { path: "/x" },
    nodeAffinity: {
      required: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["n1"] }] }],
      },
    },
  },
};
const localPv = localVirtualVolume(claim, real, "u1");
const node = (name: string, labels: Record<string, string> = {}) => ({ metadata: { name, labels } });
const milan = node("liqo-milan", {
  "liqo.io/type": "virtual-node",
  "liqo.io/remote-cluster-id": "m",
  "storage.liqo.io/available": "true",
});
const base = {
  key: "app/data",
  claim,
  volume: localPv,
  virtualClass: "liqo",
  target: milan,
  targetName: "liqo-milan",
  users: [] as string[],
};

describe("moveRefusal", () => {
  test("a move to a peer that offers storage starts", () => expect(moveRefusal(base)).toBeUndefined());
  test("no such claim", () => expect(moveRefusal({ ...base, claim: undefined })).toBe("claim app/data not found"));
  test("another class", () =>
    expect(moveRefusal({ ...base, claim: { ...claim, spec: { ...claim.spec, storageClassName: "fast" } } })).toContain(
      "only claims of the virtual class liqo",
    ));
  test("not bound", () => expect(moveRefusal({ ...base, volume: undefined })).toContain("is not bound yet"));
  test("no such node", () =>
    expect(moveRefusal({ ...base, target: undefined, targetName: "nowhere" })).toContain(
      "node nowhere does not exist",
    ));
  test("a virtual node without storage", () =>
    expect(
      moveRefusal({ ...base, target: node("liqo-x", { "liqo.io/type": "virtual-node" }), targetName: "liqo-x" }),
    ).toContain("offers no storage"));
  test("in use", () => expect(moveRefusal({ ...base, users: ["db-0"] })).toContain("used by pod(s) db-0"));
  test("already there (a node)", () =>
    expect(moveRefusal({ ...base, target: node("n1"), targetName: "n1" })).toBe("claim app/data is already on n1"));
  test("already there (a peer)", () =>
    expect(moveRefusal({ ...base, volume: remoteVirtualVolume(claim, "m") })).toContain("already on liqo-milan"));
});

test("podsUsing: running and pending pods that mount the claim", () => {
  const pod = (name: string, phase: string, claimName: string) => ({
    metadata: { name },
    spec: { volumes: [{ persistentVolumeClaim: { claimName } }] },
    status: { phase },
  });
  expect(
    podsUsing(
      [
        pod("a", "Running", "data"),
        pod("b", "Succeeded", "data"),
        pod("c", "Pending", "data"),
        pod("d", "Running", "other"),
      ],
      "data",
    ),
  ).toEqual(["a", "c"]);
});

test("the temporary claim and the claim made again keep size, modes, class; the binding goes", () => {
  expect(temporaryClaim(claim, "data-liqo-move").spec).toEqual({
    storageClassName: "liqo",
    accessModes: ["ReadWriteOnce"],
    volumeMode: undefined,
    resources: { requests: { storage: "1Gi" } },
  });
  const again = recreatedClaim(claim);
  expect(again.metadata.annotations).toEqual({ keep: "me" });
  expect(again.metadata.labels).toEqual({ app: "db" });
  expect(again.spec).not.toHaveProperty("volumeName");
});

test("progress is the receiver's last progress line", () => {
  expect(lastProgress("progress 1 10\nprogress 5 10\n")).toEqual({ copied: 5, total: 10 });
  expect(lastProgress("serving")).toBeUndefined();
});

describe("peersCrossed", () => {
  test("physical node to physical node: no peer", () => expect(peersCrossed(localPv, node("n2"))).toEqual([]));
  test("here to a peer: the target's cluster", () => expect(peersCrossed(localPv, milan)).toEqual(["m"]));
  test("a peer to here: the cluster holding the data", () =>
    expect(peersCrossed(remoteVirtualVolume(claim, "m"), node("n1"))).toEqual(["m"]));
  test("one peer to another: both", () => {
    const venice = node("liqo-venice", { "liqo.io/type": "virtual-node", "liqo.io/remote-cluster-id": "v" });
    expect(peersCrossed(remoteVirtualVolume(claim, "m"), venice)).toEqual(["m", "v"]);
  });
});

describe("fabricRefusal", () => {
  const rows = [
    { check: "WireGuard tunnel", ok: true, detail: "Connected" },
    { check: "active gateway here", ok: false, detail: "no Ready gateway pod" },
    { check: "virtual node", ok: false, detail: "liqo-milan not Ready" },
  ];
  test("every check passed: no refusal", () => expect(fabricRefusal("app/data", "milan", [rows[0]!])).toBeUndefined());
  test("names the claim, the peer, each failed check and what to run; passed checks left out", () => {
    const r = fabricRefusal("app/data", "milan", rows)!;
    expect(r).toContain("app/data");
    expect(r).toContain("active gateway here: no Ready gateway pod; virtual node: liqo-milan not Ready");
    expect(r).toContain("Nothing was changed");
    expect(r).toContain("liqoctl test network milan");
    expect(r).not.toContain("Connected");
  });
});
