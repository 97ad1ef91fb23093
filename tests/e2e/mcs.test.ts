// The Multi-Cluster Services API (core/mcs, docs/mcs.md) on two real API servers from the rig, with
// overlapping pod CIDRs and a one-way peering (rome consumes milan): exports reach the other
// cluster both ways through the peering's tenant namespace in milan; the ServiceImport, its derived
// Service and the EndpointSlices labelled per KEP-1645; addresses remapped as the fabric remaps
// them; a conflict reported on both ServiceExports; bad input; a peer whose policy forbids imports;
// unexport cleaning up everywhere. The MCS controllers run in the test process, as the controller
// manager runs them. DNS and traffic through the clusterset IP come with real nodes (later).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  ExportedServiceResource,
  ForeignClusterResource,
  NetworkConfigResource,
  ServiceExportResource,
  ServiceImportResource,
  type MetaCondition,
} from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import type { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { carrierName, createMcsController, derivedServiceName, type McsController } from "../../core/mcs/index.ts";
import { createRegistry, type Registry } from "../../core/metrics/index.ts";
import { findTenantNamespace } from "../../core/peering/auth/index.ts";
import { startRole } from "../quickstart/roles.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { cond } from "../support/peering.ts";
import { waitFor } from "../support/wait.ts";
import { generatedPeerCommand, liqoctl, startLiqoSide, type LiqoSide } from "./peering-rig.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { peerClient, readIdentity } from "../../core/peering/foreigncluster/secrets.ts";

let rig: TestRig;
let rome: LiqoSide;
let milan: LiqoSide;
/** A second provider of rome: what it exports reaches rome, not milan (no transitive clusterset). */
let naples: LiqoSide;
const mcs: McsController[] = [];
/** rome's metrics registry (rome's controller is mcs[0]). */
let romeMetrics: Registry;
/** naples runs MCS as users do: `liqo controller-manager --controllers=mcs`, a process; its admin API. */
let naplesAdmin: string;
/** milan's tenant namespace for rome: where both meet. */
let tenant: string;

type SvcImport = KubeObject & {
  spec: { type: string; ports: { name?: string; protocol?: string; port: number }[]; ips?: string[] };
  status?: { clusters?: { cluster: string }[]; conditions?: MetaCondition[] };
};
type Slice = KubeObject & { endpoints?: { addresses: string[] }[] };
type Pod = KubeObject & { status?: { phase?: string; podIP?: string } };
type SvcExport = KubeObject & { status?: { conditions?: MetaCondition[] } };

const FM = { fieldManager: "e2e" };

beforeAll(async () => {
  rig = await startTestRig({ clusters: 3, names: ["rome", "milan", "naples"], nodes: 1, overlappingPodCidrs: true });
  [rome, milan, naples] = await Promise.all([
    startLiqoSide(rig, "rome", {}, { provider: false }),
    startLiqoSide(rig, "milan", {}, { consumer: false }),
    startLiqoSide(rig, "naples", {}, { consumer: false }),
  ]);
  for (const provider of [milan, naples]) {
    const r = await liqoctl(rome, ...(await generatedPeerCommand(provider)), "--timeout=180s");
    if (r.code !== 0) throw new Error(`peering with ${provider.name} failed: ${r.err}`);
  }
  tenant = (await findTenantNamespace(milan.client, rome.identity.clusterId))!.metadata.name!;
  await waitFor("milan to see the incoming peering established", async () => {
    const fc = (await milan.client.list<ForeignClusterObject>(ForeignClusterResource)).items.find(
      (f) => f.spec.clusterIdentity?.clusterID === rome.identity.clusterId,
    );
    return cond(fc, "IncomingPeering")?.status === "Established" && fc?.status?.tenantNamespace?.local === tenant;
  });
  romeMetrics = createRegistry();
  const naplesCluster = rig.clusters.find((c) => c.name === "naples")!;
  naplesAdmin = (
    await startRole(rig, "naples/controller-manager", [
      "controller-manager",
      `--kubeconfig=${naplesCluster.kubeconfig}`,
      `--cluster-id=${naples.identity.clusterId}`,
      "--cluster-name=naples",
      "--controllers=mcs",
    ])
  ).admin;
  for (const side of [rome, milan]) {
    const c = createMcsController({
      client: side.client,
      localClusterId: side.identity.clusterId,
      resyncMs: 3000,
      ...(side === rome ? { registry: romeMetrics } : {}),
    });
    await c.start();
    mcs.push(c);
  }
  for (const side of [rome, milan, naples])
    for (const ns of ["shop", "solo"])
      await side.client.apply(
        Resources.namespaces,
        { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } },
        FM,
      );
}, 600_000);

afterAll(async () => {
  for (const c of mcs) await c.stop();
  await rome?.stop();
  await milan?.stop();
  await naples?.stop();
  await rig?.down();
});

/** A Deployment on the kwok node and its Service. */
async function deploy(
  client: KubeClient,
  ns: string,
  name: string,
  ports: { name: string; port: number }[],
  replicas = 2,
) {
  const labels = { app: name };
  await client.apply(
    Resources.deployments,
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name, namespace: ns },
      spec: {
        replicas,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: "c", image: "nginx" }] } },
      },
    },
    FM,
  );
  await client.apply(
    Resources.services,
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: ns },
      spec: { selector: labels, ports: ports.map((p) => ({ ...p, targetPort: 8080 })) },
    },
    FM,
  );
  return waitFor(`${replicas} running pods of ${ns}/${name}`, async () => {
    const pods = (await client.list<Pod>(Resources.pods, { namespace: ns, labelSelector: `app=${name}` })).items;
    const ips = pods.filter((p) => p.status?.phase === "Running" && p.status.podIP).map((p) => p.status!.podIP!);
    return ips.length === replicas && ips.sort();
  });
}

const exportService = (client: KubeClient, ns: string, name: string) =>
  client.apply(
    ServiceExportResource,
    { apiVersion: "multicluster.x-k8s.io/v1alpha1", kind: "ServiceExport", metadata: { name, namespace: ns } },
    FM,
  );
const importOf = (client: KubeClient, ns: string, name: string) =>
  client.find<SvcImport>(ServiceImportResource, name, ns);
const importedSlices = async (client: KubeClient, ns: string, name: string) =>
  (
    await client.list<Slice>(Resources.endpointSlices, {
      namespace: ns,
      labelSelector: `multicluster.kubernetes.io/service-name=${name}`,
    })
  ).items;
const addressesFrom = (slices: Slice[], cluster: string) =>
  slices
    .filter((s) => s.metadata.labels?.["multicluster.kubernetes.io/source-cluster"] === cluster)
    .flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses))
    .sort();
const exportCondition = async (client: KubeClient, ns: string, name: string, type: string) =>
  (await client.find<SvcExport>(ServiceExportResource, name, ns))?.status?.conditions?.find((c) => c.type === type);
const clustersOf = (si: SvcImport | undefined) => (si?.status?.clusters ?? []).map((c) => c.cluster).sort();

let milanWeb: string[];
let romeApi: string[];

describe("export and import both ways over a one-way peering", () => {
  test("milan (the provider) exports shop/web: rome gets the ServiceImport, its derived Service's IP, and milan's endpoints", async () => {
    milanWeb = await deploy(milan.client, "shop", "web", [{ name: "http", port: 80 }]);
    await exportService(milan.client, "shop", "web");
    const si = await waitFor(
      "rome's ServiceImport shop/web listing milan with an IP",
      async () => {
        const si = await importOf(rome.client, "shop", "web");
        return clustersOf(si).join() === milan.identity.clusterId && si!.spec.ips?.length === 1 && si;
      },
      { describe: () => importOf(rome.client, "shop", "web") },
    );
    expect(si.spec.type).toBe("ClusterSetIP");
    expect(si.spec.ports).toEqual([{ name: "http", protocol: "TCP", port: 80 }]);
    const derived = await rome.client.get<KubeObject & { spec: { clusterIP: string; selector?: unknown } }>(
      Resources.services,
      derivedServiceName("web"),
      "shop",
    );
    expect(si.spec.ips).toEqual([derived.spec.clusterIP]);
    expect(derived.spec.selector).toBeUndefined();
    expect(derived.metadata.ownerReferences?.[0]?.uid).toBe(si.metadata.uid);
    await waitFor(
      "milan's pod IPs in rome's imported slices",
      async () =>
        addressesFrom(await importedSlices(rome.client, "shop", "web"), milan.identity.clusterId).join() ===
        milanWeb.join(),
    );
    const slice = (await importedSlices(rome.client, "shop", "web"))[0]!;
    expect(slice.metadata.labels?.["kubernetes.io/service-name"]).toBe(derivedServiceName("web"));
    // The exporter's own cluster imports it too (the KEP: every cluster of the clusterset).
    await waitFor(
      "milan's own ServiceImport",
      async () => clustersOf(await importOf(milan.client, "shop", "web")).length === 1,
    );
    const ready = await waitFor("milan's ServiceExport Ready", async () => {
      const c = await exportCondition(milan.client, "shop", "web", "Ready");
      return c?.status === "True" && c;
    });
    expect(ready.reason).toBe("Exported");
    expect(ready.message).toContain(rome.identity.clusterId);
    expect((await exportCondition(milan.client, "shop", "web", "Valid"))?.status).toBe("True");
    expect((await exportCondition(milan.client, "shop", "web", "Conflict"))?.reason).toBe("NoConflicts");
    // Published in the tenant namespace, where rome's identity reads it.
    expect(
      await milan.client.find(ExportedServiceResource, carrierName(milan.identity.clusterId, "shop", "web"), tenant),
    ).toBeDefined();
  }, 120_000);

  test("rome (the consumer) exports shop/api: pushed with its peer identity into milan's tenant namespace, imported in milan", async () => {
    romeApi = await deploy(rome.client, "shop", "api", [{ name: "grpc", port: 9000 }]);
    await exportService(rome.client, "shop", "api");
    await waitFor("rome's push in milan's tenant namespace", () =>
      milan.client.find(ExportedServiceResource, carrierName(rome.identity.clusterId, "shop", "api"), tenant),
    );
    await waitFor(
      "milan's ServiceImport shop/api with rome's endpoints",
      async () =>
        clustersOf(await importOf(milan.client, "shop", "api")).join() === rome.identity.clusterId &&
        addressesFrom(await importedSlices(milan.client, "shop", "api"), rome.identity.clusterId).join() ===
          romeApi.join(),
    );
  }, 90_000);

  test("with the fabric remapping rome's pod CIDR in milan (overlapping CIDRs), milan's slices hold the remapped addresses", async () => {
    const romeCidr = rig.clusters.find((c) => c.name === "rome")!.podCIDR;
    // The NetworkConfig the network manager would hold for rome, with the remapping it chose.
    const nc = await milan.client.create(NetworkConfigResource, {
      apiVersion: "net.liqo.io/v1alpha1",
      kind: "NetworkConfig",
      metadata: {
        name: "mcs-e2e-rome",
        namespace: "default",
        labels: { "liqo.io/originID": rome.identity.clusterId, "liqo.io/replicated": "true" },
      },
      spec: {
        cluster: { clusterID: rome.identity.clusterId, clusterName: "rome" },
        podCIDR: romeCidr,
        externalCIDR: "10.251.0.0/16",
        endpointIP: "172.18.0.3",
        backendType: "wireguard",
        backend_config: {},
      },
    } as KubeObject);
    await milan.client.mergePatch(
      NetworkConfigResource,
      nc.metadata.name!,
      "default",
      { status: { processed: true, podCIDRNAT: "10.250.0.0/16", externalCIDRNAT: "10.252.0.0/16" } },
      "status",
    );
    const prefix = Number(romeCidr.split("/")[1]);
    expect(prefix).toBeGreaterThanOrEqual(16);
    const remapped = romeApi.map((ip) => `10.250.${ip.split(".").slice(2).join(".")}`).sort();
    await waitFor(
      "rome's endpoints remapped into 10.250.0.0/16 in milan",
      async () =>
        addressesFrom(await importedSlices(milan.client, "shop", "api"), rome.identity.clusterId).join() ===
        remapped.join(),
      {
        describe: async () => addressesFrom(await importedSlices(milan.client, "shop", "api"), rome.identity.clusterId),
      },
    );
    // rome's own view of its endpoints is never remapped.
    await waitFor(
      "rome's own import keeps its addresses",
      async () =>
        addressesFrom(await importedSlices(rome.client, "shop", "api"), rome.identity.clusterId).join() ===
        romeApi.join(),
    );
    await milan.client.delete(NetworkConfigResource, nc.metadata.name!, "default");
  }, 90_000);
});

describe("what the controller shows", () => {
  test("rome's admin view and metrics: one outgoing channel per provider, its imports and exports", async () => {
    const status = mcs[0]!.status();
    expect(status.state).toBe("running");
    expect(status.channels.map((c) => `${c.peer}/${c.direction}/${c.export}/${c.import}`).sort()).toEqual(
      [`${milan.identity.clusterId}/outgoing/true/true`, `${naples.identity.clusterId}/outgoing/true/true`].sort(),
    );
    expect(status.imports.map((i) => i.key)).toContain("shop/web");
    expect(status.exports).toContainEqual({ key: "shop/api", valid: "True" });
    const text = await romeMetrics.expose();
    expect(text).toContain(
      `liqo_mcs_peer_channels{remote_cluster_id="${milan.identity.clusterId}",direction="outgoing",export="true",import="true"} 1`,
    );
    expect(text).toContain('liqo_mcs_service_exports{valid="True"} 1');
    expect(text).toMatch(/liqo_mcs_service_imports [1-9]/);
  });

  test("naples' controller manager process serves the same view: an incoming channel from rome", async () => {
    const view = (await (await fetch(`${naplesAdmin}/views/mcs`)).json()) as {
      state: string;
      defaultPolicy: string;
      channels: { peer: string; direction: string }[];
    };
    expect(view.state).toBe("running");
    expect(view.defaultPolicy).toBe("ExportAndImport");
    expect(view.channels.map((c) => `${c.peer}/${c.direction}`)).toEqual([`${rome.identity.clusterId}/incoming`]);
  });
});

describe("headless, namespace sameness, three clusters", () => {
  test("a headless Service is imported as Headless: no clusterset IP, a headless derived Service", async () => {
    await deploy(milan.client, "shop", "db", [{ name: "pg", port: 5432 }], 1);
    await milan.client.apply(
      Resources.services,
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "db-headless", namespace: "shop" },
        spec: { clusterIP: "None", selector: { app: "db" }, ports: [{ name: "pg", port: 5432 }] },
      },
      FM,
    );
    await exportService(milan.client, "shop", "db-headless");
    const si = await waitFor("rome's Headless import", async () => {
      const si = await importOf(rome.client, "shop", "db-headless");
      return si?.spec.type === "Headless" && clustersOf(si).length === 1 && si;
    });
    expect(si.spec.ips).toBeUndefined();
    const derived = await rome.client.get<KubeObject & { spec: { clusterIP: string } }>(
      Resources.services,
      derivedServiceName("db-headless"),
      "shop",
    );
    expect(derived.spec.clusterIP).toBe("None");
    await milan.client.delete(ServiceExportResource, "db-headless", "shop");
  }, 60_000);

  test("a namespace only the exporter has: pushed, but imported in milan only once milan has the namespace (never created for a peer)", async () => {
    await rome.client.apply(
      Resources.namespaces,
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "late" } },
      FM,
    );
    await deploy(rome.client, "late", "jobs", [{ name: "http", port: 80 }], 1);
    await exportService(rome.client, "late", "jobs");
    await waitFor("rome's push of late/jobs", () =>
      milan.client.find(ExportedServiceResource, carrierName(rome.identity.clusterId, "late", "jobs"), tenant),
    );
    await waitFor(
      "rome's export Ready",
      async () => (await exportCondition(rome.client, "late", "jobs", "Ready"))?.status === "True",
    );
    expect(await milan.client.find(Resources.namespaces, "late")).toBeUndefined();
    expect(await importOf(milan.client, "late", "jobs")).toBeUndefined();
    await milan.client.apply(
      Resources.namespaces,
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "late" } },
      FM,
    );
    await waitFor(
      "milan imports late/jobs once the namespace exists",
      async () => clustersOf(await importOf(milan.client, "late", "jobs")).join() === rome.identity.clusterId,
    );
    await rome.client.delete(ServiceExportResource, "jobs", "late");
  }, 60_000);

  test("naples (rome's second provider) exports shop/cache: rome imports it, milan does not; rome's exports reach naples", async () => {
    const cache = await deploy(naples.client, "shop", "cache", [{ name: "redis", port: 6379 }], 1);
    await exportService(naples.client, "shop", "cache");
    await waitFor(
      "rome imports naples' cache",
      async () =>
        addressesFrom(await importedSlices(rome.client, "shop", "cache"), naples.identity.clusterId).join() ===
        cache.join(),
    );
    await waitFor(
      "naples imports rome's api",
      async () => clustersOf(await importOf(naples.client, "shop", "api")).join() === rome.identity.clusterId,
    );
    // milan and naples are not peered: each sees only what its peer rome exports.
    await waitFor("naples' export Ready, sent to rome only", async () => {
      const c = await exportCondition(naples.client, "shop", "cache", "Ready");
      return c?.status === "True" && c.message.includes(rome.identity.clusterId);
    });
    expect(await importOf(milan.client, "shop", "cache")).toBeUndefined();
    expect(await importOf(naples.client, "shop", "web")).toBeUndefined();
    await naples.client.delete(ServiceExportResource, "cache", "shop");
    await waitFor("rome's cache import gone", async () => !(await importOf(rome.client, "shop", "cache")));
  }, 60_000);
});

describe("conflicts (KEP: the oldest export wins)", () => {
  test("rome exports shop/web later with another port: both ServiceExports report PortConflict, the import keeps milan's port, endpoints from both", async () => {
    const romeWeb = await deploy(rome.client, "shop", "web", [{ name: "http", port: 8081 }], 1);
    await exportService(rome.client, "shop", "web");
    for (const [side, other] of [
      [rome, milan],
      [milan, rome],
    ] as const) {
      const c = await waitFor(
        `${side.name}'s Conflict condition`,
        async () => {
          const c = await exportCondition(side.client, "shop", "web", "Conflict");
          return c?.status === "True" && c;
        },
        { describe: () => exportCondition(side.client, "shop", "web", "Conflict") },
      );
      expect(c.reason).toBe("PortConflict");
      expect(c.message).toContain(`cluster ${milan.identity.clusterId} exported first`);
      const si = await waitFor(`${side.name}'s import from both`, async () => {
        const si = await importOf(side.client, "shop", "web");
        return clustersOf(si).length === 2 && si;
      });
      expect(si.status!.clusters!.map((x) => x.cluster)).toEqual([milan.identity.clusterId, rome.identity.clusterId]);
      expect(si.spec.ports).toEqual([{ name: "http", protocol: "TCP", port: 80 }]);
      void other;
    }
    // rome's EndpointSlice controller may list its pod a moment after the export: its endpoints follow.
    await waitFor("both clusters' endpoints in milan's slices", async () => {
      const slices = await importedSlices(milan.client, "shop", "web");
      return (
        addressesFrom(slices, rome.identity.clusterId).join() === romeWeb.join() &&
        addressesFrom(slices, milan.identity.clusterId).join() === milanWeb.join()
      );
    });
  }, 120_000);
});

describe("bad input", () => {
  test("a ServiceExport of a Service that does not exist: Valid=False NoService naming the fix, nothing exported; creating the Service fixes it", async () => {
    await exportService(rome.client, "shop", "ghost");
    const c = await waitFor("Valid=False", async () => {
      const c = await exportCondition(rome.client, "shop", "ghost", "Valid");
      return c?.status === "False" && c;
    });
    expect(c.reason).toBe("NoService");
    expect(c.message).toContain("create a Service named ghost in shop, or delete this ServiceExport");
    expect((await exportCondition(rome.client, "shop", "ghost", "Ready"))?.status).toBe("False");
    // The condition is written after the push: nothing was pushed, nothing imported.
    expect(
      await milan.client.find(ExportedServiceResource, carrierName(rome.identity.clusterId, "shop", "ghost"), tenant),
    ).toBeUndefined();
    expect(await importOf(milan.client, "shop", "ghost")).toBeUndefined();
    await deploy(rome.client, "shop", "ghost", [{ name: "http", port: 80 }], 1);
    await waitFor(
      "ghost imported in milan once its Service exists",
      async () => clustersOf(await importOf(milan.client, "shop", "ghost")).length === 1,
    );
    await rome.client.delete(ServiceExportResource, "ghost", "shop");
    await waitFor("ghost's import gone", async () => !(await importOf(milan.client, "shop", "ghost")));
  }, 90_000);

  test("malformed ServiceExport and ServiceImport are refused by the API server (CRD validation), naming the field", async () => {
    const refused = async (p: Promise<unknown>) => {
      try {
        await p;
        return undefined;
      } catch (err) {
        return err as KubeApiError;
      }
    };
    const badImport = await refused(
      rome.client.create(ServiceImportResource, {
        apiVersion: "multicluster.x-k8s.io/v1alpha1",
        kind: "ServiceImport",
        metadata: { name: "bad", namespace: "shop" },
        spec: { type: "Sometimes", ports: [{ port: "eighty" }] },
      } as KubeObject),
    );
    expect(badImport?.status).toBe(422);
    expect(badImport?.message).toContain("spec.type");
    const badExport = await refused(
      rome.client.create(ServiceExportResource, {
        apiVersion: "multicluster.x-k8s.io/v1alpha1",
        kind: "ServiceExport",
        metadata: { name: "bad", namespace: "shop" },
        spec: { exportedLabels: "all" },
      } as KubeObject),
    );
    expect(badExport?.status).toBe(422);
    expect(badExport?.message).toContain("spec.exportedLabels");
  });
});

describe("least privilege", () => {
  test("rome's peer identity writes ExportedServices in its tenant namespace in milan, and nowhere else", async () => {
    const fc = await rome.client.get<ForeignClusterObject>(ForeignClusterResource, "milan");
    const identity = (await readIdentity(rome.client, fc.status!.tenantNamespace!.local!, milan.identity.clusterId))!;
    expect(identity.remoteNamespace).toBe(tenant);
    const peer = peerClient(identity.kubeconfig);
    const carrier = (namespace: string) =>
      ({
        apiVersion: "multicluster.liqo.io/v1alpha1",
        kind: "ExportedService",
        metadata: { name: "probe", namespace },
        spec: {
          serviceNamespace: "shop",
          serviceName: "probe",
          exportedAt: "2026-01-01T00:00:00Z",
          type: "ClusterSetIP",
          ports: [],
          slices: [],
        },
      }) as KubeObject;
    const status = (p: Promise<unknown>) =>
      p.then(
        () => 200,
        (err) => (err as KubeApiError).status,
      );
    expect(await status(peer.create(ExportedServiceResource, carrier("shop")))).toBe(403);
    expect(await status(peer.list(ServiceImportResource, { namespace: "shop" }))).toBe(403);
    expect(await status(peer.create(ExportedServiceResource, carrier(tenant)))).toBe(200);
    await peer.delete(ExportedServiceResource, "probe", tenant);
  });
});

describe("a peer whose policy forbids imports gets nothing", () => {
  test("rome marks milan ExportOnly: rome's imports of milan's services go, milan still imports rome's", async () => {
    await deploy(milan.client, "solo", "only-milan", [{ name: "http", port: 80 }], 1);
    await exportService(milan.client, "solo", "only-milan");
    await waitFor("rome imports solo/only-milan", async () => !!(await importOf(rome.client, "solo", "only-milan")));
    await rome.client.mergePatch(ForeignClusterResource, "milan", undefined, {
      metadata: { annotations: { "mcs.liqo.io/peer-policy": "ExportOnly" } },
    });
    await waitFor(
      "rome's import of only-milan removed",
      async () => !(await importOf(rome.client, "solo", "only-milan")),
    );
    await waitFor(
      "rome's shop/web import lists rome only",
      async () => clustersOf(await importOf(rome.client, "shop", "web")).join() === rome.identity.clusterId,
    );
    expect(addressesFrom(await importedSlices(rome.client, "shop", "web"), milan.identity.clusterId)).toEqual([]);
    expect(clustersOf(await importOf(milan.client, "shop", "api"))).toEqual([rome.identity.clusterId]);
    await rome.client.mergePatch(ForeignClusterResource, "milan", undefined, {
      metadata: { annotations: { "mcs.liqo.io/peer-policy": null } },
    });
    await waitFor("rome imports only-milan again", async () => !!(await importOf(rome.client, "solo", "only-milan")));
  }, 90_000);

  test("rome marks milan ImportOnly: rome's pushes leave milan's tenant namespace and milan's imports of them go", async () => {
    await rome.client.mergePatch(ForeignClusterResource, "milan", undefined, {
      metadata: { annotations: { "mcs.liqo.io/peer-policy": "ImportOnly" } },
    });
    await waitFor(
      "rome's push of shop/api withdrawn",
      async () =>
        !(await milan.client.find(
          ExportedServiceResource,
          carrierName(rome.identity.clusterId, "shop", "api"),
          tenant,
        )),
    );
    await waitFor("milan's import of shop/api gone", async () => !(await importOf(milan.client, "shop", "api")));
    expect(!!(await importOf(rome.client, "solo", "only-milan"))).toBe(true);
    await rome.client.mergePatch(ForeignClusterResource, "milan", undefined, {
      metadata: { annotations: { "mcs.liqo.io/peer-policy": null } },
    });
    await waitFor("milan imports shop/api again", async () => !!(await importOf(milan.client, "shop", "api")));
  }, 90_000);
});

describe("an export in a namespace the peering does not cover", () => {
  test("rome scopes milan to shop: its export in solo reaches naples, not milan, and says why; milan's solo service leaves rome", async () => {
    await rome.client.mergePatch(ForeignClusterResource, "milan", undefined, {
      metadata: { annotations: { "mcs.liqo.io/namespaces": "shop" } },
    });
    await waitFor(
      "rome's import of milan's solo/only-milan gone",
      async () => !(await importOf(rome.client, "solo", "only-milan")),
    );
    await deploy(rome.client, "solo", "lonely", [{ name: "http", port: 80 }], 1);
    await exportService(rome.client, "solo", "lonely");
    const ready = await waitFor("the Ready condition naming the uncovered peering", async () => {
      const c = await exportCondition(rome.client, "solo", "lonely", "Ready");
      return c?.message.includes("not among those") && c;
    });
    expect(ready.status).toBe("True"); // naples covers every namespace
    expect(ready.message).toContain(naples.identity.clusterId);
    expect(ready.message).toContain(`the peering with ${milan.identity.clusterId} covers`);
    expect(ready.message).toContain("mcs.liqo.io/namespaces");
    await waitFor("naples imports solo/lonely", async () => !!(await importOf(naples.client, "solo", "lonely")));
    expect(
      await milan.client.find(ExportedServiceResource, carrierName(rome.identity.clusterId, "solo", "lonely"), tenant),
    ).toBeUndefined();
    expect(await importOf(milan.client, "solo", "lonely")).toBeUndefined();
    // shop is still exchanged with milan.
    expect(clustersOf(await importOf(milan.client, "shop", "api"))).toEqual([rome.identity.clusterId]);
    await rome.client.delete(ServiceExportResource, "lonely", "solo");
    await rome.client.mergePatch(ForeignClusterResource, "milan", undefined, {
      metadata: { annotations: { "mcs.liqo.io/namespaces": null } },
    });
    await waitFor("rome imports only-milan again", async () => !!(await importOf(rome.client, "solo", "only-milan")));
  }, 90_000);
});

describe("unexport", () => {
  test("deleting milan's ServiceExport removes milan's endpoints everywhere; the last unexport removes the import, its Service and slices", async () => {
    await milan.client.delete(ServiceExportResource, "web", "shop");
    await waitFor(
      "rome's shop/web import without milan",
      async () => clustersOf(await importOf(rome.client, "shop", "web")).join() === rome.identity.clusterId,
    );
    await waitFor(
      "milan's endpoints gone from rome's slices",
      async () =>
        addressesFrom(await importedSlices(rome.client, "shop", "web"), milan.identity.clusterId).length === 0,
    );
    await waitFor(
      "milan's carrier gone",
      async () =>
        !(await milan.client.find(
          ExportedServiceResource,
          carrierName(milan.identity.clusterId, "shop", "web"),
          tenant,
        )),
    );
    expect((await exportCondition(rome.client, "shop", "web", "Conflict"))?.status).toBe("False");
    await rome.client.delete(ServiceExportResource, "web", "shop");
    for (const side of [rome, milan]) {
      await waitFor(
        `${side.name}: no shop/web import, derived Service or slices`,
        async () =>
          !(await importOf(side.client, "shop", "web")) &&
          !(await side.client.find(Resources.services, derivedServiceName("web"), "shop")) &&
          (await importedSlices(side.client, "shop", "web")).length === 0,
      );
    }
    await waitFor(
      "rome's push of web gone",
      async () =>
        !(await milan.client.find(
          ExportedServiceResource,
          carrierName(rome.identity.clusterId, "shop", "web"),
          tenant,
        )),
    );
  }, 90_000);
});

describe("the end of a peering", () => {
  test("rome unpeers naples: each loses the other's services, nothing of the exchange is left in naples", async () => {
    await naples.client.apply(
      ServiceExportResource,
      {
        apiVersion: "multicluster.x-k8s.io/v1alpha1",
        kind: "ServiceExport",
        metadata: { name: "cache", namespace: "shop" },
      },
      FM,
    );
    await waitFor("rome imports naples' cache", async () => !!(await importOf(rome.client, "shop", "cache")));
    await waitFor("naples imports rome's api", async () => !!(await importOf(naples.client, "shop", "api")));
    const naplesTenant = (await findTenantNamespace(naples.client, rome.identity.clusterId))!.metadata.name!;
    const r = await liqoctl(rome, "unpeer", "naples", "--timeout=180s");
    expect(r.code).toBe(0);
    await waitFor("rome's cache import gone", async () => !(await importOf(rome.client, "shop", "cache")));
    await waitFor("naples' api import gone", async () => !(await importOf(naples.client, "shop", "api")));
    await waitFor(
      "naples' tenant namespace for rome gone, with the ExportedServices in it",
      async () => !(await naples.client.find(Resources.namespaces, naplesTenant)),
    );
    expect((await naples.client.list(ExportedServiceResource)).items).toEqual([]);
  }, 240_000);
});
