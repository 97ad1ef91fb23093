// Unoffloading a namespace or unpeering deletes the provider's copies of claims of the virtual
// storage class, and their data with them (as in Liqo). liqoctl says which claims lose their data
// and asks for --yes before doing it; nothing happens silently.
import type { KubeClient } from "../core/kube/client.ts";
import { KubeApiError } from "../core/kube/errors.ts";
import { Resources, type KubeObject } from "../core/kube/resources.ts";
import { backingOf, PROVISIONED_BY, type Volume } from "../core/storage/forge.ts";
import { STORAGE_PROVISIONER } from "../core/apis/labels.ts";

/** Claims ("ns/name") whose data lives in a peer, selected by namespace and/or the peer's cluster ID. */
export function remoteBackedClaims(volumes: Volume[], where: { namespace?: string; clusterId?: string }): string[] {
  return volumes
    .filter((v) => v.metadata.annotations?.[PROVISIONED_BY] === STORAGE_PROVISIONER)
    .filter((v) => {
      const b = backingOf(v);
      if (b?.where !== "remote") return false;
      if (where.clusterId && b.clusterId !== where.clusterId) return false;
      return !where.namespace || v.spec?.claimRef?.namespace === where.namespace;
    })
    .map((v) => `${v.spec?.claimRef?.namespace}/${v.spec?.claimRef?.name}`)
    .sort();
}

/** The refusal's text, or undefined when no data would be lost. */
export function dataLossWarning(claims: string[], what: string): string | undefined {
  if (!claims.length) return undefined;
  const shown = claims.slice(0, 10).join(", ") + (claims.length > 10 ? `, and ${claims.length - 10} more` : "");
  return (
    `${what} deletes the volumes of ${claims.length} claim(s) of the virtual storage class whose data lives in the peer, and the data with them: ${shown}. ` +
    "Copy what you need first (liqoctl is not a backup tool), then rerun with --yes."
  );
}

/** The cluster's PVs; none, with a warning, when this user may not list them (the check is then not made). */
export async function listVolumes(client: KubeClient, warn: (m: string) => void): Promise<Volume[]> {
  try {
    return (await client.list<KubeObject>(Resources.persistentVolumes)).items as Volume[];
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 403)) throw err;
    warn(
      "cannot list PersistentVolumes, so cannot tell whether liqo-class volumes with data in the peer would be deleted; check with a user who can (kubectl get pv)",
    );
    return [];
  }
}
