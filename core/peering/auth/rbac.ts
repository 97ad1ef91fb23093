// What a remote (consumer) cluster may do here, as ClusterRoles that are only ever bound in
// namespaces: its tenant namespace, and each twin namespace it offloads to. Cluster-wide it may
// only get, create and delete namespaces, and an admission policy narrows that to namespaces
// labelled with its own cluster ID. See docs/peering.md ("What a peer may do").
import type { KubeClient } from "../../kube/client.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../kube/resources.ts";
import { REMOTE_CLUSTER_ID_LABEL } from "../../apis/labels.ts";

export const ClusterRoles: ResourceRef = Resources.clusterRoles;
export const ClusterRoleBindings: ResourceRef = Resources.clusterRoleBindings;
export const RoleBindings: ResourceRef = Resources.roleBindings;
export const ValidatingAdmissionPolicies: ResourceRef = {
  group: "admissionregistration.k8s.io",
  version: "v1",
  kind: "ValidatingAdmissionPolicy",
  plural: "validatingadmissionpolicies",
  namespaced: false,
};
export const ValidatingAdmissionPolicyBindings: ResourceRef = {
  group: "admissionregistration.k8s.io",
  version: "v1",
  kind: "ValidatingAdmissionPolicyBinding",
  plural: "validatingadmissionpolicybindings",
  namespaced: false,
};

/** Liqo's name: bound in the tenant namespace when the identity is issued. */
export const PEERING_ROLE = "liqo-remote-peering-basic";
/** Liqo's name (consts.RemoteNamespaceClusterRoleName): bound in each twin namespace. */
export const TWIN_NAMESPACE_ROLE = "liqo-virtual-kubelet-remote";
/** Ours: cluster-wide, what creating and removing twin namespaces needs (narrowed by the policy). */
export const TWIN_NAMESPACES_ROLE = "liqo-remote-twin-namespaces";
export const TWIN_NAMESPACES_POLICY = "liqo-remote-twin-namespaces";
/** The ServiceAccount of a remote cluster is `liqo-remote-<clusterID>`; the policy reads the ID from it. */
export const REMOTE_SA_PREFIX = "liqo-remote-";
/** Who manages these objects (a label on every one, for listing and cleanup). */
export const MANAGED_BY = { "app.kubernetes.io/managed-by": "liqo-auth" };
const FIELD_MANAGER = "liqo-auth";

const ALL = ["get", "list", "watch", "create", "update", "patch", "delete"];
const READ = ["get", "list", "watch"];

export const peeringRules = [
  // The consumer asks for resources and follows its request's status.
  { apiGroups: ["discovery.liqo.io"], resources: ["resourcerequests", "resourcerequests/status"], verbs: ALL },
  // Network parameters are exchanged both ways through NetworkConfigs in the tenant namespace.
  { apiGroups: ["net.liqo.io"], resources: ["networkconfigs", "networkconfigs/status"], verbs: ALL },
  // The offer's spec is the provider's to write; the consumer reads it and answers in its status
  // (accepted, virtual kubelet created), which the consumer's CRD replicator copies back here.
  { apiGroups: ["sharing.liqo.io"], resources: ["resourceoffers"], verbs: READ },
  { apiGroups: ["sharing.liqo.io"], resources: ["resourceoffers/status"], verbs: ["get", "update", "patch"] },
  // Multi-Cluster Services (core/mcs): the consumer pushes the services it exports here, one
  // ExportedService each, and reads the ones the provider publishes here for it.
  { apiGroups: ["multicluster.liqo.io"], resources: ["exportedservices"], verbs: ALL },
];

export const twinNamespaceRules = [
  { apiGroups: ["virtualkubelet.liqo.io"], resources: ["shadowpods"], verbs: ALL },
  { apiGroups: [""], resources: ["configmaps", "secrets", "services", "persistentvolumeclaims"], verbs: ALL },
  { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ALL },
  { apiGroups: ["networking.k8s.io"], resources: ["ingresses"], verbs: ALL },
  // Pods are created by the provider's ShadowPod controller; the consumer reads them for status, logs
  // and exec, and deletes one itself so that the user's grace period reaches the remote pod.
  { apiGroups: [""], resources: ["pods"], verbs: [...READ, "delete"] },
  // Events of the provider's copies come home (core/virtualkubelet/events): read only.
  { apiGroups: [""], resources: ["events"], verbs: READ },
  // Logs are read with GET only (the virtual kubelet's kubectl logs); nothing lists them.
  { apiGroups: [""], resources: ["pods/log"], verbs: ["get"] },
  // Exec over WebSocket is a GET, authorised as verb get before Kubernetes 1.35 and create after it.
  { apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"] },
];

export const twinNamespacesRules = [
  // No list/watch: a peer learns nothing about namespaces it does not name; no update: it cannot relabel one.
  { apiGroups: [""], resources: ["namespaces"], verbs: ["get", "create", "delete"] },
];

/**
 * RBAC cannot bound creation or deletion by label, so an admission policy does: a remote
 * cluster's ServiceAccount may create or delete a namespace only if it carries
 * liqo.io/remote-cluster-id=<that cluster's ID> (the label Liqo puts on twin namespaces).
 */
export function twinNamespacesPolicy(): KubeObject[] {
  const label = `'${REMOTE_CLUSTER_ID_LABEL}'`;
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name: TWIN_NAMESPACES_POLICY, labels: MANAGED_BY },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [""],
              apiVersions: ["v1"],
              operations: ["CREATE", "UPDATE", "DELETE"],
              resources: ["namespaces"],
            },
          ],
        },
        matchConditions: [
          {
            name: "remote-cluster",
            expression: `request.userInfo.username.startsWith('system:serviceaccount:liqo-tenant-') && request.userInfo.username.split(':')[3].startsWith('${REMOTE_SA_PREFIX}')`,
          },
        ],
        variables: [
          {
            name: "remoteId",
            expression: `request.userInfo.username.split(':')[3].substring(${REMOTE_SA_PREFIX.length})`,
          },
          { name: "target", expression: "request.operation == 'DELETE' ? oldObject : object" },
        ],
        validations: [
          {
            expression: `has(variables.target.metadata.labels) && ${label} in variables.target.metadata.labels && variables.target.metadata.labels[${label}] == variables.remoteId`,
            messageExpression: `'remote cluster ' + variables.remoteId + ' may only create or delete namespaces labelled ${REMOTE_CLUSTER_ID_LABEL}=' + variables.remoteId + ' (its twin namespaces); ' + variables.target.metadata.name + ' is not one'`,
            reason: "Forbidden",
          },
        ],
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name: TWIN_NAMESPACES_POLICY, labels: MANAGED_BY },
      spec: { policyName: TWIN_NAMESPACES_POLICY, validationActions: ["Deny"] },
    },
  ];
}

/** Applies the shared ClusterRoles and the policy; idempotent (server-side apply). */
export async function ensurePeeringRbac(client: KubeClient, deadlineMs = 60_000): Promise<void> {
  for (const [name, rules] of [
    [PEERING_ROLE, peeringRules],
    [TWIN_NAMESPACE_ROLE, twinNamespaceRules],
    [TWIN_NAMESPACES_ROLE, twinNamespacesRules],
  ] as const) {
    await client.apply(
      ClusterRoles,
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name, labels: MANAGED_BY },
        rules: rules as unknown[],
      },
      { fieldManager: FIELD_MANAGER, force: true },
    );
  }
  const [policy, binding] = twinNamespacesPolicy();
  await client.apply(ValidatingAdmissionPolicies, policy!, { fieldManager: FIELD_MANAGER, force: true });
  await client.apply(ValidatingAdmissionPolicyBindings, binding!, { fieldManager: FIELD_MANAGER, force: true });
  await policyObserved(client, deadlineMs);
}

/**
 * Admission policies take effect asynchronously: until the API server has loaded this one, a peer
 * holding the namespaces RBAC could create any namespace. The API server's own type-checking
 * controller records status.observedGeneration once it has seen the policy; the auth service
 * issues no identity before that (the caller treats a timeout as "not ready").
 */
async function policyObserved(client: KubeClient, deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (true) {
    const p = await client.get<KubeObject & { status?: { observedGeneration?: number } }>(
      ValidatingAdmissionPolicies,
      TWIN_NAMESPACES_POLICY,
    );
    if ((p.status?.observedGeneration ?? 0) >= (p.metadata.generation ?? 1)) return;
    if (Date.now() > deadline) {
      throw new Error(
        `the API server has not loaded the ValidatingAdmissionPolicy ${TWIN_NAMESPACES_POLICY} within ${deadlineMs / 1000}s (status.observedGeneration unset): is the ValidatingAdmissionPolicy API enabled (Kubernetes ≥ 1.30)?`,
      );
    }
    await Bun.sleep(200);
  }
}

export { FIELD_MANAGER as AUTH_FIELD_MANAGER };
