import { expect, test } from "bun:test";
import { remoteVirtualVolume } from "../core/storage/forge.ts";
import { dataLossWarning, remoteBackedClaims } from "./storage-guard.ts";

const claim = (ns: string, name: string, uid: string) => ({
  metadata: { namespace: ns, name, uid },
  spec: { storageClassName: "liqo", resources: { requests: { storage: "1Gi" } } },
});
const volumes = [
  remoteVirtualVolume(claim("shop", "data-db-1", "u1"), "milan"),
  remoteVirtualVolume(claim("shop", "data-db-2", "u2"), "naples"),
  remoteVirtualVolume(claim("blog", "data", "u3"), "milan"),
  {
    metadata: { name: "pvc-x", annotations: { "pv.kubernetes.io/provisioned-by": "rig.liqo.io/local-path" } },
    spec: { claimRef: { namespace: "shop", name: "plain" } },
  },
];

test("unoffloading a namespace: its claims backed by any peer", () => {
  expect(remoteBackedClaims(volumes, { namespace: "shop" })).toEqual(["shop/data-db-1", "shop/data-db-2"]);
});
test("unpeering: the claims backed by that peer, in every namespace", () => {
  expect(remoteBackedClaims(volumes, { clusterId: "milan" })).toEqual(["blog/data", "shop/data-db-1"]);
});
test("nothing backed remotely: no warning", () => {
  expect(dataLossWarning(remoteBackedClaims(volumes, { namespace: "other" }), "x")).toBeUndefined();
});
test("the warning names the claims and the way on", () => {
  const w = dataLossWarning(["shop/data-db-1"], "unoffloading namespace shop")!;
  expect(w).toContain("unoffloading namespace shop deletes the volumes of 1 claim(s)");
  expect(w).toContain("shop/data-db-1");
  expect(w).toContain("rerun with --yes");
});
