// Peering between two rig clusters as Liqo's documentation does it: `liqoctl generate
// peer-command` on the provider (milan), the printed command run on the consumer (rome), then
// Established peering and a Ready virtual node liqo-milan; unpeer and peer again; the reverse
// direction (Liqo's shortcut, liqoctl peer <consumer> on the provider, with the token the consumer
// handed over); incomingPeeringEnabled No on either side; refusals (wrong token, itself, duplicate or mismatched cluster ID) as conditions; and
// the auth service down in the middle of a peering.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ForeignClusterResource, ResourceOfferResource } from "../../core/apis/index.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { findTenantNamespace, readAuthToken } from "../../core/peering/auth/index.ts";
import { remoteTokenSecretName, type ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { generatedPeerCommand, liqoctl, startLiqoSide, type LiqoSide } from "./peering-rig.ts";
import { cond } from "../support/peering.ts";
import { kubectlAt } from "../support/kubectl.ts";

let rig: TestRig;
let rome: LiqoSide;
let milan: LiqoSide;
type Node = KubeObject & {
  status?: { capacity?: Record<string, string>; conditions?: { type: string; status: string }[] };
};

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  [rome, milan] = await Promise.all([
    startLiqoSide(rig, "rome", { "topology.liqo.io/region": "center" }),
    startLiqoSide(rig, "milan", { "topology.liqo.io/region": "north" }),
  ]);
}, 600_000);

afterAll(async () => {
  await rome?.stop();
  await milan?.stop();
  await rig?.down();
});

const fcOf = (side: LiqoSide, name: string) => side.client.find<ForeignClusterObject>(ForeignClusterResource, name);
const ready = (n: Node | undefined) =>
  n?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;

const kubectl = (side: LiqoSide, ...args: string[]) => kubectlAt(join(rig.bin, "kubectl"), side.kubeconfig, ...args);

describe("refusals", () => {
  test("a wrong token: liqoctl names the failed phase and the ForeignCluster says Denied", async () => {
    const args = await generatedPeerCommand(milan);
    args[args.indexOf("--auth-token") + 1] = "0123abcd";
    const r = await liqoctl(rome, ...args, "--timeout=90s");
    expect(r.err).toContain("phase AuthenticationStatus failed (Denied, TokenRefused)");
    expect(r.err).toContain("liqoctl generate peer-command on milan");
    expect(r.code).toBe(1);
    const fc = await fcOf(rome, "milan");
    expect(cond(fc, "AuthenticationStatus")?.status).toBe("Denied");
    expect(cond(fc, "OutgoingPeering")?.status).toBe("None");
  }, 180_000);

  test("liqoctl refuses to peer a cluster with itself", async () => {
    const args = await generatedPeerCommand(rome);
    const r = await liqoctl(rome, ...args);
    expect(r.err).toContain("is this cluster's own ID: a cluster cannot peer with itself");
    expect(r.code).toBe(1);
  });

  test("a ForeignCluster with this cluster's own ID is an Error condition", async () => {
    await rome.client.create(ForeignClusterResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ForeignCluster",
      metadata: { name: "myself" },
      spec: {
        clusterIdentity: { clusterID: rome.identity.clusterId, clusterName: "rome" },
        foreignAuthUrl: rome.authUrl,
        outgoingPeeringEnabled: "Yes",
      },
    } as KubeObject);
    const c = await waitFor(
      "the SelfPeering condition",
      async () =>
        cond(await fcOf(rome, "myself"), "AuthenticationStatus")?.reason === "SelfPeering" &&
        cond(await fcOf(rome, "myself"), "AuthenticationStatus"),
    );
    expect(c.status).toBe("Error");
    expect(c.message).toContain("a cluster cannot peer with itself");
    await rome.client.delete(ForeignClusterResource, "myself");
    await waitFor("myself to be gone", async () => !(await fcOf(rome, "myself")));
  }, 120_000);

  test("a cluster ID that does not match the auth service is an Error condition", async () => {
    await rome.client.create(ForeignClusterResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ForeignCluster",
      metadata: { name: "impostor" },
      spec: {
        clusterIdentity: { clusterID: "00000000-0000-0000-0000-000000000001", clusterName: "impostor" },
        foreignAuthUrl: milan.authUrl,
        outgoingPeeringEnabled: "Yes",
      },
    } as KubeObject);
    const c = await waitFor("the ClusterIDMismatch condition", async () => {
      const a = cond(await fcOf(rome, "impostor"), "AuthenticationStatus");
      return a?.reason === "ClusterIDMismatch" && a;
    });
    expect(c.status).toBe("Error");
    expect(c.message).toContain(`belongs to cluster milan (${milan.identity.clusterId})`);
    await rome.client.delete(ForeignClusterResource, "impostor");
    await waitFor("impostor to be gone", async () => !(await fcOf(rome, "impostor")));
  }, 120_000);
});

describe("out-of-band peering", () => {
  let elapsedMs = 0;
  test("the command generated on milan, run on rome, establishes the peering and a Ready liqo-milan", async () => {
    const args = await generatedPeerCommand(milan);
    const started = performance.now();
    const r = await liqoctl(rome, ...args, "--timeout=180s");
    elapsedMs = performance.now() - started;
    expect(r.err).toContain("Authenticated with cluster milan");
    expect(r.err).toContain("Outgoing peering with cluster milan established: node liqo-milan is Ready");
    expect(r.code).toBe(0);
    const node = await rome.client.get<Node>(Resources.nodes, "liqo-milan");
    expect(ready(node)).toBe(true);
    expect(node.metadata.labels?.["liqo.io/type"]).toBe("virtual-node");
    expect(node.metadata.labels?.["liqo.io/remote-cluster-id"]).toBe(milan.identity.clusterId);
    console.log(`peer out-of-band -> Ready virtual node: ${(elapsedMs / 1000).toFixed(1)}s`);
  }, 300_000);

  test("kubectl get foreignclusters prints Liqo's columns", async () => {
    const r = await kubectl(rome, "get", "foreignclusters");
    expect(r.code).toBe(0);
    expect(r.out.split("\n")[0]).toMatch(
      /^NAME\s+OUTGOING PEERING\s+INCOMING PEERING\s+NETWORKING\s+AUTHENTICATION\s+DISCOVERY\s+AGE$/,
    );
    expect(r.out).toMatch(/\nmilan\s+Established\s+None\s+None\s+Established\s+Manual\s+\S+/);
  });

  test("the virtual node has the offer's capacity and the provider's labels; the offer is Accepted with the kubelet Created", async () => {
    const fc = (await fcOf(rome, "milan"))!;
    // biome-ignore lint/suspicious/noExplicitAny: ResourceOffers read back from the cluster, asserted on a few fields
    const offers = await rome.client.list<any>(
      {
        group: "sharing.liqo.io",
        version: "v1alpha1",
        kind: "ResourceOffer",
        plural: "resourceoffers",
        namespaced: true,
      },
      { namespace: fc.status!.tenantNamespace!.local },
    );
    const offer = offers.items[0];
    expect(offer.status.phase).toBe("Accepted");
    expect(offer.status.virtualKubeletStatus).toBe("Created");
    const node = await rome.client.get<Node>(Resources.nodes, "liqo-milan");
    for (const [k, v] of Object.entries(offer.spec.resourceQuota.hard))
      expect(node.status?.capacity?.[k]).toBe(String(v));
    expect(node.metadata.labels?.["topology.liqo.io/region"]).toBe("north");
    expect(fc.status!.tenantNamespace!.remote).toBe(
      (await findTenantNamespace(milan.client, rome.identity.clusterId))!.metadata.name!,
    );
  });

  test("liqoctl status shows the identity and the peering", async () => {
    const r = await liqoctl(rome, "status");
    expect(r.code).toBe(0);
    expect(r.out).toContain(`ID:        ${rome.identity.clusterId}`);
    expect(r.out).toContain("topology.liqo.io/region=center");
    expect(r.out).toMatch(/milan\s+\S+\s+Established\s+None\s+None\s+Established\s+Manual\s+liqo-milan \(Ready\)/);
    expect(r.out).toContain("Discovery:\n  LAN (mDNS): off");
  });

  test("over the peer identity alone, an offloaded namespace gets its twin and a pod on liqo-milan runs in milan", async () => {
    const ns = "peered-app";
    await rome.client.create(Resources.namespaces, { metadata: { name: ns } });
    const off = await liqoctl(rome, "offload", "namespace", ns, "--namespace-mapping-strategy=EnforceSameName");
    expect(off.code).toBe(0);
    await rome.client.create(Resources.pods, {
      metadata: { name: "hello", namespace: ns },
      spec: {
        nodeName: "liqo-milan",
        containers: [{ name: "c", image: "nginx" }],
        tolerations: [{ key: "virtual-node.liqo.io/not-allowed", operator: "Exists" }],
      },
    });
    const pod = await waitFor(
      "pod peered-app/hello to run through the peering",
      async () => {
        const p = await rome.client.find<KubeObject & { status?: { phase?: string; podIP?: string } }>(
          Resources.pods,
          "hello",
          ns,
        );
        return p?.status?.phase === "Running" ? p : undefined;
      },
      {
        timeoutMs: 180_000,
        describe: () => rome.client.find(Resources.pods, "hello", ns).then((p) => (p as { status?: unknown })?.status),
      },
    );
    const remote = await milan.client.get<KubeObject & { status?: { podIP?: string } }>(Resources.pods, "hello", ns);
    expect(remote.metadata.labels?.["liqo.io/managed-by"]).toBe("shadowpod");
    expect(pod.status?.podIP).toBe(remote.status?.podIP);
    await rome.client.delete(Resources.pods, "hello", ns);
    await waitFor(
      "the remote pod to go with the local one",
      async () => !(await milan.client.find(Resources.pods, "hello", ns)),
      { timeoutMs: 120_000 },
    );
    expect((await liqoctl(rome, "unoffload", "namespace", ns)).code).toBe(0);
    await waitFor(
      "the twin namespace to be gone from milan",
      async () => !(await milan.client.find(Resources.namespaces, ns)),
      { timeoutMs: 120_000 },
    );
  }, 400_000);

  test("milan sees the incoming peering", async () => {
    await waitFor(
      "IncomingPeering Established on milan",
      async () => cond(await fcOf(milan, "rome"), "IncomingPeering")?.status === "Established",
    );
  }, 120_000);

  test("a duplicate ForeignCluster for milan's ID is an Error naming the one that holds it, and deleting it leaves milan's peering alone", async () => {
    const nodeUid = (await rome.client.get(Resources.nodes, "liqo-milan")).metadata.uid;
    await rome.client.create(ForeignClusterResource, {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ForeignCluster",
      metadata: { name: "milan-again" },
      spec: {
        clusterIdentity: { clusterID: milan.identity.clusterId, clusterName: "milan-again" },
        foreignAuthUrl: milan.authUrl,
        outgoingPeeringEnabled: "Yes",
      },
    } as KubeObject);
    const c = await waitFor("the DuplicateClusterID condition", async () => {
      const a = cond(await fcOf(rome, "milan-again"), "AuthenticationStatus");
      return a?.reason === "DuplicateClusterID" && a;
    });
    expect(c.status).toBe("Error");
    expect(c.message).toContain("already belongs to ForeignCluster milan");
    await rome.client.delete(ForeignClusterResource, "milan-again");
    await waitFor("milan-again to be gone", async () => !(await fcOf(rome, "milan-again")));
    expect(cond(await fcOf(rome, "milan"), "OutgoingPeering")?.status).toBe("Established");
    expect((await rome.client.find(Resources.nodes, "liqo-milan"))?.metadata.uid).toBe(nodeUid);
    expect(rome.fc.peers().find((p) => p.clusterId === milan.identity.clusterId)?.node).toBe("liqo-milan");
  }, 120_000);

  test("liqoctl unpeer removes the virtual node, the identity here and there; liqoctl peer brings it back", async () => {
    const r = await liqoctl(rome, "unpeer", "milan", "--timeout=180s");
    expect(r.err).toContain("Unpeered from cluster milan");
    expect(r.code).toBe(0);
    expect(await rome.client.find(Resources.nodes, "liqo-milan")).toBeUndefined();
    const fc = (await fcOf(rome, "milan"))!;
    expect(cond(fc, "AuthenticationStatus")?.status).toBe("None");
    expect(
      await rome.client.find(
        Resources.secrets,
        `remote-identity-${milan.identity.clusterId}`,
        fc.status!.tenantNamespace!.local,
      ),
    ).toBeUndefined();
    await waitFor(
      "milan to revoke rome's identity",
      async () => {
        const ns = await findTenantNamespace(milan.client, rome.identity.clusterId);
        return !ns || !!ns.metadata.deletionTimestamp;
      },
      { timeoutMs: 120_000 },
    );
    await waitFor(
      "the revoked tenant namespace to go",
      async () => !(await findTenantNamespace(milan.client, rome.identity.clusterId)),
      { timeoutMs: 120_000 },
    );

    const again = await liqoctl(rome, "peer", "milan", "--timeout=180s");
    expect(again.err).toContain("Outgoing peering with cluster milan established");
    expect(again.code).toBe(0);
    expect(ready(await rome.client.get<Node>(Resources.nodes, "liqo-milan"))).toBe(true);
  }, 420_000);
});

describe("faults and clean-up", () => {
  test("with milan's auth service down, peering waits (Pending, AuthServiceUnreachable) and converges once it returns", async () => {
    const off = await liqoctl(rome, "unpeer", "milan", "--timeout=180s");
    expect(off.code).toBe(0);
    await waitFor(
      "the old identity to be revoked",
      async () => !(await findTenantNamespace(milan.client, rome.identity.clusterId)),
      { timeoutMs: 120_000 },
    );
    await milan.stopAuth();
    const peering = liqoctl(rome, "peer", "milan", "--timeout=240s");
    const pending = await waitFor(
      "AuthenticationStatus Pending for the unreachable auth service",
      async () => {
        const a = cond(await fcOf(rome, "milan"), "AuthenticationStatus");
        return a?.reason === "AuthServiceUnreachable" && a;
      },
      { timeoutMs: 120_000 },
    );
    expect(pending.status).toBe("Pending");
    expect(pending.message).toContain("is liqo auth running in milan");
    await milan.startAuth();
    const r = await peering;
    expect(r.err).toContain("Outgoing peering with cluster milan established");
    expect(r.code).toBe(0);
  }, 420_000);

  test("incomingPeeringEnabled No on milan withdraws rome's peering (Denied on both sides, naming the fix); Auto brings it back", async () => {
    await milan.client.mergePatch(ForeignClusterResource, "rome", undefined, {
      spec: { incomingPeeringEnabled: "No" },
    });
    await waitFor("liqo-milan to go from rome", async () => !(await rome.client.find(Resources.nodes, "liqo-milan")), {
      timeoutMs: 120_000,
    });
    const out = await waitFor(
      "rome's OutgoingPeering Denied",
      async () => {
        const c = cond(await fcOf(rome, "milan"), "OutgoingPeering");
        return c?.status === "Denied" && c;
      },
      { timeoutMs: 60_000 },
    );
    expect(out.reason).toBe("IncomingPeeringDisabled");
    expect(out.message).toContain("ForeignCluster rome says spec.incomingPeeringEnabled: No");
    expect(out.message).toContain("kubectl patch foreigncluster rome");
    const inc = await waitFor("milan's IncomingPeering Denied", async () => {
      const c = cond(await fcOf(milan, "rome"), "IncomingPeering");
      return c?.status === "Denied" && c;
    });
    expect(inc.reason).toBe("IncomingPeeringDisabled");
    const tenant = (await fcOf(milan, "rome"))!.status!.tenantNamespace!.local!;
    await waitFor(
      "milan's offer to rome deleted",
      async () => (await milan.client.list(ResourceOfferResource, { namespace: tenant })).items.length === 0,
    );
    const r = await kubectl(rome, "get", "foreignclusters");
    expect(r.out).toMatch(/\nmilan\s+Denied\s+/);

    await milan.client.mergePatch(ForeignClusterResource, "rome", undefined, {
      spec: { incomingPeeringEnabled: "Auto" },
    });
    await waitFor(
      "rome's OutgoingPeering Established again",
      async () => cond(await fcOf(rome, "milan"), "OutgoingPeering")?.status === "Established",
      { timeoutMs: 120_000 },
    );
    expect(ready(await rome.client.get<Node>(Resources.nodes, "liqo-milan"))).toBe(true);
  }, 300_000);

  test("a new peering towards a cluster that says incomingPeeringEnabled No is refused at authentication; a consumer that says No keeps its token", async () => {
    expect((await liqoctl(rome, "unpeer", "milan", "--timeout=180s")).code).toBe(0);
    await waitFor(
      "the old identity to be revoked",
      async () => !(await findTenantNamespace(milan.client, rome.identity.clusterId)),
      { timeoutMs: 120_000 },
    );
    await milan.client.mergePatch(ForeignClusterResource, "rome", undefined, {
      spec: { incomingPeeringEnabled: "No" },
    });
    const refused = await liqoctl(rome, "peer", "milan", "--timeout=90s");
    expect(refused.err).toContain("phase AuthenticationStatus failed (Denied, IncomingPeeringDisabled)");
    expect(refused.err).toContain("does not accept incoming peerings from rome");
    expect(refused.code).toBe(1);
    expect(await findTenantNamespace(milan.client, rome.identity.clusterId)).toBeUndefined();

    // rome lets milan peer back no more: it authenticates without handing over its own token.
    await milan.client.mergePatch(ForeignClusterResource, "rome", undefined, {
      spec: { incomingPeeringEnabled: "Auto" },
    });
    await milan.client.delete(Resources.secrets, remoteTokenSecretName(rome.identity.clusterId), "liqo");
    await rome.client.mergePatch(ForeignClusterResource, "milan", undefined, {
      spec: { incomingPeeringEnabled: "No" },
    });
    const ok = await liqoctl(rome, "peer", "milan", "--timeout=180s");
    expect(ok.err).toContain("Outgoing peering with cluster milan established");
    expect(ok.code).toBe(0);
    expect(
      await milan.client.find(Resources.secrets, remoteTokenSecretName(rome.identity.clusterId), "liqo"),
    ).toBeUndefined();
    const shortcut = await liqoctl(milan, "peer", "rome", "--timeout=60s");
    expect(shortcut.err).toContain("no auth token for rome");
    expect(shortcut.err).toContain("liqoctl generate peer-command on rome");
    expect(shortcut.code).toBe(1);
    expect((await fcOf(milan, "rome"))!.spec.outgoingPeeringEnabled).toBe("Auto");

    // Allowed again, the next authentication hands the token over.
    await rome.client.mergePatch(ForeignClusterResource, "milan", undefined, {
      spec: { incomingPeeringEnabled: "Auto" },
    });
    expect((await liqoctl(rome, "unpeer", "milan", "--timeout=180s")).code).toBe(0);
    expect((await liqoctl(rome, "peer", "milan", "--timeout=180s")).code).toBe(0);
    const kept = await milan.client.get(Resources.secrets, remoteTokenSecretName(rome.identity.clusterId), "liqo");
    expect(Buffer.from((kept.data as Record<string, string>).token!, "base64").toString()).toBe(
      (await readAuthToken(rome.client, "liqo"))!,
    );
  }, 600_000);

  test("bidirectional, Liqo's shortcut: liqoctl peer rome on milan uses the token rome handed over and gives milan a liqo-rome node", async () => {
    // This rig runs no network fabric (rome peered with --no-networking); the ForeignCluster milan's
    // side made for rome has Liqo's default, networking on.
    await milan.client.mergePatch(ForeignClusterResource, "rome", undefined, { spec: { networkingEnabled: "No" } });
    const r = await liqoctl(milan, "peer", "rome", "--timeout=180s");
    expect(r.err).toContain("outgoing peering with rome enabled");
    expect(r.err).toContain("Outgoing peering with cluster rome established: node liqo-rome is Ready");
    expect(r.code).toBe(0);
    expect(ready(await milan.client.get<Node>(Resources.nodes, "liqo-rome"))).toBe(true);
    expect((await milan.client.list(ForeignClusterResource)).items.map((f) => f.metadata.name)).toEqual(["rome"]);
    await waitFor(
      "rome's IncomingPeering Established",
      async () => cond(await fcOf(rome, "milan"), "IncomingPeering")?.status === "Established",
    );
    expect(ready(await rome.client.get<Node>(Resources.nodes, "liqo-milan"))).toBe(true);
  }, 300_000);

  test("liqoctl unpeer out-of-band (both directions) removes the virtual nodes and the token", async () => {
    const back = await liqoctl(milan, "unpeer", "out-of-band", "rome", "--timeout=180s");
    expect(back.err).toContain("Successfully unpeered from cluster rome");
    expect(back.code).toBe(0);
    expect(await milan.client.find(Resources.nodes, "liqo-rome")).toBeUndefined();
    const r = await liqoctl(rome, "unpeer", "out-of-band", "milan", "--timeout=180s");
    expect(r.err).toContain("Successfully unpeered from cluster milan");
    expect(r.code).toBe(0);
    expect(await rome.client.find(Resources.nodes, "liqo-milan")).toBeUndefined();
    expect(
      await rome.client.find(Resources.secrets, remoteTokenSecretName(milan.identity.clusterId), "liqo"),
    ).toBeUndefined();
    // Gone, or re-made by the provider side for milan's own (withdrawn) request: never peering outwards.
    const fc = await fcOf(rome, "milan");
    if (fc) expect(fc.metadata.labels?.["discovery.liqo.io/discovery-type"]).toBe("IncomingPeering");
  }, 420_000);

  test("bad arguments are refused before anything is written", async () => {
    const missing = await liqoctl(rome, "peer", "out-of-band", "milan", "--auth-url", milan.authUrl);
    expect(missing.err).toContain("--cluster-id");
    expect(missing.code).toBe(2);
    const badUrl = await liqoctl(
      rome,
      "peer",
      "out-of-band",
      "milan",
      "--auth-url",
      "http://127.0.0.1:1",
      "--cluster-id",
      milan.identity.clusterId,
      "--auth-token",
      "x",
    );
    expect(badUrl.err).toContain("must use https");
    expect(badUrl.code).toBe(2);
    const unknown = await liqoctl(rome, "unpeer", "nowhere");
    expect(unknown.err).toContain("ForeignCluster nowhere does not exist");
    expect(unknown.code).toBe(1);
    expect(
      await rome.client.find(Resources.secrets, remoteTokenSecretName(milan.identity.clusterId), "liqo"),
    ).toBeUndefined();
  });
});
