import { describe, expect, test } from "bun:test";
import type { ForeignCluster } from "../apis/index.ts";
import { AUTOJOIN_LABEL, planRound, type PlanInput } from "./plan.ts";

const ME = "aaaaaaaa-0000-0000-0000-000000000000";
const MILAN = "bbbbbbbb-0000-0000-0000-000000000000";
const TURIN = "cccccccc-0000-0000-0000-000000000000";
const heardMilan = { clusterId: MILAN, clusterName: "milan", authUrl: "https://172.31.0.12:31443" };

const fc = (
  name: string,
  id: string,
  o: { type?: string; url?: string; autojoin?: string; peered?: boolean; outgoing?: "Yes" } = {},
): ForeignCluster =>
  ({
    apiVersion: "discovery.liqo.io/v1alpha1",
    kind: "ForeignCluster",
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion: "1",
      labels: { "discovery.liqo.io/discovery-type": o.type ?? "LAN", [AUTOJOIN_LABEL]: o.autojoin ?? "false" },
    },
    spec: {
      clusterIdentity: { clusterID: id, clusterName: name },
      foreignAuthUrl: o.url ?? heardMilan.authUrl,
      outgoingPeeringEnabled: o.outgoing ?? "Auto",
      incomingPeeringEnabled: "Auto",
      networkingEnabled: "Yes",
      insecureSkipTLSVerify: true,
    },
    ...(o.peered ? { status: { peeringConditions: [{ type: "OutgoingPeering", status: "Established" }] } } : {}),
  }) as ForeignCluster;

const input = (o: Partial<PlanInput>): PlanInput => ({
  existing: [],
  heard: new Map(),
  misses: new Map(),
  localClusterId: ME,
  discoveryType: "LAN",
  autojoin: false,
  ...o,
});

describe("planRound", () => {
  test("a cluster heard for the first time gets a LAN ForeignCluster named after it, with the autojoin label", () => {
    const p = planRound(input({ heard: new Map([[MILAN, heardMilan]]), ttlSeconds: 90 }));
    expect(p.create).toHaveLength(1);
    expect(p.create[0]!.metadata.name).toBe("milan");
    expect(p.create[0]!.metadata.labels).toEqual({
      "discovery.liqo.io/discovery-type": "LAN",
      "discovery.liqo.io/cluster-id": MILAN,
      [AUTOJOIN_LABEL]: "false",
    });
    expect(p.create[0]!.spec).toMatchObject({
      foreignAuthUrl: heardMilan.authUrl,
      outgoingPeeringEnabled: "Auto",
      ttl: 90,
    });
  });
  test("our own answer is ignored", () =>
    expect(planRound(input({ heard: new Map([[ME, { ...heardMilan, clusterId: ME }]]) })).create).toEqual([]));
  test("a cluster ID some ForeignCluster holds is never added twice, and one made by hand is never touched", () => {
    const p = planRound(
      input({
        existing: [fc("milan-by-hand", MILAN, { type: "Manual", url: "https://1.2.3.4:1" })],
        heard: new Map([[MILAN, heardMilan]]),
      }),
    );
    expect(p).toMatchObject({ create: [], update: [], delete: [] });
  });
  test("a name held by another cluster: the new one gets its ID's prefix", () => {
    const p = planRound(input({ existing: [fc("milan", TURIN)], heard: new Map([[MILAN, heardMilan]]) }));
    expect(p.create[0]!.metadata.name).toBe("milan-bbbbbbbb");
  });
  test("an address change is followed", () => {
    const p = planRound(
      input({
        existing: [fc("milan", MILAN, { url: "https://172.31.0.11:31443" })],
        heard: new Map([[MILAN, heardMilan]]),
      }),
    );
    expect(p.update).toEqual([
      {
        name: "milan",
        clusterId: MILAN,
        resourceVersion: "1",
        patch: { spec: { foreignAuthUrl: heardMilan.authUrl } },
      },
    ]);
  });
  test("but not while two answers disagree on the address", () => {
    const p = planRound(
      input({
        existing: [fc("milan", MILAN, { url: "https://172.31.0.11:31443" })],
        heard: new Map([[MILAN, heardMilan]]),
        conflicts: new Set([MILAN]),
      }),
    );
    expect(p.update).toEqual([]);
  });
  test("autojoin switched on relabels what exists", () => {
    const p = planRound(
      input({ existing: [fc("milan", MILAN)], heard: new Map([[MILAN, heardMilan]]), autojoin: true }),
    );
    expect(p.update).toEqual([
      {
        name: "milan",
        clusterId: MILAN,
        resourceVersion: "1",
        patch: { metadata: { labels: { [AUTOJOIN_LABEL]: "true" } } },
      },
    ]);
  });
  test("removed after three missed rounds, not before", () => {
    const existing = [fc("milan", MILAN)];
    let misses = new Map<string, number>();
    for (let round = 1; round <= 2; round++) {
      const p = planRound(input({ existing, misses }));
      expect(p.delete).toEqual([]);
      expect(p.misses.get(MILAN)).toBe(round);
      misses = p.misses;
    }
    expect(planRound(input({ existing, misses })).delete).toEqual([
      { name: "milan", uid: "uid-milan", clusterId: MILAN },
    ]);
  });
  test("an answer resets the count", () => {
    const p = planRound(
      input({ existing: [fc("milan", MILAN)], heard: new Map([[MILAN, heardMilan]]), misses: new Map([[MILAN, 2]]) }),
    );
    expect(p.misses.has(MILAN)).toBe(false);
  });
  test("a peered cluster is kept however long it is silent", () => {
    for (const f of [fc("milan", MILAN, { peered: true }), fc("milan", MILAN, { outgoing: "Yes" })]) {
      const p = planRound(input({ existing: [f], misses: new Map([[MILAN, 7]]) }));
      expect(p.delete).toEqual([]);
      expect(p.kept).toEqual(["milan"]);
    }
  });
  test("WAN: only the SearchDomain's own ForeignClusters, gone at the first miss", () => {
    const labels = { "discovery.liqo.io/searchdomain": "example" };
    const mine = {
      ...fc("milan", MILAN, { type: "WAN" }),
      metadata: {
        ...fc("milan", MILAN, { type: "WAN" }).metadata,
        labels: { "discovery.liqo.io/discovery-type": "WAN", ...labels },
      },
    };
    const other = fc("turin", TURIN, { type: "WAN" });
    const p = planRound(input({ existing: [mine, other], discoveryType: "WAN", labels, maxMisses: 1 }));
    expect(p.delete.map((d) => d.name)).toEqual(["milan"]);
  });
});
