// The names and labels core/mcs writes, one rule each, so every cluster derives the same names
// without asking anyone (docs/mcs.md, "Names").
import { createHash } from "node:crypto";

const sha = (s: string, n: number) => createHash("sha256").update(s).digest("hex").slice(0, n);

/** Who manages what core/mcs writes (ServiceImports, derived Services, EndpointSlices, ExportedServices). */
export const MCS_MANAGER = "liqo-mcs";
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** EndpointSlice's own managed-by label: keeps the EndpointSlice controller off our slices. */
export const SLICE_MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by";
export const SLICE_MANAGER = "mcs.liqo.io";
/** The Service an EndpointSlice belongs to (kube-proxy reads it). */
export const SLICE_SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/**
 * The ExportedService carrying one cluster's export of <namespace>/<name> through a tenant
 * namespace: `<namespace>.<name>.<8 hex of sha256(origin cluster ID)>`. Namespace and Service
 * names are DNS labels (no dots), so the name is unambiguous and at most 136 characters.
 */
export const carrierName = (origin: string, namespace: string, name: string) =>
  `${namespace}.${name}.${sha(origin, 8)}`;

/**
 * The derived Service of an import (the ClusterSetIP's owner; its EndpointSlices are the imported
 * ones): `derived-<10 hex of sha256(<service name>)>`, as the KEP suggests a derived name; a DNS
 * label whatever the name's length, the same in every cluster.
 */
export const derivedServiceName = (name: string) => `derived-${sha(name, 10)}`;

/** The i-th imported EndpointSlice of one exporting cluster: `<derived>-<8 hex of sha256(cluster ID)>-<i>`. */
export const importedSliceName = (name: string, clusterId: string, i: number) =>
  `${derivedServiceName(name)}-${sha(clusterId, 8)}-${i}`;
