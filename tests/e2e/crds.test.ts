// The Liqo v0.5 CRDs on a real API server: they install and become Established, reinstall without
// change, accept a Liqo-shaped object of every kind and return it with the same defaults our
// parsers fill, reject what Liqo's CRDs reject, and print the columns Liqo's documentation shows.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { upgradeCrds } from "../../cli/install/crd-upgrade.ts";
import { allCrds, CrdInstallError, installCrds } from "../../core/apis/crds.ts";
import type { CustomResourceDefinition } from "../../core/apis/define.ts";
import { ForeignClusterResource, parseForeignCluster } from "../../core/apis/discovery/foreigncluster.ts";
import { NamespaceOffloadingResource } from "../../core/apis/index.ts";
import { allKinds } from "../../core/apis/kinds.ts";
import {
  sampleForeignCluster,
  sampleForeignClusterStatus,
  sampleNamespaceOffloadingStatus,
  samples,
} from "../../core/apis/samples.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { kubectlAt } from "../support/kubectl.ts";

let rig: TestRig;
let client: KubeClient;

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, nodes: 1 });
  client = rig.client(rig.clusters[0]!.name);
  for (const name of ["liqo-demo", "liqo-tenant-milan-3f1c2a"]) {
    await client.create(Resources.namespaces, { metadata: { name } });
  }
}, 600_000);

afterAll(async () => {
  await rig?.down();
});

type Crd = CustomResourceDefinition & { status?: { conditions?: { type: string; status: string }[] } };

/** The same request as the client's, asking for the Table rendering kubectl prints. */
async function getTable(
  path: string,
): Promise<{ columnDefinitions: { name: string; priority: number }[]; rows: { cells: unknown[] }[] }> {
  const { server, headers, tls } = await client.endpoint();
  const res = await fetch(server + path, {
    headers: { ...headers, accept: "application/json;as=Table;v=v1;g=meta.k8s.io" },
    tls,
  });
  const body = await res.text();
  expect({ status: res.status, body: res.ok ? "" : body }).toEqual({ status: 200, body: "" });
  return JSON.parse(body);
}

describe("installCrds", () => {
  test("applies every CRD and returns once each is Established and served", async () => {
    const names = await installCrds(client, { timeoutMs: 60_000 });
    expect(names).toEqual(allCrds.map((c) => c.metadata.name));
    for (const name of names) {
      const crd = await client.get<Crd>(Resources.customResourceDefinitions, name);
      expect({ name, established: crd.status?.conditions?.find((c) => c.type === "Established")?.status }).toEqual({
        name,
        established: "True",
      });
      expect((crd.metadata.managedFields as { manager: string }[]).map((m) => m.manager)).toContain("liqo");
    }
    for (const kind of allKinds) {
      expect(await client.resourceFor(kind.apiVersion, kind.kind)).toEqual(kind.resource);
    }
  });

  test("is idempotent: a second install changes nothing", async () => {
    const before = await Promise.all(
      allCrds.map((c) => client.get(Resources.customResourceDefinitions, c.metadata.name)),
    );
    await installCrds(client, { timeoutMs: 60_000 });
    const after = await Promise.all(
      allCrds.map((c) => client.get(Resources.customResourceDefinitions, c.metadata.name)),
    );
    expect(after.map((c) => [c.metadata.name, c.metadata.resourceVersion])).toEqual(
      before.map((c) => [c.metadata.name, c.metadata.resourceVersion]),
    );
  });

  test("names the CRD whose names clash and why", async () => {
    // "offer" is already the short name of resourceoffers.sharing.liqo.io.
    const clash = structuredClone(allCrds.find((c) => c.spec.names.kind === "ResourceOffer")!);
    clash.metadata.name = "offers.sharing.liqo.io";
    Object.assign(clash.spec.names, { kind: "Offer", listKind: "OfferList", plural: "offers", singular: "offer2" });
    try {
      const err = await installCrds(client, { crds: [clash], timeoutMs: 30_000 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(CrdInstallError);
      expect((err as CrdInstallError).crd).toBe("offers.sharing.liqo.io");
      expect((err as CrdInstallError).message).toContain("was not accepted");
      expect((err as CrdInstallError).message).toContain("offer");
    } finally {
      await client.delete(Resources.customResourceDefinitions, clash.metadata.name);
    }
  });

  test("a CRD the server refuses is reported by name with the server's reason", async () => {
    const bad = structuredClone(allCrds[0]!);
    bad.metadata.name = "wrongname.discovery.liqo.io";
    const err = await installCrds(client, { crds: [bad], timeoutMs: 10_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CrdInstallError);
    expect((err as CrdInstallError).crd).toBe("wrongname.discovery.liqo.io");
    expect((err as CrdInstallError).reason).toBe("Invalid");
    expect((err as CrdInstallError).message).toContain("cannot apply CRD wrongname.discovery.liqo.io");
  });
});

describe.each(allKinds.map((k) => k.kind))("a %s", (kindName) => {
  const kind = allKinds.find((k) => k.kind === kindName)!;
  test("is created from a Liqo-shaped sample and read back with the same spec and defaults", async () => {
    const sample = samples[kindName]!();
    await client.create(kind.resource, sample);
    const back = await client.get(kind.resource, sample.metadata.name!, sample.metadata.namespace);
    expect(back.apiVersion).toBe(kind.apiVersion);
    // The server's view (after its defaulting and pruning) equals our parser's view of the input.
    expect((kind.parse(back) as KubeObject).spec).toEqual((kind.parse(sample) as KubeObject).spec);
    expect(back.spec).toEqual((kind.parse(sample) as KubeObject).spec);
  });
});

describe("status", () => {
  const cases: [kind: string, status: () => unknown][] = [
    ["ForeignCluster", sampleForeignClusterStatus],
    ["NamespaceOffloading", sampleNamespaceOffloadingStatus],
    ["ResourceOffer", () => ({})],
    ["ResourceRequest", () => ({})],
    ["NetworkConfig", () => ({ processed: true, podCIDRNAT: "10.60.0.0/16", externalCIDRNAT: "None" })],
    [
      "TunnelEndpoint",
      () => ({
        connection: { status: "Connected", statusMessage: "VPN connection established" },
        gatewayIP: "10.200.0.4",
      }),
    ],
    ["NamespaceMap", () => ({ currentMapping: { "liqo-demo": { remoteNamespace: "liqo-demo", phase: "Accepted" } } })],
  ];
  test.each(cases)(
    "of a %s is written through the status subresource with the defaults our parser fills",
    async (kindName, status) => {
      const kind = allKinds.find((k) => k.kind === kindName)!;
      const { name, namespace } = samples[kindName]!().metadata;
      const current = await client.get(kind.resource, name!, namespace);
      await client.replace(kind.resource, { ...current, status: status() }, "status");
      const back = await client.get(kind.resource, name!, namespace);
      expect(back.status).toEqual((kind.parse({ ...current, status: status() }) as KubeObject).status);
    },
  );
});

describe("the API server enforces Liqo's schema", () => {
  const invalid = async (obj: KubeObject) => {
    const err = await client.create(ForeignClusterResource, obj).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(KubeApiError);
    return err as KubeApiError;
  };

  test("an unknown peering mode is a 422 naming the field", async () => {
    const fc = sampleForeignCluster();
    fc.metadata.name = "maybe";
    fc.spec.outgoingPeeringEnabled = "Maybe";
    const err = await invalid(fc);
    expect(err.status).toBe(422);
    expect(err.message).toContain("spec.outgoingPeeringEnabled");
    expect(err.message).toContain("Maybe");
  });

  test("a missing foreignAuthUrl is a 422", async () => {
    const err = await invalid({
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ForeignCluster",
      metadata: { name: "noauth" },
      spec: { clusterIdentity: { clusterID: "x", clusterName: "x" } },
    });
    expect(err.status).toBe(422);
    expect(err.message).toContain("spec.foreignAuthUrl");
  });

  test("a minimal ForeignCluster gets the defaults parseForeignCluster fills", async () => {
    const minimal = {
      apiVersion: "discovery.liqo.io/v1alpha1",
      kind: "ForeignCluster",
      metadata: { name: "naples" },
      spec: { foreignAuthUrl: "https://auth.naples.example.com" },
    };
    await client.create(ForeignClusterResource, minimal);
    const back = await client.get(ForeignClusterResource, "naples");
    expect(back.spec).toEqual(parseForeignCluster(minimal).spec);
  });
});

describe("NamespaceOffloading's mapping strategy is immutable", () => {
  test("changing it is a 422 that says how; the pod offloading strategy may change", async () => {
    await client.create(Resources.namespaces, { metadata: { name: "immutable-demo" } });
    await client.create(NamespaceOffloadingResource, {
      apiVersion: "offloading.liqo.io/v1alpha1",
      kind: "NamespaceOffloading",
      metadata: { name: "offloading", namespace: "immutable-demo" },
      spec: { namespaceMappingStrategy: "DefaultName", podOffloadingStrategy: "LocalAndRemote" },
    });
    const err = await client
      .mergePatch(NamespaceOffloadingResource, "offloading", "immutable-demo", {
        spec: { namespaceMappingStrategy: "EnforceSameName" },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).status).toBe(422);
    expect((err as KubeApiError).message).toContain("namespaceMappingStrategy is immutable");
    expect((err as KubeApiError).message).toContain("liqoctl unoffload namespace");
    await client.mergePatch(NamespaceOffloadingResource, "offloading", "immutable-demo", {
      spec: { podOffloadingStrategy: "Remote" },
    });
    const back = await client.get<
      KubeObject & { spec: { namespaceMappingStrategy: string; podOffloadingStrategy: string } }
    >(NamespaceOffloadingResource, "offloading", "immutable-demo");
    expect(back.spec.namespaceMappingStrategy).toBe("DefaultName");
    expect(back.spec.podOffloadingStrategy).toBe("Remote");
  });
});

describe("what kubectl shows", () => {
  test("ForeignClusters list with the columns of Liqo's documentation", async () => {
    // milan's status, as a peered cluster would have it (also written by the status tests above).
    const milan0 = await client.get(ForeignClusterResource, "milan");
    await client.replace(ForeignClusterResource, { ...milan0, status: sampleForeignClusterStatus() }, "status");
    const table = await getTable("/apis/discovery.liqo.io/v1alpha1/foreignclusters");
    const shown = table.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name.toUpperCase());
    expect(shown).toEqual([
      "NAME",
      "OUTGOING PEERING",
      "INCOMING PEERING",
      "NETWORKING",
      "AUTHENTICATION",
      "DISCOVERY",
      "AGE",
    ]);
    const wide = table.columnDefinitions.filter((c) => c.priority > 0).map((c) => c.name);
    expect(wide).toEqual(["ClusterID", "ClusterName"]);
    // Rows hold a cell for every column, wide ones included; keep those kubectl shows by default.
    const milan = table.rows.find((r) => r.cells[0] === "milan");
    const visible = milan?.cells.filter((_, i) => table.columnDefinitions[i]!.priority === 0);
    expect(visible?.slice(0, 5)).toEqual(["milan", "Established", "None", "Established", "Established"]);
  });

  test("kubectl get foreignclusters prints that header", async () => {
    const cluster = rig.clusters[0]!;
    const {
      out,
      err: errOut,
      code,
    } = await kubectlAt(join(rig.bin, "kubectl"), cluster.kubeconfig, "get", "foreignclusters");
    expect(out.split("\n")[0]!.split(/\s{2,}/)).toEqual([
      "NAME",
      "OUTGOING PEERING",
      "INCOMING PEERING",
      "NETWORKING",
      "AUTHENTICATION",
      "DISCOVERY",
      "AGE",
    ]);
    expect({ code, errOut }).toEqual({ code: 0, errOut: "" });
  });

  test("short names and the liqo category are served", async () => {
    const group = await client.request<{ resources: { name: string; shortNames?: string[]; categories?: string[] }[] }>(
      "GET",
      "/apis/offloading.liqo.io/v1alpha1",
    );
    expect(group.resources.find((r) => r.name === "namespaceoffloadings")).toMatchObject({
      shortNames: ["nsof"],
      categories: ["liqo"],
    });
    const sharing = await client.request<{ resources: { name: string; shortNames?: string[] }[] }>(
      "GET",
      "/apis/sharing.liqo.io/v1alpha1",
    );
    expect(sharing.resources.find((r) => r.name === "resourceoffers")?.shortNames).toEqual(["offer"]);
  });
});

describe("an upgrade's CRDs (liqoctl install on an installed cluster: cli/install/crd-upgrade.ts)", () => {
  const widgetCrd = (versions: { name: string; storage: boolean }[], extra: Record<string, unknown> = {}) => ({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "widgets.upgrade.liqo.io" },
    spec: {
      group: "upgrade.liqo.io",
      names: { kind: "Widget", listKind: "WidgetList", plural: "widgets", singular: "widget" },
      scope: "Namespaced",
      versions: versions.map((v) => ({
        ...v,
        served: true,
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: { spec: { type: "object", properties: { size: { type: "integer" }, ...extra } } },
          },
        },
      })),
    },
  });
  const widgets = (version: string) => ({
    group: "upgrade.liqo.io",
    version,
    kind: "Widget",
    plural: "widgets",
    namespaced: true,
  });
  const chartWith = (crd: object) => {
    const dir = mkdtempSync(join(tmpdir(), "crd-upgrade-chart-"));
    mkdirSync(join(dir, "crds"));
    writeFileSync(join(dir, "crds", "widgets.yaml"), Bun.YAML.stringify(crd, null, 2));
    return dir;
  };
  type Stored = Crd & { status?: { storedVersions?: string[] } };

  test("a new storage version: the chart's CRD applied, every object written back, storedVersions migrated", async () => {
    await upgradeCrds(client, chartWith(widgetCrd([{ name: "v1alpha1", storage: true }])));
    const before: KubeObject[] = [];
    for (const [name, size] of [
      ["a", 1],
      ["b", 2],
      ["c", 3],
    ] as const)
      before.push(
        await client.create(widgets("v1alpha1"), {
          apiVersion: "upgrade.liqo.io/v1alpha1",
          kind: "Widget",
          metadata: { name, namespace: "liqo-demo" },
          spec: { size },
        }),
      );
    // The next release stores v1beta1 (v1alpha1 still served) and adds a field to the schema.
    const next = widgetCrd(
      [
        { name: "v1alpha1", storage: false },
        { name: "v1beta1", storage: true },
      ],
      { colour: { type: "string" } },
    );
    const done = await upgradeCrds(client, chartWith(next));
    expect(done.applied).toEqual(["widgets.upgrade.liqo.io"]);
    expect(done.migrated).toEqual([
      { crd: "widgets.upgrade.liqo.io", from: ["v1alpha1"], to: "v1beta1", rewritten: 3 },
    ]);
    const crd = await client.get<Stored>(Resources.customResourceDefinitions, "widgets.upgrade.liqo.io");
    expect(crd.status?.storedVersions).toEqual(["v1beta1"]);
    const schema = crd.spec.versions.find((v) => v.name === "v1beta1")!.schema.openAPIV3Schema;
    expect(JSON.stringify(schema)).toContain("colour");
    // Written back: new resourceVersions, same objects (UIDs and content), readable in both versions.
    const after = (await client.list(widgets("v1beta1"), { namespace: "liqo-demo" })).items;
    expect(after.map((o) => [o.metadata.name, o.metadata.uid, (o.spec as { size: number }).size])).toEqual(
      before.map((o) => [o.metadata.name, o.metadata.uid, (o.spec as { size: number }).size]),
    );
    for (const o of after)
      expect(o.metadata.resourceVersion).not.toBe(
        before.find((b) => b.metadata.uid === o.metadata.uid)!.metadata.resourceVersion,
      );
    expect((await client.list(widgets("v1alpha1"), { namespace: "liqo-demo" })).items).toHaveLength(3);
    // Applied by liqoctl, not by Helm: the field manager says so. A second upgrade has nothing to migrate.
    expect(JSON.stringify(crd.metadata.managedFields)).toContain('"manager":"liqoctl"');
    expect((await upgradeCrds(client, chartWith(next))).migrated).toEqual([]);
  });

  test("another project's CRD (the MCS API's) is created when absent and left to its owner when present", async () => {
    const foreign = (extra: Record<string, unknown>) => {
      const crd = widgetCrd([{ name: "v1alpha1", storage: true }], extra);
      return {
        ...crd,
        metadata: { name: "widgets.upgrade.example.io" },
        spec: { ...crd.spec, group: "upgrade.example.io" },
      };
    };
    const first = await upgradeCrds(client, chartWith(foreign({})));
    expect(first).toMatchObject({ applied: ["widgets.upgrade.example.io"], kept: [] });
    // Another implementation owns it now (here: it changed the schema); liqo's chart does not overwrite it.
    const theirs = foreign({ owner: { type: "string" } });
    await client.apply(Resources.customResourceDefinitions, theirs, { fieldManager: "someone-else", force: true });
    const next = await upgradeCrds(client, chartWith(foreign({ colour: { type: "string" } })));
    expect(next).toMatchObject({ applied: [], kept: ["widgets.upgrade.example.io"], migrated: [] });
    const live = await client.get<Crd>(Resources.customResourceDefinitions, "widgets.upgrade.example.io");
    const schema = JSON.stringify(live.spec.versions[0]!.schema);
    expect(schema).toContain("owner");
    expect(schema).not.toContain("colour");
  });

  test("a CRD the API server refuses stops the upgrade naming it, and leaves the served one as it was", async () => {
    const broken = widgetCrd([
      { name: "v1alpha1", storage: true },
      { name: "v1beta1", storage: true },
    ]);
    const err = await upgradeCrds(client, chartWith(broken)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CrdInstallError);
    expect((err as Error).message).toContain("cannot apply CRD widgets.upgrade.liqo.io");
    expect((err as Error).message).toContain("must have exactly one version marked as storage version");
    const crd = await client.get<Stored>(Resources.customResourceDefinitions, "widgets.upgrade.liqo.io");
    expect(crd.spec.versions.map((v) => [v.name, v.storage])).toEqual([
      ["v1alpha1", false],
      ["v1beta1", true],
    ]);
  });
});
