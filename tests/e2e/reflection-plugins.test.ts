// Drop-in reflector plugins as a product feature, on two real clusters with overlapping pod CIDRs:
// rome (consumer) installs the NetworkPolicy example with liqoctl; its controller manager's
// in-process virtual kubelet for milan hot-loads it once milan granted exactly what it declares
// (visible in liqoctl status and plugin list); removing it stops it, revokes the rights and leaves
// no copy in milan. Wrong input (not wasm, too big, forbidden kinds, an unknown name) is refused
// with the fix and loses nothing. Addresses in the policies go through the fabric's translation.
// A plugin scaffolded outside the repository (liqoctl plugin init, bun install, liqoctl plugin build)
// reflects PodDisruptionBudgets in the same peering.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ResourceRequestResource, type ResourceRequest } from "../../core/apis/index.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { FORWARD_VERBS } from "../../core/peering/auth/plugin-rbac.ts";
import { PLUGIN_BINDING, pluginClusterRoleName } from "../../core/peering/auth/plugin-grants.ts";
import { ClusterRoles, RoleBindings } from "../../core/peering/auth/rbac.ts";
import { findTenantNamespace, remoteServiceAccountName } from "../../core/peering/auth/tenant.ts";
import { createReflectionEngine } from "../../core/reflection/engine/engine.ts";
import { clusterViews } from "../../core/roles/admin-views-cluster.ts";
import { MAX_PLUGIN_BYTES, PLUGIN_LABEL, pluginConfigMapName } from "../../core/reflection/store/configmap.ts";
import { translateWith, type TranslationSources } from "../../netfabric/manager/translation-watch.ts";
import { ensureBuilt, wasmPath } from "../../reflectors/build.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { pluginCli, scaffoldPluginProject } from "../support/plugin-project.ts";
import { waitFor } from "../support/wait.ts";
import { pdb, PDBS } from "../support/pdb.ts";
import { generatedPeerCommand, liqoctl, startLiqoSide, type LiqoSide } from "./peering-rig.ts";

await ensureBuilt(["networkpolicy", "fixture-forbidden"]);
const NP_WASM = wasmPath("networkpolicy");
const NS = "netpol";
const NetworkPolicies: ResourceRef = {
  group: "networking.k8s.io",
  version: "v1",
  kind: "NetworkPolicy",
  plural: "networkpolicies",
  namespaced: true,
};
const SARs: ResourceRef = {
  group: "authorization.k8s.io",
  version: "v1",
  kind: "SubjectAccessReview",
  plural: "subjectaccessreviews",
  namespaced: false,
};

let rig: TestRig;
let rome: LiqoSide;
let milan: LiqoSide;
let tenant: string;

const policy = (name: string, cidr: string): KubeObject =>
  ({
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name, namespace: NS },
    spec: {
      podSelector: { matchLabels: { app: "db" } },
      policyTypes: ["Ingress"],
      ingress: [{ from: [{ ipBlock: { cidr } }], ports: [{ port: 5432, protocol: "TCP" }] }],
    },
  }) as KubeObject;

/** What the API server of milan says rome's peer identity may do (no client of that identity needed). */
async function peerMay(verb: string, resource: string, namespace: string, group = ""): Promise<boolean> {
  const review = await milan.client.create<KubeObject & { status?: { allowed?: boolean } }>(SARs, {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SubjectAccessReview",
    metadata: {},
    spec: {
      user: `system:serviceaccount:${tenant}:${remoteServiceAccountName(rome.identity.clusterId)}`,
      groups: ["system:serviceaccounts", `system:serviceaccounts:${tenant}`],
      resourceAttributes: { verb, group, resource, namespace },
    },
  } as KubeObject);
  return review.status?.allowed === true;
}

const romeRequest = async () =>
  (
    await rome.client.list<ResourceRequest & KubeObject>(ResourceRequestResource, {
      labelSelector: "liqo.io/replication=true",
    })
  ).items[0];
const storedConfigMaps = async () =>
  (await rome.client.list(Resources.configMaps, { namespace: "liqo", labelSelector: `${PLUGIN_LABEL}=true` })).items
    .map((c) => c.metadata.name)
    .sort();

beforeAll(async () => {
  rig = await startTestRig({ clusters: 2, names: ["rome", "milan"], nodes: 1, overlappingPodCidrs: true });
  [rome, milan] = await Promise.all([
    startLiqoSide(rig, "rome", {}, { provider: false }),
    startLiqoSide(rig, "milan", {}, { consumer: false }),
  ]);
}, 600_000);

afterAll(async () => {
  await Promise.all([rome?.stop(), milan?.stop()]);
  await rig?.down();
});

describe("liqoctl plugin install refuses wrong input and stores nothing", () => {
  test("a file that is not wasm, a too-big one and a plugin asking for forbidden kinds", async () => {
    const notWasm = join(rig.dir, "script.wasm");
    writeFileSync(notWasm, "#!/bin/sh\necho hello\n");
    const a = await liqoctl(rome, "plugin", "install", notWasm);
    expect(a.err).toContain(`${notWasm} is not a valid reflector plugin, nothing was stored`);
    expect(a.err).toContain("is not a valid WebAssembly module");
    expect(a.code).toBe(1);

    const big = join(rig.dir, "big.wasm");
    writeFileSync(big, new Uint8Array(MAX_PLUGIN_BYTES + 1));
    const b = await liqoctl(rome, "plugin", "install", big);
    expect(b.err).toMatch(
      /big\.wasm is 1\.00 MiB: a plugin is stored in a ConfigMap, and Kubernetes limits a ConfigMap's data to 1 MiB/,
    );
    expect(b.code).toBe(1);
    rmSync(big);

    const c = await liqoctl(rome, "plugin", "install", wasmPath("fixture-forbidden"));
    expect(c.err).toContain("(forbidden) cannot be installed, nothing was stored");
    expect(c.err).toContain("ServiceAccounts are identities");
    expect(c.err).toContain("RBAC: a peer may not grant itself rights");
    expect(c.err).toContain("liqoctl plugin remove forbidden");
    expect(c.code).toBe(1);
    expect(await storedConfigMaps()).toEqual([]);
  }, 60_000);
});

describe("the NetworkPolicy plugin in a real peering", () => {
  test("set-up: rome peers with milan and offloads a namespace", async () => {
    const r = await liqoctl(rome, ...(await generatedPeerCommand(milan)), "--timeout=240s");
    expect(r.code).toBe(0);
    await rome.client.create(Resources.namespaces, { metadata: { name: NS } });
    const off = await liqoctl(rome, "offload", "namespace", NS, "--namespace-mapping-strategy=EnforceSameName");
    expect(off.out + off.err).toContain("Offloading of namespace netpol correctly enabled (remote namespace netpol)");
    expect(off.code).toBe(0);
    await waitFor("the twin namespace on milan", () => milan.client.find(Resources.namespaces, NS), {
      timeoutMs: 180_000,
    });
    tenant = (await findTenantNamespace(milan.client, rome.identity.clusterId))!.metadata.name!;
    // Before any plugin: the peer identity may not touch NetworkPolicies (the control for what follows).
    expect(await peerMay("create", "networkpolicies", NS, "networking.k8s.io")).toBe(false);
  }, 300_000);

  test("installed once on rome, granted by milan exactly as declared, and reflected by the virtual kubelet", async () => {
    await rome.client.create(NetworkPolicies, policy("db-from-web", "192.0.2.0/24"));
    const r = await liqoctl(rome, "plugin", "install", NP_WASM);
    expect(r.out).toContain(
      `plugin networkpolicies installed: networkpolicies 0.1.0, reflects NetworkPolicy.networking.k8s.io/v1 (forward); stored in ConfigMap liqo/${pluginConfigMapName("networkpolicies")}`,
    );
    expect(r.code).toBe(0);

    const role = await waitFor(
      "milan's plugin ClusterRole for rome",
      () => milan.client.find(ClusterRoles, pluginClusterRoleName(rome.identity.clusterId)),
      { timeoutMs: 60_000 },
    );
    // biome-ignore lint/suspicious/noExplicitAny: objects a plugin wrote (RBAC, NetworkPolicies, PDBS, views), read back and asserted on a few fields
    expect((role as any).rules).toEqual([
      { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: FORWARD_VERBS },
    ]);
    const binding = await waitFor("its RoleBinding in the twin namespace", () =>
      milan.client.find(RoleBindings, PLUGIN_BINDING, NS),
    );
    // biome-ignore lint/suspicious/noExplicitAny: objects a plugin wrote (RBAC, NetworkPolicies, PDBS, views), read back and asserted on a few fields
    expect((binding as any).roleRef.name).toBe(pluginClusterRoleName(rome.identity.clusterId));
    // Exactly there: the twin namespace, the declared kind, the needed verbs; nothing else.
    expect(await peerMay("create", "networkpolicies", NS, "networking.k8s.io")).toBe(true);
    expect(await peerMay("delete", "networkpolicies", NS, "networking.k8s.io")).toBe(true);
    expect(await peerMay("update", "networkpolicies", NS, "networking.k8s.io")).toBe(false);
    expect(await peerMay("create", "networkpolicies", "default", "networking.k8s.io")).toBe(false);
    expect(await peerMay("create", "networkpolicies", tenant, "networking.k8s.io")).toBe(false);
    expect(await peerMay("create", "serviceaccounts", NS)).toBe(false);
    expect(await peerMay("create", "roles", NS, "rbac.authorization.k8s.io")).toBe(false);

    const copy = (await waitFor(
      "the NetworkPolicy reflected into milan",
      () => milan.client.find(NetworkPolicies, "db-from-web", NS),
      { timeoutMs: 60_000 },
      // biome-ignore lint/suspicious/noExplicitAny: objects a plugin wrote (RBAC, NetworkPolicies, PDBS, views), read back and asserted on a few fields
    )) as any;
    expect(copy.metadata.labels["liqo.io/managed-by"]).toBe("reflection");
    expect(copy.metadata.labels["liqo.io/origin-cluster-id"]).toBe(rome.identity.clusterId);
    expect(copy.spec.ingress[0].from[0].ipBlock.cidr).toBe("192.0.2.0/24");
    expect(copy.spec.podSelector).toEqual({ matchLabels: { app: "db" } });

    // Hot: a policy created after the load, and an update, reach milan without a restart.
    await rome.client.create(NetworkPolicies, policy("later", "198.51.100.0/24"));
    await waitFor("a later policy reflected", () => milan.client.find(NetworkPolicies, "later", NS));
    await rome.client.mergePatch(NetworkPolicies, "db-from-web", NS, {
      spec: { ingress: [{ from: [{ ipBlock: { cidr: "203.0.113.0/24" } }] }] },
    });
    await waitFor(
      "the update reflected",
      async () =>
        // biome-ignore lint/suspicious/noExplicitAny: objects a plugin wrote (RBAC, NetworkPolicies, PDBS, views), read back and asserted on a few fields
        ((await milan.client.find(NetworkPolicies, "db-from-web", NS)) as any)?.spec?.ingress?.[0]?.from?.[0]?.ipBlock
          ?.cidr === "203.0.113.0/24",
    );

    const rr = await romeRequest();
    expect(rr!.spec.reflectorPlugins).toEqual([
      {
        name: "networkpolicies",
        version: "0.1.0",
        resources: [{ group: "networking.k8s.io", version: "v1", kind: "NetworkPolicy", direction: "forward" }],
      },
    ]);
    expect(rr!.status?.reflectorPlugins?.[0]?.state).toBe("Granted");
  }, 180_000);

  test("visible: liqoctl plugin list on rome, liqoctl status on both sides, the controller's view", async () => {
    const list = await liqoctl(rome, "plugin", "list");
    expect(list.out).toMatch(
      /networkpolicies\s+networkpolicies\s+0\.1\.0\s+NetworkPolicy\.networking\.k8s\.io\/v1 \(forward\)\s+\d+B\s+\S+: Granted/,
    );
    expect(list.code).toBe(0);
    const st = await liqoctl(milan, "status");
    expect(st.out).toContain(
      `rome (incoming): networkpolicies Granted: granted get,list,watch,create,patch,delete on networkpolicies.networking.k8s.io in the peer's twin namespaces`,
    );
    const mine = await liqoctl(rome, "status");
    expect(mine.out).toMatch(/milan \(outgoing\): networkpolicies Granted/);
    // The admin API's cluster view (every role with a client serves it; the status page shows it).
    // biome-ignore lint/suspicious/noExplicitAny: objects a plugin wrote (RBAC, NetworkPolicies, PDBS, views), read back and asserted on a few fields
    const rows = (await clusterViews(milan.client).views!["reflector-plugins"]!({ query: {} } as never)) as any[];
    expect(rows.map((r) => [r.side, r.clusterId, r.plugin, r.state])).toEqual([
      ["incoming", rome.identity.clusterId, "networkpolicies", "Granted"],
    ]);
    expect(rows[0].rules).toEqual([
      { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: FORWARD_VERBS },
    ]);
    const peer = rome.fc.peers()[0]!;
    expect(peer.plugins?.map((p) => [p.name, p.trust, p.state])).toEqual([["networkpolicies", "dropin", "ready"]]);
  }, 60_000);

  test("a hand-made plugin ConfigMap asking for forbidden kinds is refused by milan, with the reason shown on rome", async () => {
    const bytes = await Bun.file(wasmPath("fixture-forbidden")).bytes();
    await rome.client.create(Resources.configMaps, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "by-hand", namespace: "liqo", labels: { [PLUGIN_LABEL]: "true" } },
      binaryData: { "forbidden.wasm": Buffer.from(bytes).toString("base64") },
    } as KubeObject);
    const answered = await waitFor(
      "milan's answer on rome's ResourceRequest",
      async () => (await romeRequest())?.status?.reflectorPlugins?.find((g) => g.name === "forbidden"),
      { timeoutMs: 60_000 },
    );
    expect(answered.state).toBe("Refused");
    expect(answered.message).toContain("ServiceAccount (v1): ServiceAccounts are identities");
    expect(answered.message).toContain("Role (rbac.authorization.k8s.io/v1): RBAC: a peer may not grant itself rights");
    const list = await liqoctl(rome, "plugin", "list");
    expect(list.out).toMatch(/by-hand: \S+: Refused \(plugin forbidden refused: ServiceAccount/);
    // Nothing more granted, nothing loaded for it.
    expect(
      // biome-ignore lint/suspicious/noExplicitAny: objects a plugin wrote (RBAC, NetworkPolicies, PDBS, views), read back and asserted on a few fields
      ((await milan.client.find(ClusterRoles, pluginClusterRoleName(rome.identity.clusterId))) as any).rules,
    ).toHaveLength(1);
    expect(await peerMay("create", "serviceaccounts", NS)).toBe(false);
    expect(rome.fc.peers()[0]!.plugins?.map((p) => p.name)).toEqual(["networkpolicies"]);
    expect((await liqoctl(rome, "plugin", "remove", "by-hand")).code).toBe(0);
    await waitFor(
      "the refused plugin gone from the request",
      async () => !(await romeRequest())?.spec.reflectorPlugins?.some((p) => p.name === "forbidden"),
    );
  }, 90_000);

  test("removed: stopped, rights revoked, its copies deleted in milan, the local policies kept", async () => {
    const r = await liqoctl(rome, "plugin", "remove", "networkpolicies");
    expect(r.out).toContain(
      `plugin networkpolicies removed (ConfigMap liqo/${pluginConfigMapName("networkpolicies")} deleted)`,
    );
    expect(r.code).toBe(0);
    await waitFor(
      "the copies gone from milan",
      async () => (await milan.client.list(NetworkPolicies, { namespace: NS })).items.length === 0,
      { timeoutMs: 60_000 },
    );
    await waitFor(
      "the ClusterRole gone",
      async () => !(await milan.client.find(ClusterRoles, pluginClusterRoleName(rome.identity.clusterId))),
    );
    await waitFor("the RoleBinding gone", async () => !(await milan.client.find(RoleBindings, PLUGIN_BINDING, NS)));
    expect(await peerMay("create", "networkpolicies", NS, "networking.k8s.io")).toBe(false);
    expect(rome.fc.peers()[0]!.plugins).toEqual([]);
    expect(
      (await rome.client.list(NetworkPolicies, { namespace: NS })).items.map((p) => p.metadata.name).sort(),
    ).toEqual(["db-from-web", "later"]);
    expect(await storedConfigMaps()).toEqual([]);

    const again = await liqoctl(rome, "plugin", "remove", "networkpolicies");
    expect(again.err).toContain(
      "no reflector plugin named networkpolicies is installed in namespace liqo (installed: none); see liqoctl plugin list",
    );
    expect(again.code).toBe(1);
  }, 120_000);
});

describe("a plugin written outside the repository (liqoctl plugin init), in the same peering", () => {
  test("scaffolded, built and installed on rome: milan gets the PodDisruptionBudgets, and loses them when it is removed", async () => {
    const parent = mkdtempSync(join(tmpdir(), "liqo-pdb-plugin-"));
    try {
      const dir = await scaffoldPluginProject(parent, "pdbs", "policy/v1/PodDisruptionBudget");
      const built = await pluginCli(dir, "build");
      expect(built.out).toContain("built build/pdbs.wasm");
      expect(built.code).toBe(0);
      await rome.client.create(PDBS, pdb("web", NS, 1, { app: "web" }));
      const r = await liqoctl(rome, "plugin", "install", join(dir, "build/pdbs.wasm"));
      expect(r.out).toContain("plugin pdbs installed: pdbs 0.1.0, reflects PodDisruptionBudget.policy/v1 (forward)");
      expect(r.code).toBe(0);

      const copy = (await waitFor(
        "the PodDisruptionBudget reflected into milan",
        () => milan.client.find(PDBS, "web", NS),
        { timeoutMs: 90_000 },
        // biome-ignore lint/suspicious/noExplicitAny: objects a plugin wrote (RBAC, NetworkPolicies, PDBS, views), read back and asserted on a few fields
      )) as any;
      expect(copy.metadata.labels).toEqual({
        "liqo.io/managed-by": "reflection",
        "liqo.io/origin-cluster-id": rome.identity.clusterId,
        "pdbs.liqo.io/reflected": "true",
      });
      expect(copy.spec.minAvailable).toBe(1);
      expect(copy.spec.selector).toEqual({ matchLabels: { app: "web" } });
      await rome.client.mergePatch(PDBS, "web", NS, { spec: { minAvailable: 2 } });
      await waitFor(
        "the update reflected",
        // biome-ignore lint/suspicious/noExplicitAny: objects a plugin wrote (RBAC, NetworkPolicies, PDBS, views), read back and asserted on a few fields
        async () => ((await milan.client.find(PDBS, "web", NS)) as any)?.spec?.minAvailable === 2,
      );

      expect((await liqoctl(rome, "plugin", "remove", "pdbs")).code).toBe(0);
      await waitFor("the copy gone from milan", async () => !(await milan.client.find(PDBS, "web", NS)), {
        timeoutMs: 60_000,
      });
      expect(await rome.client.find(PDBS, "web", NS)).toBeTruthy();
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  }, 240_000);
});

describe("CIDR translation on overlapping pod CIDRs", () => {
  test("the drop-in maps an ipBlock of rome's pods into the range milan sees them in", async () => {
    const podCIDR = rig.clusters.find((c) => c.name === "rome")!.podCIDR as string;
    expect(rig.clusters.find((c) => c.name === "milan")!.podCIDR).toBe(podCIDR); // overlapping: the reason to translate
    // What the network fabric records when milan remaps rome's pod CIDR (our NetworkConfig's status).
    const [a, b] = podCIDR.split(".");
    const remapped = `${a}.${Number(b) + 1}.0.0/16`;
    const sources: TranslationSources = {
      remoteClusterId: milan.identity.clusterId,
      local: {
        spec: { podCIDR, externalCIDR: "10.250.0.0/16" } as never,
        status: { processed: true, podCIDRNAT: remapped, externalCIDRNAT: "None" } as never,
      },
      remote: {
        spec: { podCIDR, externalCIDR: "10.251.0.0/16" } as never,
        status: { processed: true, podCIDRNAT: "10.252.0.0/16", externalCIDRNAT: "None" } as never,
      },
    };
    for (const c of [rome.client, milan.client])
      if (!(await c.find(Resources.namespaces, "xlate")))
        await c.create(Resources.namespaces, { metadata: { name: "xlate" } });
    const engine = createReflectionEngine({
      local: rome.client,
      remote: milan.client,
      localClusterId: rome.identity.clusterId,
      remoteClusterId: milan.identity.clusterId,
      translateIp: (ip, direction) => translateWith(sources, ip, direction),
    });
    try {
      await engine.addPlugin(await Bun.file(NP_WASM).bytes(), { trust: "dropin", source: NP_WASM });
      await engine.addNamespacePair({ localNamespace: "xlate", remoteNamespace: "xlate" });
      const subnet = `${a}.${b}.7.0/24`;
      await rome.client.create(NetworkPolicies, {
        ...policy("pods", subnet),
        metadata: { name: "pods", namespace: "xlate" },
      });
      const copy = (await waitFor(
        "the translated policy",
        () => milan.client.find(NetworkPolicies, "pods", "xlate"),
        // biome-ignore lint/suspicious/noExplicitAny: objects a plugin wrote (RBAC, NetworkPolicies, PDBS, views), read back and asserted on a few fields
      )) as any;
      expect(copy.spec.ingress[0].from[0].ipBlock.cidr).toBe(`${a}.${Number(b) + 1}.7.0/24`);
    } finally {
      await engine.stop();
    }
  }, 120_000);
});
