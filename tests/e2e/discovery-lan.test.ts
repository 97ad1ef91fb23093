// LAN discovery on real nodes, as users run it: two rig clusters (rome and milan, one real node
// each on the rig's bridge), liqo installed in-cluster with discovery.config on (advertisement,
// discovery, ttl 6 s, autojoin off); liqo-discovery runs with hostNetwork, so its mDNS multicast
// crosses the bridge. Each cluster finds the other (a LAN ForeignCluster, not peered); hostile
// packets sent from the host on the bridge (a spoofed cluster ID, another cluster's address under
// a made-up ID, malformed and oversized packets, a flood) change nothing and crash nothing; with
// milan's token in place, autojoin switched on with helm peers rome with milan by itself; milan's
// a third "cluster" announced from the host is added, followed when its address changes and removed
// after three silent rounds; a peered cluster that falls silent is kept.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import dgram from "node:dgram";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { ForeignClusterResource } from "../../core/apis/index.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { encodeMessage } from "../../core/discovery/dns.ts";
import { advertisementRecords } from "../../core/discovery/service.ts";
import { readAuthUrl } from "../../core/peering/auth-url.ts";
import { readAuthToken } from "../../core/peering/auth/token.ts";
import { remoteTokenSecret, type ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { readClusterIdentity } from "../../core/peering/identity.ts";
import { installInCluster } from "../quickstart/in-cluster.ts";
import { killRigNow, reapOrphanRigs, rigDown, rigUp, type Rig } from "../rig/rig.ts";
import { testRigRoot } from "../rig/testing.ts";
import { startFakeAuthService, type FakeAuthService } from "../support/fake-auth.ts";
import { waitFor } from "../support/wait.ts";
import { cond } from "../support/peering.ts";
import { kubectlAt } from "../support/kubectl.ts";

type RigCluster = Rig["clusters"][number];
let rig: Rig;
let rome: KubeClient;
let milan: KubeClient;
let romeC: RigCluster;
let milanC: RigCluster;
let romeId = "";
let milanId = "";
let milanAuthUrl = "";
const DISCOVERY = [
  "--set",
  "discovery.config.enableAdvertisement=true",
  "--set",
  "discovery.config.enableDiscovery=true",
  "--set",
  "discovery.config.ttl=6",
];

beforeAll(async () => {
  await reapOrphanRigs(testRigRoot);
  const dir = mkdtempSync(join(testRigRoot, "discovery-"));
  process.on("exit", () => {
    if (rig) killRigNow(rig);
  });
  rig = await rigUp({ clusters: 2, names: ["rome", "milan"], realNodes: 1, dir, owner: process.pid });
  [romeC, milanC] = rig.clusters as [RigCluster, RigCluster];
  rome = createKubeClient({ kubeconfig: romeC.kubeconfig });
  milan = createKubeClient({ kubeconfig: milanC.kubeconfig });
  const off = ["--set", "discovery.config.autojoin=false"];
  await Promise.all([
    installInCluster(rig, romeC, "topology.liqo.io/region=center", { extraArgs: [...DISCOVERY, ...off] }),
    installInCluster(rig, milanC, "topology.liqo.io/region=north", { extraArgs: [...DISCOVERY, ...off] }),
  ]);
  romeId = (await readClusterIdentity(rome, "liqo"))!.clusterId;
  milanId = (await readClusterIdentity(milan, "liqo"))!.clusterId;
  milanAuthUrl = (await readAuthUrl(milan, "liqo"))!;
}, 900_000);

afterAll(async () => {
  if (rig) await rigDown(rig.dir).catch(() => killRigNow(rig));
}, 120_000);

const lan = async (c: KubeClient, id: string) =>
  (await c.list<ForeignClusterObject>(ForeignClusterResource)).items.find(
    (f) => f.spec.clusterIdentity?.clusterID === id,
  );

const kubectl = (c: RigCluster, ...args: string[]) => kubectlAt(join(rig.bin, "kubectl"), c.kubeconfig, ...args);
const discoveryLog = async (c: RigCluster) =>
  (await kubectl(c, "logs", "-n", "liqo", "deploy/liqo-discovery", "--tail=-1")).out;

/** Sends packets to the mDNS group from the host's address on the rig bridge (nothing leaves the rig). */
async function sendFromHost(packets: Uint8Array[]): Promise<void> {
  const gateway = rig.network!.gateway;
  const s = dgram.createSocket({ type: "udp4", reuseAddr: true });
  await new Promise<void>((resolve) => s.bind(0, gateway, () => resolve()));
  s.setMulticastInterface(gateway);
  s.setMulticastTTL(1);
  for (const p of packets)
    await new Promise<void>((resolve, reject) => s.send(p, 5353, "224.0.0.251", (e) => (e ? reject(e) : resolve())));
  await new Promise<void>((resolve) => s.close(() => resolve()));
}

const deployments = {
  group: "apps",
  version: "v1",
  kind: "Deployment",
  plural: "deployments",
  namespaced: true,
} as const;

function answer(a: { clusterId: string; clusterName: string; authUrl: string }): Uint8Array {
  const [ptr, ...rest] = advertisementRecords(a, "local", 6);
  return encodeMessage({ response: true, answers: [ptr!], additionals: rest });
}

/** An HTTPS server on the host's bridge address answering GET /ids as a cluster. */
async function fakeAuthService(clusterId: string, clusterName: string): Promise<FakeAuthService> {
  return startFakeAuthService({ hostname: rig.network!.gateway, clusterId, clusterName, tmpRoot: testRigRoot });
}

describe("LAN discovery between two clusters on real nodes", () => {
  test("each cluster finds the other: a ForeignCluster of discovery type LAN with its ID, name and auth service; autojoin off, no peering", async () => {
    const fc = await waitFor("rome's LAN ForeignCluster for milan", () => lan(rome, milanId), { timeoutMs: 120_000 });
    expect(fc.metadata.name).toBe("milan");
    expect(fc.metadata.labels?.["discovery.liqo.io/discovery-type"]).toBe("LAN");
    expect(fc.metadata.labels?.["discovery.liqo.io/autojoin"]).toBe("false");
    expect(fc.spec.clusterIdentity?.clusterName).toBe("milan");
    expect(fc.spec.foreignAuthUrl).toBe(milanAuthUrl);
    expect(fc.spec.ttl).toBe(6);
    const back = await waitFor("milan's LAN ForeignCluster for rome", () => lan(milan, romeId), { timeoutMs: 60_000 });
    expect(back.spec.foreignAuthUrl).toBe((await readAuthUrl(rome, "liqo"))!);
    // The controller manager looked at it and decided not to peer.
    const out = await waitFor("rome's OutgoingPeering None (not wanted)", async () => {
      const c = cond(await lan(rome, milanId), "OutgoingPeering");
      return c?.reason === "OutgoingPeeringDisabled" && c;
    });
    expect(out.status).toBe("None");
    expect(await rome.find(Resources.nodes, "liqo-milan")).toBeUndefined();
  }, 300_000);

  test("hostile answers from the bridge: a spoofed cluster ID, a made-up ID at milan's address, malformed, oversized and a flood: nothing changes, nothing crashes", async () => {
    const before = (await lan(rome, milanId))!;
    const fake = "00000000-0000-4000-8000-00000000beef";
    const spoofs = [
      // milan's ID, an address where no auth service answers as milan.
      answer({ clusterId: milanId, clusterName: "milan", authUrl: `https://${rig.network!.gateway}:1` }),
      // A made-up ID at milan's real auth service: it answers /ids as milan.
      answer({ clusterId: fake, clusterName: "impostor", authUrl: milanAuthUrl }),
    ];
    const garbage = [
      new Uint8Array(5),
      Uint8Array.from([0, 0, 0x84, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0]),
      new Uint8Array(9500).fill(0x41),
      Uint8Array.from([0, 0, 0x84, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 12, 0, 1]),
    ];
    const flood = Array.from({ length: 300 }, (_, i) =>
      answer({
        clusterId: `f100d000-0000-4000-8000-${String(i).padStart(12, "0")}`,
        clusterName: `flood-${i}`,
        authUrl: `https://${rig.network!.gateway}:2`,
      }),
    );
    for (let i = 0; i < 3; i++) await sendFromHost([...spoofs, ...garbage, ...flood]);

    const log = await waitFor(
      "rome's discovery to refuse the spoofed answers",
      async () => {
        const l = await discoveryLog(romeC);
        // The spoof of milan's ID is refused at its address, or left alone as a conflict with milan's own answer.
        const spoofHandled =
          l.includes(`answer for cluster ${milanId} points at https://${rig.network!.gateway}:1`) ||
          l.includes("answers for one cluster ID with different addresses");
        return l.includes(fake) && /malformed mDNS packet dropped/.test(l) && spoofHandled ? l : undefined;
      },
      { timeoutMs: 120_000 },
    );
    expect(log).toContain("answers as cluster milan");
    const after = (await lan(rome, milanId))!;
    expect(after.spec.foreignAuthUrl).toBe(before.spec.foreignAuthUrl);
    expect(after.metadata.uid).toBe(before.metadata.uid);
    const all = (await rome.list<ForeignClusterObject>(ForeignClusterResource)).items.map((f) => f.metadata.name);
    expect(all).toEqual(["milan"]);
    const pod = (
      await rome.list<KubeObject & { status?: { containerStatuses?: { restartCount: number }[] } }>(Resources.pods, {
        namespace: "liqo",
        labelSelector: "app.kubernetes.io/name=liqo-discovery",
      })
    ).items[0]!;
    expect(pod.status?.containerStatuses?.[0]?.restartCount).toBe(0);
  }, 300_000);

  test("a third cluster answering from the bridge gets a ForeignCluster; its address change is followed; silent, it is removed after three missed rounds", async () => {
    const turin = "7a1a7a1a-0000-4000-8000-000000000001";
    const first = await fakeAuthService(turin, "turin");
    const second = await fakeAuthService(turin, "turin");
    let url = first.url;
    const announce = setInterval(
      () => sendFromHost([answer({ clusterId: turin, clusterName: "turin", authUrl: url })]).catch(() => {}),
      1000,
    );
    try {
      const fc = await waitFor("rome's ForeignCluster for turin", () => lan(rome, turin), { timeoutMs: 60_000 });
      expect(fc.metadata.name).toBe("turin");
      expect(fc.spec.foreignAuthUrl).toBe(first.url);
      url = second.url;
      await waitFor(
        "turin's new address followed",
        async () => (await lan(rome, turin))?.spec.foreignAuthUrl === second.url,
        { timeoutMs: 60_000 },
      );
    } finally {
      clearInterval(announce);
    }
    await waitFor("turin removed after three missed rounds", async () => !(await lan(rome, turin)), {
      timeoutMs: 60_000,
    });
    expect(await lan(rome, milanId)).toBeDefined();
    first.stop();
    second.stop();
  }, 300_000);

  test("with milan's token in place, autojoin switched on (helm upgrade) peers rome with milan by itself", async () => {
    await rome.apply(Resources.secrets, remoteTokenSecret("liqo", milanId, (await readAuthToken(milan, "liqo"))!), {
      fieldManager: "test",
      force: true,
    });
    await installInCluster(rig, romeC, "topology.liqo.io/region=center", {
      extraArgs: [...DISCOVERY, "--set", "discovery.config.autojoin=true"],
    });
    await waitFor(
      "the autojoin label on rome's ForeignCluster for milan",
      async () => (await lan(rome, milanId))?.metadata.labels?.["discovery.liqo.io/autojoin"] === "true",
      { timeoutMs: 120_000 },
    );
    const node = await waitFor(
      "liqo-milan Ready on rome",
      async () => {
        const n = await rome.find<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
          Resources.nodes,
          "liqo-milan",
        );
        return n?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? n : undefined;
      },
      { timeoutMs: 300_000, describe: async () => (await lan(rome, milanId))?.status?.peeringConditions },
    );
    expect(node.metadata.labels?.["liqo.io/remote-cluster-id"]).toBe(milanId);
    // milan records the incoming peering on the ForeignCluster it discovered, not on a second one.
    await waitFor(
      "IncomingPeering Established on milan's LAN ForeignCluster for rome",
      async () => cond(await lan(milan, romeId), "IncomingPeering")?.status === "Established",
      { timeoutMs: 120_000 },
    );
    const onMilan = (await milan.list<ForeignClusterObject>(ForeignClusterResource)).items.filter(
      (f) => f.spec.clusterIdentity?.clusterID === romeId,
    );
    expect(onMilan.map((f) => [f.metadata.name, f.metadata.labels?.["discovery.liqo.io/discovery-type"]])).toEqual([
      ["rome", "LAN"],
    ]);
  }, 600_000);

  test("milan's discovery stopped: rome keeps its ForeignCluster for milan, which it is peered with, and says so after three missed rounds", async () => {
    await milan.mergePatch(deployments, "liqo-discovery", "liqo", { spec: { replicas: 0 } });
    await waitFor(
      "rome's discovery to keep milan as peered after three missed rounds",
      async () => (await discoveryLog(romeC)).includes(`kept: peered`) || undefined,
      { timeoutMs: 120_000 },
    );
    expect((await lan(rome, milanId))?.metadata.name).toBe("milan");
    expect(cond(await lan(rome, milanId), "OutgoingPeering")?.status).toBe("Established");
  }, 300_000);
});
