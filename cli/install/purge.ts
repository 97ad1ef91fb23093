// What `liqoctl uninstall` checks before removing liqo, and what --purge removes after Helm:
// CRDs, liqo's namespaces (install and tenant namespaces) and the cluster-wide RBAC and admission
// objects that the auth service and the webhook create at run time (Helm does not know them).
import {
  ForeignClusterResource,
  NamespaceOffloadingResource,
  ServiceImportResource,
  TENANT_NAMESPACE_LABEL,
  TENANT_NAMESPACE_PREFIX,
} from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject, type ResourceRef } from "../../core/kube/resources.ts";
import { MANAGED_BY_LABEL, MCS_MANAGER } from "../../core/mcs/names.ts";

const admission = (kind: string, plural: string): ResourceRef => ({
  group: "admissionregistration.k8s.io",
  version: "v1",
  kind,
  plural,
  namespaced: false,
});
const clusterScoped: ResourceRef[] = [
  Resources.clusterRoles,
  Resources.clusterRoleBindings,
  admission("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
  admission("ValidatingAdmissionPolicy", "validatingadmissionpolicies"),
  admission("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings"),
];
/** The chart labels its objects part-of=liqo; the auth service labels what it creates managed-by=liqo-auth. */
const liqoSelectors = ["app.kubernetes.io/part-of=liqo", "app.kubernetes.io/managed-by=liqo-auth"];

async function listOrEmpty<T extends KubeObject>(
  client: KubeClient,
  res: ResourceRef,
  labelSelector?: string,
): Promise<T[]> {
  try {
    return (await client.list<T>(res, { labelSelector })).items;
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return []; // the CRD (or API) is not there
    throw err;
  }
}

type ForeignCluster = KubeObject & {
  spec?: { outgoingPeeringEnabled?: string };
  status?: { peeringConditions?: { type: string; status?: string }[] };
};

/** A ForeignCluster with a peering requested or in place, either direction. */
export function hasPeering(fc: ForeignCluster): boolean {
  if (fc.spec?.outgoingPeeringEnabled === "Yes") return true;
  return (fc.status?.peeringConditions ?? []).some(
    (c) =>
      (c.type === "OutgoingPeering" || c.type === "IncomingPeering") &&
      ["Pending", "Established", "Disconnecting"].includes(c.status ?? ""),
  );
}

/** Why liqo cannot be removed now, with the command that fixes each reason; empty when it can. */
export async function uninstallBlockers(client: KubeClient): Promise<string[]> {
  const out: string[] = [];
  for (const fc of (await listOrEmpty<ForeignCluster>(client, ForeignClusterResource)).filter(hasPeering)) {
    out.push(
      `ForeignCluster ${fc.metadata.name} has an active peering: run liqoctl unpeer ${fc.metadata.name} (or kubectl patch foreigncluster ${fc.metadata.name} --type merge -p '{"spec":{"outgoingPeeringEnabled":"No"}}')`,
    );
  }
  for (const no of await listOrEmpty(client, NamespaceOffloadingResource)) {
    out.push(
      `namespace ${no.metadata.namespace} is offloaded (NamespaceOffloading ${no.metadata.namespace}/${no.metadata.name}): run liqoctl unoffload namespace ${no.metadata.namespace}`,
    );
  }
  return out;
}

/** Deletes everything --purge removes; returns what it deleted ("kind/name"). */
export async function purgeLiqo(client: KubeClient, namespace: string): Promise<string[]> {
  const deleted: string[] = [];
  // The MCS API's CRDs stay (another implementation may use them), and so do the users'
  // ServiceExports; the ServiceImports liqo derived go, their Services and EndpointSlices with them
  // (owner references).
  for (const si of await listOrEmpty(client, ServiceImportResource, `${MANAGED_BY_LABEL}=${MCS_MANAGER}`))
    if (await client.delete(ServiceImportResource, si.metadata.name!, si.metadata.namespace))
      deleted.push(`serviceimport/${si.metadata.namespace}/${si.metadata.name}`);
  const crds = (
    await listOrEmpty<KubeObject & { spec: { group: string } }>(client, Resources.customResourceDefinitions)
  ).filter((c) => c.spec.group === "liqo.io" || c.spec.group.endsWith(".liqo.io"));
  for (const crd of crds)
    if (await client.delete(Resources.customResourceDefinitions, crd.metadata.name!))
      deleted.push(`customresourcedefinition/${crd.metadata.name}`);
  for (const res of clusterScoped) {
    const seen = new Set<string>();
    for (const sel of liqoSelectors) for (const o of await listOrEmpty(client, res, sel)) seen.add(o.metadata.name!);
    for (const name of seen) if (await client.delete(res, name)) deleted.push(`${res.kind.toLowerCase()}/${name}`);
  }
  const namespaces = new Set([namespace]);
  for (const ns of await listOrEmpty(client, Resources.namespaces)) {
    if (
      ns.metadata.labels?.[TENANT_NAMESPACE_LABEL] !== undefined ||
      ns.metadata.name!.startsWith(`${TENANT_NAMESPACE_PREFIX}-`)
    )
      namespaces.add(ns.metadata.name!);
  }
  for (const ns of namespaces) if (await client.delete(Resources.namespaces, ns)) deleted.push(`namespace/${ns}`);
  return deleted;
}

/** What of liqo is still there (CRDs, namespaces being finalized, cluster-wide objects); empty when clean. */
export async function liqoLeftovers(client: KubeClient, namespace: string): Promise<string[]> {
  const left: string[] = [];
  for (const c of await listOrEmpty<KubeObject & { spec: { group: string } }>(
    client,
    Resources.customResourceDefinitions,
  )) {
    if (c.spec.group === "liqo.io" || c.spec.group.endsWith(".liqo.io"))
      left.push(`customresourcedefinition/${c.metadata.name}`);
  }
  for (const res of clusterScoped)
    for (const sel of liqoSelectors)
      for (const o of await listOrEmpty(client, res, sel)) left.push(`${res.kind.toLowerCase()}/${o.metadata.name}`);
  for (const ns of await listOrEmpty(client, Resources.namespaces)) {
    if (
      ns.metadata.name === namespace ||
      ns.metadata.labels?.[TENANT_NAMESPACE_LABEL] !== undefined ||
      ns.metadata.name!.startsWith(`${TENANT_NAMESPACE_PREFIX}-`)
    )
      left.push(`namespace/${ns.metadata.name}`);
  }
  return [...new Set(left)];
}
