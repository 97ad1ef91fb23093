// Carries out a round's plan (plan.ts) on the API server. Before a discovered address is written
// (a new ForeignCluster, or an address change), its authentication service must answer GET /ids
// with the cluster ID the records claim: an answer that spoofs another cluster's ID with an
// address of its own is dropped, never written, so no token is ever sent there.
import { ForeignClusterResource } from "../apis/index.ts";
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError } from "../kube/errors.ts";
import type { KubeObject } from "../kube/resources.ts";
import type { Logger } from "../log.ts";
import { fetchRemoteIds } from "../peering/foreigncluster/auth-client.ts";
import type { Plan } from "./plan.ts";

/** Why `url` cannot stand for `clusterId`, or undefined when its auth service says it is that cluster. */
export type Verifier = (url: string, clusterId: string) => Promise<string | undefined>;

export const verifyByIds: Verifier = async (url, clusterId) => {
  const ids = await fetchRemoteIds(url, { insecureSkipTLSVerify: true, timeoutMs: 3_000 });
  if (!ids.ok) return `its auth service does not answer: ${ids.message}`;
  if (ids.value.clusterId !== clusterId)
    return `its auth service answers as cluster ${ids.value.clusterName} (${ids.value.clusterId})`;
  return undefined;
};

export interface ApplyOptions {
  client: KubeClient;
  log: Logger;
  verify: Verifier;
  /** Called with what happened to each ForeignCluster (Events, metrics). */
  note?: (
    what: "created" | "updated" | "deleted" | "refused",
    fc: { name: string; clusterId: string },
    message: string,
  ) => void;
}

/** How many addresses are checked at once: a flood of answers pointing at dark addresses costs seconds, not minutes. */
const VERIFY_CONCURRENCY = 16;

export async function applyPlan(plan: Plan, o: ApplyOptions): Promise<void> {
  // Every address to be written is checked first, several at a time.
  const toCheck = [
    ...plan.create.map((fc) => ({ url: fc.spec.foreignAuthUrl, clusterId: fc.spec.clusterIdentity!.clusterID })),
    ...plan.update.flatMap((u) =>
      u.patch.spec?.foreignAuthUrl ? [{ url: u.patch.spec.foreignAuthUrl, clusterId: u.clusterId }] : [],
    ),
  ];
  const verdicts = new Map<string, string | undefined>();
  for (let i = 0; i < toCheck.length; i += VERIFY_CONCURRENCY) {
    await Promise.all(
      toCheck
        .slice(i, i + VERIFY_CONCURRENCY)
        .map(async (c) => verdicts.set(`${c.clusterId} ${c.url}`, await o.verify(c.url, c.clusterId))),
    );
  }
  const why = (url: string, clusterId: string) => verdicts.get(`${clusterId} ${url}`);

  for (const fc of plan.create) {
    const id = fc.spec.clusterIdentity!.clusterID;
    const refused = why(fc.spec.foreignAuthUrl, id);
    if (refused) {
      o.note?.(
        "refused",
        { name: fc.metadata.name!, clusterId: id },
        `answer for cluster ${id} points at ${fc.spec.foreignAuthUrl}, but ${refused}; ignored`,
      );
      continue;
    }
    try {
      await o.client.create(ForeignClusterResource, fc as KubeObject);
      o.note?.(
        "created",
        { name: fc.metadata.name!, clusterId: id },
        `discovered cluster ${fc.spec.clusterIdentity!.clusterName} at ${fc.spec.foreignAuthUrl}`,
      );
    } catch (err) {
      if (!(err instanceof KubeApiError && err.conflict)) throw err;
    }
  }
  for (const u of plan.update) {
    const url = u.patch.spec?.foreignAuthUrl;
    const refused = url && why(url, u.clusterId);
    if (refused) {
      o.note?.(
        "refused",
        { name: u.name, clusterId: u.clusterId },
        `answer for cluster ${u.clusterId} points at ${url}, but ${refused}; the address stays as it is`,
      );
      continue;
    }
    try {
      await o.client.mergePatch(ForeignClusterResource, u.name, undefined, {
        ...u.patch,
        metadata: { ...(u.patch.metadata ?? {}), resourceVersion: u.resourceVersion },
      });
      o.note?.(
        "updated",
        { name: u.name, clusterId: u.clusterId },
        url ? `address changed to ${url}` : "autojoin changed",
      );
    } catch (err) {
      // Someone wrote in between, or it is gone: the next round sees the new state.
      if (!(err instanceof KubeApiError && (err.conflict || err.notFound))) throw err;
    }
  }
  for (const d of plan.delete) {
    if (await o.client.delete(ForeignClusterResource, d.name, undefined, { uid: d.uid })) {
      o.note?.("deleted", { name: d.name, clusterId: d.clusterId }, "no longer answers");
    }
  }
}
