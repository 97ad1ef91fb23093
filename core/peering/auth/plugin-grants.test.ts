// applyPluginGrants against a real API server, as the provider's controller manager runs in-cluster:
// with the chart's rights (RBAC writes, escalate and bind), acting as a user of its own. A revoked kind
// it may not list or delete (no reflection.pluginRules for it) loses its rights at once, and its
// copies are deleted as soon as it may: the kind stays remembered on the role until then.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createKubeClient, type KubeClient } from "../../kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../kube/resources.ts";
import { silentLogger } from "../../log.ts";
import { startTestRig, type TestRig } from "../../../tests/rig/testing.ts";
import { waitFor } from "../../../tests/support/wait.ts";
import { GRANTED_ANNOTATION, PLUGIN_BINDING, applyPluginGrants, pluginClusterRoleName } from "./plugin-grants.ts";
import { FORWARD_VERBS, type PluginDecision } from "./plugin-rbac.ts";
import { ClusterRoleBindings, ClusterRoles, RoleBindings } from "./rbac.ts";

const USER = "liqo-grant-tester";
const PEER = "0b9c5cc8-2f7e-4d4b-9d25-6a1b1f6f0c11";
const TWIN = "twin-a";
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
const target = { clusterId: PEER, tenantNamespace: "liqo-tenant-peer", twinNamespaces: [TWIN] };
const granted: PluginDecision[] = [
  {
    grant: { name: "netpol", state: "Granted" },
    resources: [
      {
        group: "networking.k8s.io",
        version: "v1",
        kind: "NetworkPolicy",
        plural: "networkpolicies",
        verbs: FORWARD_VERBS,
      },
    ],
  },
];

let rig: TestRig;
let admin: KubeClient;
let controller: KubeClient;

const clusterRole = (name: string, rules: unknown[]) =>
  ({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name }, rules }) as KubeObject;
const bindToUser = (name: string) =>
  ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: USER }],
  }) as KubeObject;

/** Whether the API server lets the controller's user do this (RBAC changes reach the authorizer shortly after they are written). */
async function userMay(verb: string, group: string, resource: string): Promise<boolean> {
  const r = await admin.create<KubeObject & { status?: { allowed?: boolean } }>(SARs, {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SubjectAccessReview",
    metadata: {},
    spec: { user: USER, resourceAttributes: { verb, group, resource } },
  } as KubeObject);
  return r.status?.allowed === true;
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["milan"], nodes: 1 });
  admin = rig.client("milan");
  // The chart's rights for grantPeerPlugins, and nothing on NetworkPolicies.
  await admin.create(
    ClusterRoles,
    clusterRole("grant-tester", [
      {
        apiGroups: ["rbac.authorization.k8s.io"],
        resources: ["clusterroles"],
        verbs: ["get", "create", "patch", "delete", "escalate", "bind"],
      },
      {
        apiGroups: ["rbac.authorization.k8s.io"],
        resources: ["rolebindings"],
        verbs: ["get", "create", "patch", "delete"],
      },
    ]),
  );
  await admin.create(ClusterRoleBindings, bindToUser("grant-tester"));
  const kubeconfig = Bun.YAML.parse(await Bun.file(rig.clusters[0]!.kubeconfig).text()) as {
    users: { user: Record<string, unknown> }[];
  };
  for (const u of kubeconfig.users) u.user.as = USER;
  const path = join(rig.dir, "grant-tester.kubeconfig");
  writeFileSync(path, JSON.stringify(kubeconfig));
  controller = createKubeClient({ kubeconfig: path });
  await admin.create(Resources.namespaces, { metadata: { name: TWIN } } as KubeObject);
  await waitFor("the tester's rights in force", () => userMay("escalate", "rbac.authorization.k8s.io", "clusterroles"));
}, 300_000);

afterAll(async () => {
  await rig?.down();
});

test("a revoked kind the controller may not delete: rights removed at once, copies deleted once it may (reflection.pluginRules)", async () => {
  expect(await applyPluginGrants(controller, target, granted, silentLogger)).toEqual({ revoked: [], stuck: [] });
  // biome-ignore lint/suspicious/noExplicitAny: a ClusterRole read back from the API server, asserted on its rules
  expect(((await admin.get(ClusterRoles, pluginClusterRoleName(PEER))) as any).rules).toEqual([
    { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: FORWARD_VERBS },
  ]);
  expect(await admin.find(RoleBindings, PLUGIN_BINDING, TWIN)).toBeTruthy();
  // The peer's reflection made a copy.
  await admin.create(NetworkPolicies, {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: {
      name: "copy",
      namespace: TWIN,
      labels: { "liqo.io/managed-by": "reflection", "liqo.io/origin-cluster-id": PEER },
    },
    spec: { podSelector: {} },
  } as KubeObject);

  // Revoked, without the rights to list the kind: reported, the peer's rights gone, the kind remembered.
  const stuck = await applyPluginGrants(controller, target, [], silentLogger);
  expect(stuck.revoked).toEqual([]);
  expect(stuck.stuck.map((s) => s.kind)).toEqual(["NetworkPolicy"]);
  expect(stuck.stuck[0]!.error).toContain("forbidden");
  // biome-ignore lint/suspicious/noExplicitAny: a ClusterRole read back from the API server, asserted on its rules
  const role = (await admin.get(ClusterRoles, pluginClusterRoleName(PEER))) as any;
  expect(role.rules ?? []).toEqual([]);
  expect(JSON.parse(role.metadata.annotations[GRANTED_ANNOTATION]).map((r: { kind: string }) => r.kind)).toEqual([
    "NetworkPolicy",
  ]);
  expect(await admin.find(NetworkPolicies, "copy", TWIN)).toBeTruthy();
  // A second pass, still without the rights, still remembers it.
  expect((await applyPluginGrants(controller, target, [], silentLogger)).stuck.map((s) => s.kind)).toEqual([
    "NetworkPolicy",
  ]);

  // The fix (the chart's reflection.pluginRules): the next pass deletes the copy, then the role and its binding.
  await admin.create(
    ClusterRoles,
    clusterRole("grant-tester-netpol", [
      { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: ["list", "delete"] },
    ]),
  );
  await admin.create(ClusterRoleBindings, bindToUser("grant-tester-netpol"));
  await waitFor("list on NetworkPolicies in force", () => userMay("list", "networking.k8s.io", "networkpolicies"));
  expect(await applyPluginGrants(controller, target, [], silentLogger)).toEqual({
    revoked: ["NetworkPolicy"],
    stuck: [],
  });
  expect(await admin.find(NetworkPolicies, "copy", TWIN)).toBeUndefined();
  expect(await admin.find(ClusterRoles, pluginClusterRoleName(PEER))).toBeUndefined();
  expect(await admin.find(RoleBindings, PLUGIN_BINDING, TWIN)).toBeUndefined();
  // Nothing left to do: one read, no write.
  expect(await applyPluginGrants(controller, target, [], silentLogger)).toEqual({ revoked: [], stuck: [] });
}, 120_000);
