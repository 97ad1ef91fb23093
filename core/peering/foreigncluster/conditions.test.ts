import { describe, expect, test } from "bun:test";
import {
  authenticationFailure,
  conditionsChanged,
  duplicateOwner,
  offeredResources,
  outgoingWanted,
  withCondition,
  type ForeignClusterObject,
} from "./conditions.ts";

const fc = (
  name: string,
  o: { id?: string; outgoing?: "Auto" | "Yes" | "No"; discovery?: string; created?: string; deleting?: boolean } = {},
): ForeignClusterObject =>
  ({
    apiVersion: "discovery.liqo.io/v1alpha1",
    kind: "ForeignCluster",
    metadata: {
      name,
      creationTimestamp: o.created ?? "2026-01-01T00:00:00Z",
      ...(o.discovery ? { labels: { "discovery.liqo.io/discovery-type": o.discovery } } : {}),
      ...(o.deleting ? { deletionTimestamp: "2026-01-02T00:00:00Z" } : {}),
    },
    spec: {
      clusterIdentity: { clusterID: o.id ?? "id-1", clusterName: name },
      foreignAuthUrl: "https://auth.example.com:443",
      outgoingPeeringEnabled: o.outgoing ?? "Auto",
      incomingPeeringEnabled: "Auto",
      networkingEnabled: "No",
      insecureSkipTLSVerify: true,
    },
  }) as ForeignClusterObject;

describe("withCondition", () => {
  const t0 = new Date("2026-01-01T00:00:00Z");
  const t1 = new Date("2026-01-01T00:05:00Z");
  const first = withCondition(undefined, { type: "OutgoingPeering", status: "Pending", reason: "A", message: "a" }, t0);
  test("adds a missing condition stamped now", () =>
    expect(first).toEqual([
      {
        type: "OutgoingPeering",
        status: "Pending",
        reason: "A",
        message: "a",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      },
    ]));
  test("same status, new reason: the transition time stays", () => {
    const next = withCondition(first, { type: "OutgoingPeering", status: "Pending", reason: "B", message: "b" }, t1);
    expect(next[0]!.lastTransitionTime).toBe("2026-01-01T00:00:00Z");
    expect(next[0]!.reason).toBe("B");
  });
  test("a new status moves the transition time", () => {
    expect(
      withCondition(first, { type: "OutgoingPeering", status: "Established", reason: "C", message: "c" }, t1)[0]!
        .lastTransitionTime,
    ).toBe("2026-01-01T00:05:00Z");
  });
  test("other types are kept", () =>
    expect(
      withCondition(first, { type: "NetworkStatus", status: "None", reason: "N", message: "n" }, t1).map((c) => c.type),
    ).toEqual(["OutgoingPeering", "NetworkStatus"]));
  test("the input is not modified", () => {
    withCondition(first, { type: "OutgoingPeering", status: "Error", reason: "X", message: "x" }, t1);
    expect(first[0]!.status).toBe("Pending");
  });
  test("conditionsChanged ignores transition times", () => {
    expect(conditionsChanged(first, [{ ...first[0]!, lastTransitionTime: "2030-01-01T00:00:00Z" }])).toBe(false);
    expect(conditionsChanged(first, [{ ...first[0]!, message: "other" }])).toBe(true);
    expect(conditionsChanged(undefined, first)).toBe(true);
  });
});

describe("outgoingWanted", () => {
  test("Yes peers", () => expect(outgoingWanted(fc("a", { outgoing: "Yes" }))).toBe(true));
  test("No does not", () => expect(outgoingWanted(fc("a", { outgoing: "No" }))).toBe(false));
  test("Auto on a manual (out-of-band) ForeignCluster peers", () =>
    expect(outgoingWanted(fc("a", { discovery: "Manual" }))).toBe(true));
  test("Auto without a discovery label peers", () => expect(outgoingWanted(fc("a"))).toBe(true));
  test("Auto on one made for an incoming peering does not", () =>
    expect(outgoingWanted(fc("a", { discovery: "IncomingPeering" }))).toBe(false));
  test("Auto on a LAN-discovered one does not", () =>
    expect(outgoingWanted(fc("a", { discovery: "LAN" }))).toBe(false));
  test("Auto on a discovered one peers when its discovery allows it (autojoin label)", () => {
    for (const discovery of ["LAN", "WAN"]) {
      const f = fc("a", { discovery });
      expect(
        outgoingWanted({
          ...f,
          metadata: { ...f.metadata, labels: { ...f.metadata.labels, "discovery.liqo.io/autojoin": "true" } },
        }),
      ).toBe(true);
      expect(
        outgoingWanted({
          ...f,
          metadata: { ...f.metadata, labels: { ...f.metadata.labels, "discovery.liqo.io/autojoin": "false" } },
        }),
      ).toBe(false);
    }
  });
  test("the autojoin label means nothing on a ForeignCluster made for an incoming peering", () =>
    expect(
      outgoingWanted({
        ...fc("a"),
        metadata: {
          name: "a",
          labels: { "discovery.liqo.io/discovery-type": "IncomingPeering", "discovery.liqo.io/autojoin": "true" },
        },
      }),
    ).toBe(false));
  test("Yes on an incoming one peers (liqoctl peer <name>)", () =>
    expect(outgoingWanted(fc("a", { discovery: "IncomingPeering", outgoing: "Yes" }))).toBe(true));
  test("a deleted ForeignCluster never peers", () =>
    expect(outgoingWanted(fc("a", { outgoing: "Yes", deleting: true }))).toBe(false));
});

describe("duplicateOwner", () => {
  const old = fc("milan", { id: "x", created: "2026-01-01T00:00:00Z" });
  const dup = fc("milan-2", { id: "x", created: "2026-01-02T00:00:00Z" });
  const other = fc("paris", { id: "y" });
  test("the older ForeignCluster keeps the ID", () => expect(duplicateOwner(old, [old, dup, other])).toBeUndefined());
  test("the newer one is told who holds it", () =>
    expect(duplicateOwner(dup, [old, dup, other])?.metadata.name).toBe("milan"));
  test("a unique ID has no owner", () => expect(duplicateOwner(other, [old, dup, other])).toBeUndefined());
  test("a ForeignCluster being deleted does not hold the ID", () =>
    expect(
      duplicateOwner(dup, [{ ...old, metadata: { ...old.metadata, deletionTimestamp: "x" } }, dup]),
    ).toBeUndefined());
  test("same creation time: the name decides", () => {
    const a = fc("a", { id: "z" });
    const b = fc("b", { id: "z" });
    expect(duplicateOwner(b, [b, a])?.metadata.name).toBe("a");
    expect(duplicateOwner(a, [b, a])).toBeUndefined();
  });
});

describe("authenticationFailure", () => {
  test("401 is Denied and says how to get a new token", () => {
    const c = authenticationFailure(401, "the auth token is wrong", "milan");
    expect(c.status).toBe("Denied");
    expect(c.reason).toBe("TokenRefused");
    expect(c.message).toContain("liqoctl generate peer-command on milan");
  });
  test("403 IncomingPeeringDisabled is Denied with its own reason, quoting the provider's fix", () => {
    const c = authenticationFailure(
      403,
      "cluster milan does not accept incoming peerings from rome: ... kubectl patch foreigncluster rome",
      "milan",
      "IncomingPeeringDisabled",
    );
    expect(c).toMatchObject({ status: "Denied", reason: "IncomingPeeringDisabled" });
    expect(c.message).toContain("kubectl patch foreigncluster rome");
  });
  test("a 403 without that reason stays a refused token", () =>
    expect(authenticationFailure(403, "no", "milan").reason).toBe("TokenRefused"));
  test("409 (duplicate identity) is an Error quoting the provider", () => {
    const c = authenticationFailure(409, "cluster ID x already has an identity here", "milan");
    expect(c.status).toBe("Error");
    expect(c.message).toContain("already has an identity");
  });
  test("409 while the previous identity is being revoked is Pending: it will pass", () => {
    expect(
      authenticationFailure(
        409,
        "the identity of cluster x is being revoked (namespace y is terminating); retry in a few seconds",
        "milan",
      ).status,
    ).toBe("Pending");
  });
  test("400 (peering with itself) is an Error", () =>
    expect(authenticationFailure(400, "own ID", "milan").status).toBe("Error"));
  test("429 is Pending: it will pass", () =>
    expect(authenticationFailure(429, "slow down", "milan").status).toBe("Pending"));
  test("5xx is Pending: the service is failing, not refusing", () =>
    expect(authenticationFailure(503, "no token yet", "milan").status).toBe("Pending"));
});

describe("offeredResources", () => {
  test("quantities become strings", () =>
    expect(offeredResources({ cpu: 4, memory: "8Gi" })).toEqual({ cpu: "4", memory: "8Gi" }));
  test("no quota, no resources", () => expect(offeredResources(undefined)).toEqual({}));
});
