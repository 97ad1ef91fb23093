// liqoctl install / uninstall on a rig cluster with the repository's chart and the real helm.
// The rig's nodes are kwok's: they report the chart's pods Running without pulling the image
// (which cannot be built here), so "Running" proves scheduling and the manifests, not the program.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ForeignClusterResource,
  NamespaceOffloadingResource,
  ServiceExportResource,
  ServiceImportResource,
} from "../../core/apis/index.ts";
import { sampleForeignCluster } from "../../core/apis/samples.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { findHelm, releaseStatus } from "../../cli/install/helm.ts";
import { probeLoadBalancer } from "../../cli/install/load-balancer.ts";
import { createInformer } from "../../core/kube/informer.ts";
import type { Service } from "../../core/kube/types.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { checkoutVersion } from "../rig/images.ts";
import { waitFor } from "../support/wait.ts";
import { liqoctl, run } from "./liqoctl-run.ts";

let rig: TestRig;
let client: KubeClient;
let kubeconfig: string;
let podCIDR: string;
let serviceCIDR: string;
let server: string;
const helm = findHelm();
const tmp = mkdtempSync(join(tmpdir(), "liqoctl-install-test-"));

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["rome"], nodes: 1 });
  client = rig.client("rome");
  ({ kubeconfig, podCIDR, serviceCIDR, server } = rig.clusters[0]!);
}, 600_000);

afterAll(async () => {
  await rig?.down();
  rmSync(tmp, { recursive: true, force: true });
});

const kube = () => ["--kubeconfig", kubeconfig];

describe("liqoctl install", () => {
  test("kubeadm on a cluster without kubeadm's traces: detects the service CIDR, asks for --pod-cidr", async () => {
    const r = await liqoctl(["install", "kubeadm", ...kube()]);
    expect(r.stderr).toContain(
      "liqoctl install kubeadm could not detect the pod CIDR of this cluster; pass --pod-cidr (the --cluster-cidr of kube-controller-manager",
    );
    expect(r.stderr).toContain(`service CIDR ${serviceCIDR} from servicecidr/kubernetes`);
    expect(r.stderr).toContain("the nodes' pod ranges are");
    expect(r.code).toBe(2);
  });

  test("--only-output-values writes the values and installs nothing", async () => {
    const path = join(tmp, "values.yaml");
    const r = await liqoctl([
      "install",
      "generic",
      ...kube(),
      "--pod-cidr",
      podCIDR,
      "--reserved-subnets",
      "192.168.0.0/16",
      "--enable-ha",
      "--only-output-values",
      "--dump-values-path",
      path,
      "--set",
      "debug=true",
      "--set",
      "clusterLabels.team=blue green",
    ]);
    expect(r.code).toBe(0);
    // The values file holds what liqoctl generated; the command it prints keeps the --set flags.
    expect(r.stderr).toContain(
      `helm upgrade --install liqo <chart> --namespace liqo --values ${path} --set debug=true --set 'clusterLabels.team=blue green'`,
    );
    const uid = (await client.get(Resources.namespaces, "kube-system")).metadata.uid;
    // biome-ignore lint/suspicious/noExplicitAny: chart values parsed from YAML, walked by path
    const values = Bun.YAML.parse(await Bun.file(path).text()) as Record<string, any>;
    expect(values.clusterId).toBe(uid);
    expect(values.clusterName).toMatch(/^[a-z]+-[a-z]+$/); // generated from the ID, as liqo auth does
    expect(values.networking).toEqual({ podCIDR, serviceCIDR, reservedSubnets: ["192.168.0.0/16"] });
    expect(values.controllerManager).toEqual({ replicas: 2 });
    expect(values.gateway.replicas).toBe(2);
    // No load balancer controller on the rig: nothing touched the probe Service within 5 s.
    expect(r.stderr).toContain("auth and gateway Services fall back to NodePort");
    expect(values.auth.service.type).toBe("NodePort");
    expect(values.gateway.service.type).toBe("NodePort");
    expect(await releaseStatus(helm, "liqo", { kubeconfig, namespace: "liqo" })).toBeUndefined();
  }, 120_000);

  test("an install that cannot become ready within --timeout is rolled back by Helm", async () => {
    // No node carries this label, so the Deployments' pods stay Pending until the timeout.
    const r = await liqoctl([
      "install",
      "generic",
      ...kube(),
      "--pod-cidr",
      podCIDR,
      "--cluster-name",
      "rome",
      "--set",
      "pod.nodeSelector.liqo-test/none=x",
      "--timeout",
      "20s",
    ]);
    expect(r.stderr).toContain("liqo installation failed (not ready within --timeout 20s; Helm rolled it back)");
    expect(r.code).toBe(1);
    expect(await releaseStatus(helm, "liqo", { kubeconfig, namespace: "liqo" })).toBeUndefined();
    expect(await client.list(Resources.deployments, { namespace: "liqo" })).toMatchObject({ items: [] });
  }, 600_000);

  test("generic installs the chart with Helm; kwok runs every component's pods", async () => {
    const r = await liqoctl([
      "install",
      "generic",
      ...kube(),
      "--pod-cidr",
      podCIDR,
      "--api-server-url",
      server,
      "--cluster-name",
      "rome",
      "--cluster-labels",
      "topology.liqo.io/region=south",
      "--sharing-percentage",
      "40",
      "--set",
      "auth.replicas=2",
      "--timeout",
      "8m",
    ]);
    expect(r.stderr).toContain("liqo installed in namespace liqo (cluster rome)");
    expect(r.code).toBe(0);
    expect(await releaseStatus(helm, "liqo", { kubeconfig, namespace: "liqo" })).toBe("deployed");
    const identity = await client.get<KubeObject & { data: Record<string, string> }>(
      Resources.configMaps,
      "liqo-clusterid-configmap",
      "liqo",
    );
    expect(identity.data).toEqual({
      CLUSTER_ID: (await client.get(Resources.namespaces, "kube-system")).metadata.uid!,
      CLUSTER_NAME: "rome",
      CLUSTER_LABELS: JSON.stringify({ "liqo.io/provider": "generic", "topology.liqo.io/region": "south" }),
      SHARING_PERCENTAGE: "40",
    });
    const auth = await client.get<
      KubeObject & { spec: { replicas: number; template: { spec: { containers: { args: string[] }[] } } } }
    >(Resources.deployments, "liqo-auth", "liqo");
    expect(auth.spec.replicas).toBe(2);
    expect(auth.spec.template.spec.containers[0]!.args).toContain(server);
    const pods = await waitFor(
      "every liqo pod Running",
      async () => {
        const list = (
          await client.list<KubeObject & { status?: { phase?: string } }>(Resources.pods, { namespace: "liqo" })
        ).items;
        const components = new Set(
          list.filter((p) => p.status?.phase === "Running").map((p) => p.metadata.labels?.["app.kubernetes.io/name"]),
        );
        return (
          ["auth", "controller-manager", "gateway", "network-manager", "webhook", "route"].every((c) =>
            components.has(`liqo-${c}`),
          ) && list
        );
      },
      { timeoutMs: 180_000 },
    );
    expect(pods.length).toBe(7); // auth ×2, one of each other Deployment, the route DaemonSet on the one node
  }, 600_000);

  test("version reports the installed server", async () => {
    const r = await liqoctl(["version", ...kube()]);
    expect(r.stdout).toContain(
      `Server version: ${checkoutVersion()} (cluster rome, id ${(await client.get(Resources.namespaces, "kube-system")).metadata.uid})`,
    );
  });

  test("a second install upgrades in place and keeps the identity, and the values of the first install it does not restate", async () => {
    const r = await liqoctl([
      "install",
      "generic",
      ...kube(),
      "--pod-cidr",
      podCIDR,
      "--cluster-name",
      "rome",
      "--sharing-percentage",
      "50",
      "--timeout",
      "8m",
    ]);
    expect(r.stderr).toContain("liqo upgraded in namespace liqo");
    // Restated flags with their values are no change; the one changed flag is shown before applying.
    expect(r.stderr).toContain("its values stay, except\n  sharingPercentage: 40 → 50\n");
    expect(r.code).toBe(0);
    const identity = await client.get<KubeObject & { data: Record<string, string> }>(
      Resources.configMaps,
      "liqo-clusterid-configmap",
      "liqo",
    );
    // The first install's labels and --set auth.replicas=2 were not restated: they stay.
    expect(identity.data).toMatchObject({
      CLUSTER_NAME: "rome",
      CLUSTER_LABELS: JSON.stringify({ "liqo.io/provider": "generic", "topology.liqo.io/region": "south" }),
      SHARING_PERCENTAGE: "50",
    });
    const auth = await client.get<KubeObject & { spec: { replicas: number } }>(
      Resources.deployments,
      "liqo-auth",
      "liqo",
    );
    expect(auth.spec.replicas).toBe(2);
  }, 600_000);
});

/**
 * Plays a load balancer controller on the probe Services, as the cloud providers' service
 * controller does: a finalizer first, then (unless `address` is undefined) an address after
 * `addressAfterMs`. Returns a function that stops it and removes its finalizers.
 */
async function fakeLoadBalancerController(o: { address?: string; addressAfterMs: number; namespace: string }) {
  const FINALIZER = "service.kubernetes.io/load-balancer-cleanup";
  const timers: Timer[] = [];
  const work: Promise<unknown>[] = [];
  const services = createInformer<Service>({ client, resource: Resources.services, namespace: o.namespace });
  const patch = (name: string, body: unknown, subresource?: string) =>
    work.push(client.mergePatch(Resources.services, name, o.namespace, body, subresource).catch(() => undefined));
  services.on({
    add: (svc) => {
      if (svc.spec?.type !== "LoadBalancer") return;
      const name = svc.metadata.name!;
      patch(name, { metadata: { finalizers: [FINALIZER] } });
      if (o.address) {
        const ingress = [{ ip: o.address }];
        timers.push(
          setTimeout(() => patch(name, { status: { loadBalancer: { ingress } } }, "status"), o.addressAfterMs),
        );
      }
    },
    // Deleted by the probe: the controller's clean-up is done, its finalizer goes.
    update: (_old, svc) => {
      if (svc.metadata.deletionTimestamp && svc.metadata.finalizers?.includes(FINALIZER))
        patch(svc.metadata.name!, { metadata: { finalizers: null } });
    },
  });
  services.start();
  await services.waitForSync();
  return async () => {
    for (const t of timers) clearTimeout(t);
    await Promise.all(work);
    await services.stop();
  };
}

describe("the load balancer probe (liqoctl install's choice between LoadBalancer and NodePort)", () => {
  const probesLeft = async (namespace: string) =>
    (await client.list<Service>(Resources.services, { namespace })).items.filter((x) =>
      x.metadata.name!.startsWith("liqoctl-lb-probe-"),
    );

  test("no controller touches the probe Service: NodePort after the quiet period, the probe deleted", async () => {
    const got = await probeLoadBalancer(client, { quietMs: 2_000, timeoutMs: 600_000 });
    expect(got.available).toBe(false);
    expect(got.note).toBe(
      "no load balancer controller touched a probe LoadBalancer Service within 2s: auth and gateway Services fall back to NodePort; force it with --set auth.service.type=LoadBalancer",
    );
    expect(await probesLeft("default")).toEqual([]);
  }, 60_000);

  test("a controller that adds its finalizer and gives an address only after the quiet period: LoadBalancer", async () => {
    await client.create(Resources.namespaces, { metadata: { name: "lb-slow" } });
    const stop = await fakeLoadBalancerController({
      namespace: "lb-slow",
      address: "192.0.2.10",
      addressAfterMs: 4_000,
    });
    try {
      const got = await probeLoadBalancer(client, { namespace: "lb-slow", quietMs: 1_000, timeoutMs: 60_000 });
      expect(got).toEqual({
        available: true,
        note: "a load balancer is available (a probe Service got 192.0.2.10): auth and gateway Services are LoadBalancer",
      });
      await waitFor("the probe Service gone once its finalizer is removed", async () =>
        (await probesLeft("lb-slow")).length === 0 ? true : undefined,
      );
    } finally {
      await stop();
    }
  }, 120_000);

  test("a controller that answers but never gives an address: NodePort after the timeout, naming what it saw", async () => {
    await client.create(Resources.namespaces, { metadata: { name: "lb-stuck" } });
    const stop = await fakeLoadBalancerController({ namespace: "lb-stuck", addressAfterMs: 0 });
    try {
      const got = await probeLoadBalancer(client, { namespace: "lb-stuck", quietMs: 1_000, timeoutMs: 3_000 });
      expect(got.available).toBe(false);
      expect(got.note).toBe(
        "a load balancer controller answered the probe Service (finalizer service.kubernetes.io/load-balancer-cleanup) but gave no address within 3s: auth and gateway Services fall back to NodePort; force it with --set auth.service.type=LoadBalancer",
      );
      await waitFor("the probe Service gone once its finalizer is removed", async () =>
        (await probesLeft("lb-stuck")).length === 0 ? true : undefined,
      );
    } finally {
      await stop();
    }
  }, 120_000);

  test("the probe Service cannot be created (no such namespace): NodePort, and the refusal named", async () => {
    const got = await probeLoadBalancer(client, { namespace: "no-such-namespace" });
    expect(got.available).toBe(false);
    expect(got.note).toContain(
      "could not create a LoadBalancer Service in namespace no-such-namespace to check for a load balancer",
    );
    expect(got.note).toContain("using NodePort");
  });
});

describe("liqoctl uninstall", () => {
  test("is refused while a ForeignCluster has a peering or a namespace is offloaded, naming each and the fix", async () => {
    await client.create(ForeignClusterResource, sampleForeignCluster() as KubeObject);
    await client.create(Resources.namespaces, { metadata: { name: "liqo-demo" } });
    await client.create(NamespaceOffloadingResource, {
      apiVersion: "offloading.liqo.io/v1alpha1",
      kind: "NamespaceOffloading",
      metadata: { name: "offloading", namespace: "liqo-demo" },
      spec: {},
    });
    const r = await liqoctl(["uninstall", ...kube()]);
    expect(r.stderr).toContain("liqo cannot be uninstalled while it is in use:");
    expect(r.stderr).toContain("ForeignCluster milan has an active peering: run liqoctl unpeer milan");
    expect(r.stderr).toContain(
      "namespace liqo-demo is offloaded (NamespaceOffloading liqo-demo/offloading): run liqoctl unoffload namespace liqo-demo",
    );
    expect(r.code).toBe(1);
    expect(await releaseStatus(helm, "liqo", { kubeconfig, namespace: "liqo" })).toBe("deployed");
    await client.delete(NamespaceOffloadingResource, "offloading", "liqo-demo");
    await client.mergePatch(ForeignClusterResource, "milan", undefined, { spec: { outgoingPeeringEnabled: "No" } });
  });

  test("without --purge removes the release and keeps the identity for a reinstall", async () => {
    const r = await liqoctl(["uninstall", ...kube(), "--timeout", "5m"]);
    expect(r.stderr).toContain("liqo uninstalled from namespace liqo");
    expect(r.code).toBe(0);
    expect(await releaseStatus(helm, "liqo", { kubeconfig, namespace: "liqo" })).toBeUndefined();
    expect(await client.list(Resources.deployments, { namespace: "liqo" })).toMatchObject({ items: [] });
    expect(
      (
        await client.get<KubeObject & { data: Record<string, string> }>(
          Resources.configMaps,
          "liqo-clusterid-configmap",
          "liqo",
        )
      ).data.CLUSTER_NAME,
    ).toBe("rome");
  }, 600_000);

  test("--purge leaves no liqo CRD, namespace, cluster role or webhook behind", async () => {
    // What the auth service creates at run time (not Helm's) must go too.
    await client.create(Resources.clusterRoles, {
      metadata: { name: "liqo-remote-peering-basic", labels: { "app.kubernetes.io/managed-by": "liqo-auth" } },
      rules: [],
    } as KubeObject);
    await client.create(Resources.namespaces, {
      metadata: { name: "liqo-tenant-milan-3f1c2a", labels: { "discovery.liqo.io/tenant-namespace": "true" } },
    });
    // The MCS API: liqo's derived ServiceImport goes, another implementation's and the user's
    // ServiceExport stay, and so do the CRDs (not liqo's).
    await client.create(Resources.namespaces, { metadata: { name: "mcs-demo" } });
    const si = (name: string, managedBy: string) =>
      client.create(ServiceImportResource, {
        apiVersion: "multicluster.x-k8s.io/v1alpha1",
        kind: "ServiceImport",
        metadata: { name, namespace: "mcs-demo", labels: { "app.kubernetes.io/managed-by": managedBy } },
        spec: { type: "ClusterSetIP", ports: [{ port: 80, protocol: "TCP" }] },
      } as KubeObject);
    await si("ours", "liqo-mcs");
    await si("theirs", "submariner");
    await client.create(ServiceExportResource, {
      apiVersion: "multicluster.x-k8s.io/v1alpha1",
      kind: "ServiceExport",
      metadata: { name: "web", namespace: "mcs-demo" },
    } as KubeObject);
    const r = await liqoctl(["uninstall", "--purge", ...kube(), "--timeout", "5m"]);
    expect(r.stderr).toContain("liqo purged");
    expect(r.code).toBe(0);
    const imports = (await client.list(ServiceImportResource, { namespace: "mcs-demo" })).items;
    expect(imports.map((i) => i.metadata.name)).toEqual(["theirs"]);
    expect(await client.find(ServiceExportResource, "web", "mcs-demo")).toBeDefined();
    const crds = (
      await client.list<KubeObject & { spec: { group: string } }>(Resources.customResourceDefinitions)
    ).items.filter((c) => c.spec.group.endsWith("liqo.io"));
    expect(crds.map((c) => c.metadata.name)).toEqual([]);
    const namespaces = (await client.list(Resources.namespaces)).items.map((n) => n.metadata.name!);
    expect(namespaces.filter((n) => n === "liqo" || n.startsWith("liqo-tenant-"))).toEqual([]);
    const roles = (await client.list(Resources.clusterRoles)).items.map((c) => c.metadata.name!);
    expect(roles.filter((n) => n.startsWith("liqo"))).toEqual([]);
    const hooks = await run([
      join(helm, "../kubectl"),
      "--kubeconfig",
      kubeconfig,
      "get",
      "mutatingwebhookconfigurations",
      "-o",
      "name",
    ]);
    expect(hooks.stdout).not.toContain("liqo");
  }, 600_000);
});
