import { describe, expect, test } from "bun:test";
import type { KubeClient } from "../../core/kube/client.ts";
import type { SecurityMode } from "../deployment-args.ts";
import { addressSeenByPeer, namespaceFor, peerProbes } from "./run.ts";

test("our pod's address as the peer reaches it: remapped into localNATPodCIDR, or as is with None", () => {
  expect(addressSeenByPeer("10.200.3.7", "10.200.0.0/16", "10.1.0.0/16")).toBe("10.1.3.7");
  expect(addressSeenByPeer("10.100.0.5", "10.100.0.0/16", "None")).toBe("10.100.0.5");
});

test("test namespaces are valid DNS labels that say what they are", () => {
  const ns = namespaceFor(Date.parse("2026-11-25T18:00:00Z"));
  expect(ns).toMatch(/^liqo-netcheck-[a-z0-9]+$/);
  expect(ns.length).toBeLessThanOrEqual(63);
});

describe("with the peer's kubeconfig: the security modes' checks", () => {
  const servers = { remoteIp: "10.1.0.9", localSeen: "10.2.0.4", peerSeen: "10.1.0.7", privateSeen: "10.2.0.5" };
  const remote = (localMode: SecurityMode, peerMode: SecurityMode) => ({
    remote: { client: {} as KubeClient, namespace: "x-own", image: "liqo:test", localMode, peerMode },
    basic: false,
  });
  const kinds = (o: ReturnType<typeof remote>) =>
    Object.fromEntries(
      peerProbes(o, "twin", servers).flatMap((p) => p.checks.map((c) => [c.id, `${c.kind} ${c.target}`])),
    );

  test("each path must be refused by the mode of the cluster it enters, and answered otherwise", () => {
    expect(kinds(remote("IntraClusterTrafficSegregation", "FullPodToPod"))).toEqual({
      "peer-pod-to-pod": "refused 10.2.0.5",
      "peer-pod-to-reflected-service": "http server-local.twin.svc.cluster.local",
      "pod-to-peer-pod": "http 10.1.0.7",
    });
    expect(kinds(remote("FullPodToPod", "IntraClusterTrafficSegregation"))).toEqual({
      "peer-pod-to-pod": "http 10.2.0.5",
      "peer-pod-to-reflected-service": "http server-local.twin.svc.cluster.local",
      "pod-to-peer-pod": "refused 10.1.0.7",
    });
  });
  test("the peer's probe runs in the peer's own namespace; without its kubeconfig or with --basic, none", () => {
    expect(
      peerProbes(remote("FullPodToPod", "FullPodToPod"), "twin", servers).map((p) => [p.name, !!p.remote]),
    ).toEqual([
      ["probe-peer", true],
      ["probe-local-to-peer", false],
    ]);
    expect(peerProbes({ basic: false }, "twin", servers)).toEqual([]);
    expect(peerProbes({ ...remote("FullPodToPod", "FullPodToPod"), basic: true }, "twin", servers)).toEqual([]);
  });
});
