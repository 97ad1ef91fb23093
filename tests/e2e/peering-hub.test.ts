// One hub with three providers: rome (the hub) runs, for each of milan, naples and turin, the
// command `liqoctl generate peer-command` printed there, all three at once. Three Established
// ForeignClusters and three Ready virtual nodes; a namespace offloaded on the hub gets its twin in
// every provider; unpeering one provider takes its node and twin and leaves the other two as they
// were (same node and namespace UIDs). The hub runs a real `liqo controller-manager` process
// (foreigncluster and namespaceoffloading controllers): its three virtual kubelets share that
// process and its metrics registry, each series labelled with its peer. Providers run only the
// provider side (auth service, ResourceRequest and ShadowPod controllers), in this process, to
// keep CPU low.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ForeignClusterResource, NamespaceOffloadingResource } from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { findTenantNamespace } from "../../core/peering/auth/index.ts";
import { PEER_LABEL } from "../../core/peering/foreigncluster/peer-registry.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { waitFor } from "../support/wait.ts";
import {
  generatedPeerCommand,
  liqoctl,
  startConsumerProcesses,
  startLiqoSide,
  type ConsumerProcesses,
  type LiqoSide,
} from "./peering-rig.ts";
import { cond } from "../support/peering.ts";

const PROVIDERS = ["milan", "naples", "turin"] as const;
const NS = "hub-app";
let rig: TestRig;
/** The hub: liqo auth and controller-manager as processes (no in-process controllers). */
let hub: ConsumerProcesses;
let providers: LiqoSide[];
type Node = KubeObject & { status?: { conditions?: { type: string; status: string }[] } };

beforeAll(async () => {
  rig = await startTestRig({ clusters: 4, names: ["rome", ...PROVIDERS], nodes: 1 });
  providers = await Promise.all(
    PROVIDERS.map((p) => startLiqoSide(rig, p, { "topology.liqo.io/region": p }, { consumer: false })),
  );
  hub = await startConsumerProcesses(rig, "rome");
}, 600_000);

afterAll(async () => {
  await Promise.all((providers ?? []).map((p) => p.stop()));
  await rig?.down();
});

const side = (name: string) => providers.find((p) => p.name === name)!;
const ready = (n: Node | undefined) =>
  n?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
const uidOf = async (c: { client: KubeClient }, res: typeof Resources.nodes, name: string) =>
  (await c.client.find(res, name))?.metadata.uid;

describe("one hub, three providers", () => {
  test("the three generated commands, run on the hub at once, give three Established peerings and three Ready virtual nodes", async () => {
    const commands = await Promise.all(providers.map((p) => generatedPeerCommand(p)));
    const runs = await Promise.all(commands.map((args) => liqoctl(hub, ...args, "--timeout=300s")));
    for (const [i, r] of runs.entries()) {
      expect(r.err).toContain(
        `Outgoing peering with cluster ${PROVIDERS[i]} established: node liqo-${PROVIDERS[i]} is Ready`,
      );
      expect(r.code).toBe(0);
    }
    const fcs = (await hub.client.list<ForeignClusterObject>(ForeignClusterResource)).items;
    expect(fcs.map((f) => f.metadata.name).sort()).toEqual([...PROVIDERS]);
    for (const fc of fcs) {
      expect(cond(fc, "OutgoingPeering")?.status).toBe("Established");
      expect(cond(fc, "AuthenticationStatus")?.status).toBe("Established");
    }
    const nodes = (await hub.client.list<Node>(Resources.nodes, { labelSelector: "liqo.io/type=virtual-node" })).items;
    expect(nodes.map((n) => n.metadata.name).sort()).toEqual(PROVIDERS.map((p) => `liqo-${p}`));
    for (const n of nodes) {
      expect(ready(n)).toBe(true);
      // Each node carries its own provider's identity and labels, not a neighbour's.
      const p = side(n.metadata.name!.slice("liqo-".length));
      expect(n.metadata.labels?.["liqo.io/remote-cluster-id"]).toBe(p.identity.clusterId);
      expect(n.metadata.labels?.["topology.liqo.io/region"]).toBe(p.name);
    }
    // One process, three virtual kubelets: each peer's reflection metrics are its own series.
    const metrics = await (await fetch(`${hub.admin}/metrics`)).text();
    for (const p of providers) expect(metrics).toContain(`${PEER_LABEL}="${p.identity.clusterId}"`);
    // Each provider issued exactly one identity, to the hub, and sees the incoming peering.
    for (const p of providers) {
      const tenants = await p.client.list(Resources.namespaces, {
        labelSelector: "discovery.liqo.io/tenant-namespace",
      });
      expect(tenants.items.map((ns) => ns.metadata.labels?.["discovery.liqo.io/cluster-id"])).toEqual([
        hub.identity.clusterId,
      ]);
      await waitFor(
        `IncomingPeering Established on ${p.name}`,
        async () =>
          cond(await p.client.find<ForeignClusterObject>(ForeignClusterResource, "rome"), "IncomingPeering")?.status ===
          "Established",
      );
    }
  }, 600_000);

  test("a namespace offloaded on the hub gets a twin in all three providers", async () => {
    await hub.client.create(Resources.namespaces, { metadata: { name: NS } });
    const off = await liqoctl(hub, "offload", "namespace", NS, "--namespace-mapping-strategy=EnforceSameName");
    expect(off.code).toBe(0);
    for (const p of providers) {
      const twin = await waitFor(`the twin of ${NS} in ${p.name}`, () => p.client.find(Resources.namespaces, NS), {
        timeoutMs: 180_000,
      });
      expect(twin.metadata.labels?.["liqo.io/remote-cluster-id"]).toBe(hub.identity.clusterId);
    }
    await waitFor(
      "the NamespaceOffloading to report the three remote namespaces Ready",
      async () => {
        const no = await hub.client.find<
          KubeObject & { status?: { offloadingPhase?: string; remoteNamespacesConditions?: Record<string, unknown> } }
        >(NamespaceOffloadingResource, "offloading", NS);
        return (
          no?.status?.offloadingPhase === "Ready" &&
          Object.keys(no.status.remoteNamespacesConditions ?? {}).length === 3
        );
      },
      {
        timeoutMs: 180_000,
        describe: () =>
          hub.client
            .find(NamespaceOffloadingResource, "offloading", NS)
            .then((o) => (o as { status?: unknown })?.status),
      },
    );
  }, 400_000);

  test("unpeering naples removes its node and twin; milan's and turin's nodes, twins and peerings are untouched", async () => {
    const kept = providers.filter((p) => p.name !== "naples");
    const before = new Map<string, [string | undefined, string | undefined]>();
    for (const p of kept)
      before.set(p.name, [
        await uidOf(hub, Resources.nodes, `liqo-${p.name}`),
        await uidOf(p, Resources.namespaces, NS),
      ]);

    const r = await liqoctl(hub, "unpeer", "out-of-band", "naples", "--timeout=240s");
    expect(r.err).toContain("Successfully unpeered from cluster naples");
    expect(r.code).toBe(0);
    expect(await hub.client.find(Resources.nodes, "liqo-naples")).toBeUndefined();
    const naples = side("naples");
    await waitFor(
      "the twin namespace to be gone from naples",
      async () => !(await naples.client.find(Resources.namespaces, NS)),
      { timeoutMs: 180_000 },
    );
    await waitFor(
      "naples to revoke the hub's identity",
      async () => !(await findTenantNamespace(naples.client, hub.identity.clusterId)),
      { timeoutMs: 180_000 },
    );

    for (const p of kept) {
      const [nodeUid, twinUid] = before.get(p.name)!;
      expect(await uidOf(hub, Resources.nodes, `liqo-${p.name}`)).toBe(nodeUid);
      expect(ready(await hub.client.get<Node>(Resources.nodes, `liqo-${p.name}`))).toBe(true);
      expect(await uidOf(p, Resources.namespaces, NS)).toBe(twinUid);
      expect(
        cond(await hub.client.find<ForeignClusterObject>(ForeignClusterResource, p.name), "OutgoingPeering")?.status,
      ).toBe("Established");
      expect(await findTenantNamespace(p.client, hub.identity.clusterId)).toBeDefined();
    }
    const virtual = (await hub.client.list(Resources.nodes, { labelSelector: "liqo.io/type=virtual-node" })).items
      .map((n) => n.metadata.name)
      .sort();
    expect(virtual).toEqual(["liqo-milan", "liqo-turin"]);
  }, 400_000);
});
