// The provider's API server restarted mid-negotiation: rome has authenticated with milan and its
// ResourceRequest has reached milan, but no offer exists yet (milan's ResourceRequest controller is
// held), when milan's kube-apiserver is stopped and started again. Once it is back the peering
// converges by itself (the liqoctl started before the restart succeeds), and every object of the
// peering exists exactly once on each side.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ForeignClusterResource, ResourceOfferResource, ResourceRequestResource } from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { findTenantNamespace } from "../../core/peering/auth/index.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { restartApiServer } from "../rig/cluster.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import { generatedPeerCommand, liqoctl, startLiqoSide, type LiqoSide } from "./peering-rig.ts";
import { cond } from "../support/peering.ts";

let rig: TestRig;
let rome: LiqoSide;
let milan: LiqoSide;

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1 });
  [rome, milan] = await Promise.all([
    startLiqoSide(rig, "rome", {}, { provider: false }),
    startLiqoSide(rig, "milan", {}, { consumer: false }),
  ]);
}, 600_000);

afterAll(async () => {
  await rome?.stop();
  await milan?.stop();
  await rig?.down();
});

const names = async (c: KubeClient, res: ResourceRef, labelSelector?: string) =>
  (await c.list(res, { labelSelector })).items.map((o) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`).sort();

test("milan's API server restarted after authentication and before the offer: the peering converges with no duplicates", async () => {
  await milan.pauseOffers();
  const args = await generatedPeerCommand(milan);
  const peering = liqoctl(rome, ...args, "--timeout=300s");

  // After authentication: rome holds an identity and its ResourceRequest is in its tenant namespace on milan.
  const tenant = await waitFor(
    "rome's ResourceRequest on milan",
    async () => {
      const ns = await findTenantNamespace(milan.client, rome.identity.clusterId);
      if (!ns) return undefined;
      const rrs = await milan.client.list(ResourceRequestResource, { namespace: ns.metadata.name });
      return rrs.items.length > 0 && ns.metadata.name!;
    },
    { timeoutMs: 180_000 },
  );
  expect(
    cond(await rome.client.find<ForeignClusterObject>(ForeignClusterResource, "milan"), "AuthenticationStatus")?.status,
  ).toBe("Established");
  // Before the offer: none exists on either side.
  expect((await milan.client.list(ResourceOfferResource)).items).toEqual([]);
  expect((await rome.client.list(ResourceOfferResource)).items).toEqual([]);

  await restartApiServer(rig.clusters.find((c) => c.name === "milan")!, rig.bin);
  await milan.resumeOffers();

  const r = await peering;
  expect(r.err).toContain("Outgoing peering with cluster milan established: node liqo-milan is Ready");
  expect(r.code).toBe(0);
  // Wait until the acceptance has gone round (the consumer's status copied back to milan's offer).
  await waitFor(
    "the accepted offer on milan",
    async () => {
      const offers = (
        await milan.client.list<KubeObject & { status?: { phase?: string; virtualKubeletStatus?: string } }>(
          ResourceOfferResource,
        )
      ).items;
      return offers.some((o) => o.status?.phase === "Accepted" && o.status.virtualKubeletStatus === "Created");
    },
    { timeoutMs: 120_000 },
  );

  const romeId = `discovery.liqo.io/cluster-id=${rome.identity.clusterId}`;
  const milanId = `discovery.liqo.io/cluster-id=${milan.identity.clusterId}`;
  const fc = await rome.client.get<ForeignClusterObject>(ForeignClusterResource, "milan");
  const local = fc.status!.tenantNamespace!.local!;
  expect({
    milan: {
      tenantNamespaces: await names(milan.client, Resources.namespaces, `${romeId},discovery.liqo.io/tenant-namespace`),
      serviceAccounts: await names(milan.client, Resources.serviceAccounts, romeId),
      resourceRequests: await names(milan.client, ResourceRequestResource),
      resourceOffers: await names(milan.client, ResourceOfferResource),
      foreignClusters: await names(milan.client, ForeignClusterResource),
    },
    rome: {
      tenantNamespaces: await names(rome.client, Resources.namespaces, `${milanId},discovery.liqo.io/tenant-namespace`),
      identities: await names(rome.client, Resources.secrets, `${milanId},liqo.io/identity=remote`),
      resourceRequests: await names(rome.client, ResourceRequestResource),
      resourceOffers: await names(rome.client, ResourceOfferResource),
      foreignClusters: await names(rome.client, ForeignClusterResource),
      virtualNodes: await names(rome.client, Resources.nodes, "liqo.io/type=virtual-node"),
    },
  }).toEqual({
    milan: {
      tenantNamespaces: [`/${tenant}`],
      serviceAccounts: [`${tenant}/liqo-remote-${rome.identity.clusterId}`],
      resourceRequests: [`${tenant}/${(await rome.client.list(ResourceRequestResource)).items[0]?.metadata.name}`],
      resourceOffers: [`${tenant}/milan`],
      foreignClusters: ["/rome"],
    },
    rome: {
      tenantNamespaces: [`/${local}`],
      identities: [`${local}/remote-identity-${milan.identity.clusterId}`],
      resourceRequests: [`${local}/${(await rome.client.list(ResourceRequestResource)).items[0]?.metadata.name}`],
      resourceOffers: [`${local}/milan`],
      foreignClusters: ["/milan"],
      virtualNodes: ["/liqo-milan"],
    },
  });
}, 600_000);
