import { describe, expect, test } from "bun:test";
import { ForeignClusterError, incomingForeignCluster, withIncoming } from "./foreigncluster.ts";

const rome = { clusterID: "0b0cbd0e-5a37-4c4c-a8b3-2b5c1c7ee8a9", clusterName: "rome" };

describe("the provider's ForeignCluster for a consumer", () => {
  test("is named after the consumer, labelled as an incoming peering, with its auth URL", () => {
    const fc = incomingForeignCluster(rome, "https://172.18.0.3:30721");
    expect(fc.metadata.name).toBe("rome");
    expect(fc.metadata.labels).toEqual({
      "discovery.liqo.io/cluster-id": rome.clusterID,
      "discovery.liqo.io/discovery-type": "IncomingPeering",
    });
    expect(fc.spec.foreignAuthUrl).toBe("https://172.18.0.3:30721");
    expect(fc.spec.clusterIdentity).toEqual(rome);
  });
  test("a bad auth URL in the request is refused with the fix", () => {
    expect(() => incomingForeignCluster(rome, "ftp://nowhere")).toThrow(ForeignClusterError);
    expect(() => incomingForeignCluster(rome, "ftp://nowhere")).toThrow(/spec.authUrl must be the https URL/);
  });
});

describe("the IncomingPeering condition", () => {
  const at = new Date("2026-11-22T00:00:00Z");
  test("added when absent, other conditions kept", () => {
    const out = withIncoming(
      [{ type: "AuthenticationStatus", status: "Established" }],
      "Pending",
      "OfferPending",
      "m",
      at,
    )!;
    expect(out).toEqual([
      { type: "AuthenticationStatus", status: "Established" },
      {
        type: "IncomingPeering",
        status: "Pending",
        reason: "OfferPending",
        message: "m",
        lastTransitionTime: "2026-11-22T00:00:00Z",
      },
    ]);
  });
  test("no write when nothing changes, and None is not written where there was nothing", () => {
    const cur = [{ type: "IncomingPeering" as const, status: "Pending" as const, reason: "R", message: "m" }];
    expect(withIncoming(cur, "Pending", "R", "m", at)).toBeUndefined();
    expect(withIncoming(undefined, "None", "R", "m", at)).toBeUndefined();
  });
  test("the transition time moves only when the status does", () => {
    const cur = [
      {
        type: "IncomingPeering" as const,
        status: "Pending" as const,
        reason: "R",
        message: "m",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      },
    ];
    expect(withIncoming(cur, "Pending", "R", "other", at)![0]!.lastTransitionTime).toBe("2026-01-01T00:00:00Z");
    expect(withIncoming(cur, "Established", "R", "m", at)![0]!.lastTransitionTime).toBe("2026-11-22T00:00:00Z");
  });
});
