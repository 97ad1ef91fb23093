// Applies the provider's decision on a peer's reflector plugins (plugin-rbac.ts): one ClusterRole
// per peer holding exactly the granted rules, bound by a RoleBinding in each of the peer's twin
// namespaces and nowhere else. A kind that is no longer granted loses its rule, and the copies the
// peer's reflection made of it in its twin namespaces are deleted here, by the provider: the peer
// may no longer touch them, and nothing a removed plugin wrote may stay behind.
import { DISCOVERY_CLUSTER_ID_LABEL } from "../../apis/labels.ts";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import type { KubeObject, ResourceRef } from "../../kube/resources.ts";
import type { Logger } from "../../log.ts";
import type { GrantedResource, PluginDecision } from "./plugin-rbac.ts";
import { AUTH_FIELD_MANAGER, ClusterRoles, MANAGED_BY, REMOTE_SA_PREFIX, RoleBindings } from "./rbac.ts";

/** Ours: the rules a peer's reflector plugins were granted (bound only in its twin namespaces). */
export const pluginClusterRoleName = (clusterId: string) => `${REMOTE_SA_PREFIX}${clusterId}-plugins`;
/** The RoleBinding of that ClusterRole in each twin namespace. */
export const PLUGIN_BINDING = "liqo-remote-plugins";
/** On the ClusterRole: the granted resources with their versions, to know what a later decision revokes. */
export const GRANTED_ANNOTATION = "liqo.io/reflector-plugin-resources";
const REFLECTION_LABELS = "liqo.io/managed-by=reflection";

const idLabels = (clusterId: string) => ({ ...MANAGED_BY, [DISCOVERY_CLUSTER_ID_LABEL]: clusterId });

function grantedOf(role: KubeObject | undefined): GrantedResource[] {
  try {
    return JSON.parse(role?.metadata.annotations?.[GRANTED_ANNOTATION] ?? "[]");
  } catch {
    return [];
  }
}

/** Binds (or unbinds, when the peer has no granted plugin) the plugin ClusterRole in one twin namespace. */
export async function bindPluginRole(
  client: KubeClient,
  clusterId: string,
  twinNamespace: string,
  tenantNamespace: string,
): Promise<void> {
  const role = await client.find(ClusterRoles, pluginClusterRoleName(clusterId));
  if (!role) {
    await client.delete(RoleBindings, PLUGIN_BINDING, twinNamespace);
    return;
  }
  await client.apply(
    RoleBindings,
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: PLUGIN_BINDING, namespace: twinNamespace, labels: idLabels(clusterId) },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: pluginClusterRoleName(clusterId) },
      subjects: [{ kind: "ServiceAccount", name: `${REMOTE_SA_PREFIX}${clusterId}`, namespace: tenantNamespace }],
    },
    { fieldManager: AUTH_FIELD_MANAGER, force: true },
  );
}

export interface PluginGrantTarget {
  clusterId: string;
  tenantNamespace: string;
  /** The peer's twin namespaces here (labelled with its ID and managed by liqo). */
  twinNamespaces: string[];
}

export interface AppliedGrants {
  /** Kinds no longer granted whose copies are gone. */
  revoked: string[];
  /** Kinds no longer granted whose copies could not be deleted (kept on the role's annotation, retried next pass). */
  stuck: { kind: string; error: string }[];
}

/**
 * Makes the peer's plugin ClusterRole and its bindings say what `decisions` granted, and deletes
 * the reflected copies of every kind no longer granted. Idempotent. A revoked kind stays on the
 * role's annotation (not in its rules) until its copies are gone, so a deletion that failed (this
 * controller may not list or delete the kind: chart value reflection.pluginRules) is retried.
 */
export async function applyPluginGrants(
  client: KubeClient,
  t: PluginGrantTarget,
  decisions: PluginDecision[],
  log: Logger,
): Promise<AppliedGrants> {
  const name = pluginClusterRoleName(t.clusterId);
  const granted = decisions.flatMap((d) => d.resources);
  let existing: KubeObject | undefined;
  try {
    existing = await client.find(ClusterRoles, name);
  } catch (err) {
    // Installed without reflection.grantPeerPlugins, the controller manager may not read roles, so it
    // never wrote one: with nothing to grant there is nothing to do (and nothing to warn about).
    if (!granted.length && err instanceof KubeApiError && err.status === 403) return { revoked: [], stuck: [] };
    if (err instanceof KubeApiError && err.status === 403)
      throw new Error(
        `${err.message}; granting peers' reflector plugins needs the chart value reflection.grantPeerPlugins=true`,
      );
    throw err;
  }
  const before = grantedOf(existing);
  // The common case, a peer without plugins: one read, no writes (bindings follow the role, twin-binder.ts).
  if (!granted.length && !existing) return { revoked: [], stuck: [] };
  const revoked = before.filter((b) => !granted.some((g) => g.group === b.group && g.plural === b.plural));
  const writeRole = (remembered: GrantedResource[]) =>
    client.apply(
      ClusterRoles,
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: {
          name,
          labels: idLabels(t.clusterId),
          annotations: {
            [GRANTED_ANNOTATION]: JSON.stringify(remembered),
            "liqo.io/reflector-plugins": decisions
              .filter((d) => d.resources.length)
              .map((d) => d.grant.name)
              .join(","),
          },
        },
        rules: granted.map((g) => ({ apiGroups: [g.group], resources: [g.plural], verbs: g.verbs })),
      },
      { fieldManager: AUTH_FIELD_MANAGER, force: true },
    );
  // Rules are narrowed before any copy is deleted: the peer cannot write them back.
  if (granted.length || revoked.length) await writeRole([...granted, ...revoked]);
  else await client.delete(ClusterRoles, name); // a role left with nothing to remember: its bindings go below
  for (const ns of t.twinNamespaces) await bindPluginRole(client, t.clusterId, ns, t.tenantNamespace);
  if (!revoked.length) return { revoked: [], stuck: [] };
  const stuck: AppliedGrants["stuck"] = [];
  const kept: GrantedResource[] = [];
  for (const r of revoked) {
    const ref: ResourceRef = { group: r.group, version: r.version, kind: r.kind, plural: r.plural, namespaced: true };
    try {
      for (const ns of t.twinNamespaces) {
        const copies = await client.list(ref, {
          namespace: ns,
          labelSelector: `${REFLECTION_LABELS},liqo.io/origin-cluster-id=${t.clusterId}`,
        });
        for (const c of copies.items) await client.delete(ref, c.metadata.name!, ns, { uid: c.metadata.uid });
        if (copies.items.length)
          log.info("reflected copies of a revoked plugin kind deleted", {
            remoteClusterId: t.clusterId,
            key: ns,
            kind: r.kind,
            count: copies.items.length,
          });
      }
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) continue; // the kind is no longer served here: no copy left
      stuck.push({ kind: r.kind, error: (err as Error).message });
      kept.push(r);
    }
  }
  const remembered = [...granted, ...kept];
  if (remembered.length) await writeRole(remembered);
  else {
    await client.delete(ClusterRoles, name);
    for (const ns of t.twinNamespaces) await bindPluginRole(client, t.clusterId, ns, t.tenantNamespace);
  }
  return { revoked: revoked.filter((r) => !kept.includes(r)).map((r) => r.kind), stuck };
}
