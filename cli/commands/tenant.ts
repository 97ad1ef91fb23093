// liqoctl cordon tenant / uncordon tenant / drain tenant (Liqo 1.x's names), run on a provider:
// a consumer's ShadowPods get no new pods while it is cordoned (its running pods stay); drain
// cordons it, then evicts its pods through the eviction API, so PodDisruptionBudgets hold.
// The mark is an annotation on the consumer's tenant namespace here, which the consumer's
// identity cannot write; the ShadowPod controller follows it (docs/tenancy.md). Its ResourceOffer
// carries it too, for the consumer's liqoctl status.
import { defineCommand } from "citty";
import { ForeignClusterResource, ResourceOfferResource } from "../../core/apis/index.ts";
import {
  DISCOVERY_CLUSTER_ID_LABEL,
  REMOTE_CLUSTER_ID_LABEL,
  REPLICATION_DESTINATION_LABEL,
  REPLICATION_ORIGIN_LABEL,
  TENANT_CORDONED_ANNOTATION,
  TENANT_NAMESPACE_LABEL,
} from "../../core/apis/labels.ts";
import { createKubeClient, type KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { keyOf, Resources, type KubeObject } from "../../core/kube/resources.ts";
import type { Pod } from "../../core/kube/types.ts";
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";
import { CliError, ExitCode } from "../errors.ts";
import { liqoKubeFlags, timeoutMs } from "../peering.ts";
import { info, spinner } from "../ui.ts";

const tenantArg = {
  tenant: {
    type: "positional",
    required: true,
    description: "the consumer: its cluster ID, or the name of its ForeignCluster here",
  },
} as const;

interface Tenant {
  clusterId: string;
  name: string;
  namespace: KubeObject;
}

/** The consumer's tenant namespace here, by cluster ID or ForeignCluster name; an error lists the tenants there are. */
export async function findTenant(client: KubeClient, arg: string): Promise<Tenant> {
  const tenants = (await client.list(Resources.namespaces, { labelSelector: `${TENANT_NAMESPACE_LABEL}=true` })).items;
  const fcs = (await client.list<ForeignClusterObject>(ForeignClusterResource)).items;
  const byName = fcs.find((f) => f.metadata.name === arg)?.spec.clusterIdentity?.clusterID;
  const id = byName ?? arg;
  const namespace = tenants.find((n) => n.metadata.labels?.[DISCOVERY_CLUSTER_ID_LABEL] === id);
  if (!namespace) {
    const known = tenants
      .map((n) => {
        const cid = n.metadata.labels?.[DISCOVERY_CLUSTER_ID_LABEL];
        const fc = fcs.find((f) => f.spec.clusterIdentity?.clusterID === cid);
        return fc ? `${fc.metadata.name} (${cid})` : cid;
      })
      .join(", ");
    throw new CliError(
      `no tenant ${arg} here: give the cluster ID or ForeignCluster name of a cluster peered with this one${known ? ` (tenants: ${known})` : " (this cluster has no tenants)"}`,
    );
  }
  const name = fcs.find((f) => f.spec.clusterIdentity?.clusterID === id)?.metadata.name ?? id;
  return { clusterId: id, name, namespace };
}

/**
 * The namespace's annotation is what the ShadowPod controller obeys. The tenant's ResourceOffer
 * gets the same annotation so the consumer sees the cordon (the offer is replicated to it, its
 * annotations with it, and their removal).
 */
async function setCordon(client: KubeClient, t: Tenant, on: boolean) {
  await client.mergePatch(Resources.namespaces, t.namespace.metadata.name!, undefined, {
    metadata: { annotations: { [TENANT_CORDONED_ANNOTATION]: on ? "true" : null } },
  });
  const offers = await client.list(ResourceOfferResource, {
    namespace: t.namespace.metadata.name!,
    labelSelector: `${REPLICATION_DESTINATION_LABEL}=${t.clusterId},!${REPLICATION_ORIGIN_LABEL}`,
  });
  for (const o of offers.items)
    await client.mergePatch(ResourceOfferResource, o.metadata.name!, o.metadata.namespace, {
      metadata: { annotations: { [TENANT_CORDONED_ANNOTATION]: on ? "true" : null } },
    });
}

/** The pods the consumer's ShadowPods made here, in all its twin namespaces. */
async function podsOf(client: KubeClient, t: Tenant): Promise<Pod[]> {
  const twins = new Set(
    (await client.list(Resources.namespaces, { labelSelector: `${REMOTE_CLUSTER_ID_LABEL}=${t.clusterId}` })).items.map(
      (n) => n.metadata.name,
    ),
  );
  return (await client.list<Pod>(Resources.pods, { labelSelector: "liqo.io/managed-by=shadowpod" })).items.filter(
    (p) => twins.has(p.metadata.namespace) && !p.metadata.deletionTimestamp,
  );
}

const tenantCommand = (verb: "cordon" | "uncordon", description: string) =>
  defineCommand({
    meta: { name: verb, description },
    subCommands: {
      tenant: defineCommand({
        meta: { name: "tenant", description },
        args: { ...tenantArg, ...liqoKubeFlags },
        async run({ args }) {
          const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
          const t = await findTenant(client, args.tenant);
          await setCordon(client, t, verb === "cordon");
          info(
            verb === "cordon"
              ? `tenant ${t.name} cordoned: its new pods, and pods to re-create, wait; its running pods stay (liqoctl drain tenant ${t.name} evicts them)`
              : `tenant ${t.name} uncordoned: its waiting pods are created again, within its offer`,
          );
        },
      }),
    },
  });

export const cordon = tenantCommand("cordon", "Stop new pods of a consumer (tenant) here; its running pods stay");
export const uncordon = tenantCommand("uncordon", "Let a cordoned consumer (tenant) run new pods here again");

export const drain = defineCommand({
  meta: {
    name: "drain",
    description: "Cordon a consumer (tenant) and evict its pods here, honouring PodDisruptionBudgets",
  },
  subCommands: {
    tenant: defineCommand({
      meta: {
        name: "tenant",
        description: "Cordon a consumer (tenant) and evict its pods here, honouring PodDisruptionBudgets",
      },
      args: {
        ...tenantArg,
        ...liqoKubeFlags,
        timeout: {
          type: "string",
          default: "120s",
          description: "how long to retry evictions a PodDisruptionBudget refuses",
        },
      },
      async run({ args }) {
        const deadline = Date.now() + timeoutMs(args.timeout);
        const client = createKubeClient({ kubeconfig: args.kubeconfig, context: args.context });
        const t = await findTenant(client, args.tenant);
        await setCordon(client, t, true);
        info(`tenant ${t.name} cordoned`);
        const spin = spinner(`Evicting the pods of tenant ${t.name}`);
        let blocked: string[] = [];
        let evicted = 0;
        for (;;) {
          const pods = await podsOf(client, t);
          blocked = [];
          for (const p of pods) {
            const name = p.metadata.name!;
            const namespace = p.metadata.namespace!;
            try {
              await client.request("POST", `/api/v1/namespaces/${namespace}/pods/${name}/eviction`, {
                body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name, namespace } },
                key: keyOf(namespace, name),
              });
              evicted++;
            } catch (err) {
              if (err instanceof KubeApiError && err.status === 404) continue;
              // 429: a PodDisruptionBudget does not allow it now; retried, as kubectl drain does.
              if (err instanceof KubeApiError && err.status === 429)
                blocked.push(`${keyOf(namespace, name)}: ${err.message}`);
              else throw err;
            }
          }
          if (!blocked.length) break;
          if (Date.now() > deadline) {
            spin.fail(
              `tenant ${t.name}: ${evicted} pod(s) evicted, ${blocked.length} refused until --timeout ${args.timeout}`,
            );
            throw new CliError(
              `the evictions of these pods were refused by a PodDisruptionBudget:\n  ${blocked.join("\n  ")}\nthe tenant stays cordoned; run liqoctl drain tenant ${t.name} again later, or with a longer --timeout`,
              ExitCode.Failure,
            );
          }
          spin.update(
            `Evicting the pods of tenant ${t.name}: ${evicted} evicted, ${blocked.length} waiting for a PodDisruptionBudget`,
          );
          await Bun.sleep(2000);
        }
        spin.succeed(
          `tenant ${t.name} drained: ${evicted} pod(s) evicted; it stays cordoned (liqoctl uncordon tenant ${t.name})`,
        );
      },
    }),
  },
});
