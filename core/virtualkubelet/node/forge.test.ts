import { describe, expect, test } from "bun:test";
import {
  microTime,
  nodeConditions,
  nodeLease,
  nodeStatus,
  virtualNode,
  virtualNodeLabels,
  isOurVirtualNode,
  type NodeIdentity,
} from "./forge.ts";

const id: NodeIdentity = {
  nodeName: "liqo-milan",
  remoteClusterId: "abc",
  remoteClusterName: "milan",
  remoteClusterLabels: { "liqo.io/provider": "aws", "liqo.io/type": "not-allowed-to-win" },
  address: "10.0.0.5",
  kubeletPort: 10250,
  kubeletVersion: "v1.34.4",
};
const t0 = new Date("2026-01-01T00:00:00.000Z");
const t1 = new Date("2026-01-01T00:00:10.000Z");

describe("virtualNodeLabels", () => {
  test("keeps the remote cluster's labels", () => expect(virtualNodeLabels(id)["liqo.io/provider"]).toBe("aws"));
  test("our type label wins over a remote label of the same key", () =>
    expect(virtualNodeLabels(id)["liqo.io/type"]).toBe("virtual-node"));
  test("carries the remote cluster ID", () => expect(virtualNodeLabels(id)["liqo.io/remote-cluster-id"]).toBe("abc"));
  test("hostname is the node name", () => expect(virtualNodeLabels(id)["kubernetes.io/hostname"]).toBe("liqo-milan"));
});

describe("virtualNode", () => {
  test("has the virtual-node taint", () =>
    expect(virtualNode(id).spec?.taints?.[0]).toEqual({
      key: "virtual-node.liqo.io/not-allowed",
      value: "true",
      effect: "NoExecute",
    }));
  test("is ours", () => expect(isOurVirtualNode(virtualNode(id), "abc")).toBe(true));
  test("is not another cluster's", () => expect(isOurVirtualNode(virtualNode(id), "other")).toBe(false));
});

describe("nodeConditions", () => {
  const healthy = { healthy: true, consecutiveFailures: 0 };
  const sick = { healthy: false, consecutiveFailures: 3, detail: "connection refused" };
  test("Ready=True with kubelet's reason when healthy", () =>
    expect(nodeConditions(healthy, "milan", t0).find((c) => c.type === "Ready")).toMatchObject({
      status: "True",
      reason: "KubeletReady",
    }));
  test("Ready=False naming the remote and the failures when unhealthy", () => {
    const ready = nodeConditions(sick, "milan", t0).find((c) => c.type === "Ready")!;
    expect(ready.status).toBe("False");
    expect(ready.reason).toBe("RemoteClusterUnreachable");
    expect(ready.message).toBe(
      "the API server of remote cluster milan failed 3 consecutive health checks: connection refused",
    );
  });
  test("keeps the transition time while the status holds", () => {
    const before = nodeConditions(healthy, "milan", t0);
    expect(nodeConditions(healthy, "milan", t1, before)[0]!.lastTransitionTime).toBe(t0.toISOString());
  });
  test("moves the transition time when the status flips", () => {
    const before = nodeConditions(healthy, "milan", t0);
    expect(nodeConditions(sick, "milan", t1, before)[0]!.lastTransitionTime).toBe(t1.toISOString());
  });
  test("heartbeat is always now", () =>
    expect(nodeConditions(healthy, "milan", t1, nodeConditions(healthy, "milan", t0))[0]!.lastHeartbeatTime).toBe(
      t1.toISOString(),
    ));
  test("no pressure conditions are True", () =>
    expect(
      nodeConditions(healthy, "milan", t0)
        .filter((c) => c.type !== "Ready")
        .every((c) => c.status === "False"),
    ).toBe(true));
});

describe("nodeStatus", () => {
  const s = nodeStatus(id, { cpu: "4", memory: "8Gi" }, [])!;
  test("capacity is the negotiated resources", () => expect(s.capacity).toEqual({ cpu: "4", memory: "8Gi" }));
  test("allocatable equals capacity", () => expect(s.allocatable).toEqual(s.capacity!));
  test("InternalIP is the kubelet address", () =>
    expect(s.addresses).toContainEqual({ type: "InternalIP", address: "10.0.0.5" }));
  test("kubelet port", () => expect(s.daemonEndpoints?.kubeletEndpoint.Port).toBe(10250));
  test("kubelet version", () => expect(s.nodeInfo?.kubeletVersion).toBe("v1.34.4"));
});

describe("nodeLease", () => {
  test("is owned by the node", () =>
    expect(nodeLease("liqo-milan", "uid-1", 40, t0).metadata.ownerReferences?.[0]).toMatchObject({
      kind: "Node",
      uid: "uid-1",
    }));
  test("lives in kube-node-lease", () =>
    expect(nodeLease("liqo-milan", "uid-1", 40, t0).metadata.namespace).toBe("kube-node-lease"));
  test("renewTime is a MicroTime", () => expect(microTime(t0)).toBe("2026-01-01T00:00:00.000000Z"));
});
