// The clusterset.local DNS responder of `liqo controller-manager` (docs/mcs.md, "DNS"): the zone
// served from the caches on every replica, leader or not, so the Service in front of it can send a
// query to any ready pod. The cluster's CoreDNS forwards the zone here (liqoctl install does that).
import { ServiceImportResource } from "../../apis/multicluster/serviceimport.ts";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { silentLogger, type Logger } from "../../log.ts";
import type { Registry } from "../../metrics/index.ts";
import { createZoneCache } from "./cache.ts";
import { startDnsServer, type DnsServer } from "./server.ts";

export { ZONE, DEFAULT_TTL } from "./records.ts";
export { splitAddress } from "./server.ts";

export interface ClustersetDnsOptions {
  client: KubeClient;
  address: string;
  logger?: Logger;
  registry?: Registry;
}

export function createClustersetDns(o: ClustersetDnsOptions) {
  const log = (o.logger ?? silentLogger).child({ component: "clusterset-dns" });
  const cache = createZoneCache(o.client, log);
  let server: DnsServer | undefined;
  let crdMissing = false;
  let informing = false;
  let waiting: ReturnType<typeof setInterval> | undefined;

  const served = async () => {
    try {
      await o.client.list(ServiceImportResource, { limit: 1 });
      return true;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return false;
      throw err;
    }
  };
  const inform = () => {
    crdMissing = false;
    informing = true;
    cache.start();
  };

  o.registry?.callbackCounter({
    name: "liqo_clusterset_dns_queries_total",
    help: "Queries the clusterset.local DNS responder answered, by rcode, and packets it dropped (rcode dropped).",
    labelNames: ["rcode"] as const,
    collect: () => [...(server?.counts ?? [])].map(([rcode, value]) => ({ labels: { rcode }, value })),
  });

  return {
    /** Sockets open at once (a bad address fails the start); the caches fill behind them. */
    async start(): Promise<void> {
      server = await startDnsServer({ address: o.address, view: cache.view, ready: cache.synced, logger: log });
      if (await served()) return inform();
      crdMissing = true;
      log.warn(
        `${ServiceImportResource.plural}.${ServiceImportResource.group} is not installed: clusterset.local answers SERVFAIL until it is (liqoctl install applies the chart's CRDs; helm upgrade does not: kubectl apply -f chart/crds)`,
      );
      waiting = setInterval(() => {
        served()
          .then((yes) => {
            if (!yes || informing) return;
            if (waiting) clearInterval(waiting);
            log.info("the MCS CRDs are installed; clusterset.local is served");
            inform();
          })
          .catch((err) => log.warn("checking for the MCS CRDs failed", { err: (err as Error).message }));
      }, 30_000);
    },
    /** For /readyz: the caches have synced, or there is nothing to sync (no MCS CRDs). */
    ready: (): true | { ok: false; reason: string } =>
      crdMissing || cache.synced() || { ok: false, reason: "clusterset.local: ServiceImports still listing" },
    port: () => server?.udpPort,
    async stop(): Promise<void> {
      if (waiting) clearInterval(waiting);
      server?.stop();
      if (informing) await cache.stop();
    },
  };
}

export type ClustersetDns = ReturnType<typeof createClustersetDns>;
