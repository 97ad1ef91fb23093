// WAN discovery (Liqo's SearchDomain operator): for each SearchDomain, read its DNS records (PTR
// _liqo_auth._tcp.<domain>, then SRV and TXT per cluster, and A for hosts) from a DNS server, and
// keep one ForeignCluster (discovery type WAN, labelled with the SearchDomain) per cluster listed:
// added when it appears, its address followed, removed when it leaves the domain unless peered.
// A lookup that fails removes nothing; what was wrong is in the SearchDomain's status.problem.
import {
  ForeignClusterResource,
  SEARCH_DOMAIN_LABEL,
  SearchDomainResource,
  type ForeignCluster,
  type SearchDomain,
} from "../apis/index.ts";
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError } from "../kube/errors.ts";
import { createInformer } from "../kube/informer.ts";
import type { KubeObject } from "../kube/resources.ts";
import { createWorkQueue } from "../kube/workqueue.ts";
import { silentLogger, type Logger } from "../log.ts";
import { createEventRecorder } from "../kube/events.ts";
import { applyPlan, verifyByIds, type Verifier } from "./apply.ts";
import { normalName, RecordType, type DnsRecord } from "./dns.ts";
import { planRound, type Plan } from "./plan.ts";
import { DnsLookupError, lookup, systemDnsServer, type DnsServer } from "./resolver.ts";
import { readClusters, serviceName } from "./service.ts";

const MAX_INSTANCES = 64;

export interface SearchDomainControllerOptions {
  client: KubeClient;
  localClusterId: string;
  /** The DNS server to ask (default: the first nameserver of /etc/resolv.conf). */
  dnsServer?: DnsServer;
  /** Every SearchDomain is read again this often (default 30 s). */
  resyncMs?: number;
  verify?: Verifier;
  logger?: Logger;
}

export interface SearchDomainController {
  start(): Promise<void>;
  stop(): Promise<void>;
  handle(name: string): Promise<Plan | undefined>;
  idle(): Promise<void>;
}

/** Every record of `domain`'s liqo clusters; throws DnsLookupError when the server fails. */
export async function readDomain(
  server: DnsServer,
  domain: string,
): Promise<{ records: DnsRecord[]; exists: boolean }> {
  const service = serviceName(domain);
  const ptr = await lookup(server, service, RecordType.PTR);
  if (ptr.rcode === 3) return { records: [], exists: false };
  if (ptr.rcode !== 0)
    throw new DnsLookupError(`${server.host}:${server.port} answered ${service} with rcode ${ptr.rcode}`);
  const records = [...ptr.records];
  const instances = [
    ...new Set(
      records
        .filter((r) => r.type === RecordType.PTR && normalName(r.name) === service)
        .map((r) => (r as { target: string }).target),
    ),
  ].slice(0, MAX_INSTANCES);
  const has = (type: number, name: string) =>
    records.some((r) => r.type === type && normalName(r.name) === normalName(name));
  for (const instance of instances) {
    for (const type of [RecordType.SRV, RecordType.TXT])
      if (!has(type, instance)) records.push(...(await lookup(server, instance, type)).records);
  }
  for (const srv of records.filter((r) => r.type === RecordType.SRV)) {
    const target = (srv as { target: string }).target;
    if (!has(RecordType.A, target) && !/^\d+\.\d+\.\d+\.\d+$/.test(target))
      records.push(...(await lookup(server, target, RecordType.A)).records);
  }
  return { records, exists: true };
}

export function createSearchDomainController(o: SearchDomainControllerOptions): SearchDomainController {
  const log = (o.logger ?? silentLogger).child({ controller: "searchdomain" });
  const events = createEventRecorder(o.client, "liqo-searchdomain", log);
  const verify = o.verify ?? verifyByIds;
  const domains = createInformer<SearchDomain & KubeObject>({
    client: o.client,
    resource: SearchDomainResource,
    logger: log,
  });
  const queue = createWorkQueue({
    name: "searchdomain",
    logger: log,
    workers: 1,
    maxDelayMs: 60_000,
    handler: async (name) => {
      await handle(name);
    },
  });
  let resync: ReturnType<typeof setInterval> | undefined;

  async function setStatus(sd: SearchDomain & KubeObject, status: SearchDomain["status"]) {
    await o.client.mergePatch(SearchDomainResource, sd.metadata.name!, undefined, { status }, "status").catch((err) => {
      if (!(err instanceof KubeApiError && err.notFound)) throw err;
    });
  }

  async function handle(name: string): Promise<Plan | undefined> {
    const sd = await o.client.find<SearchDomain & KubeObject>(SearchDomainResource, name);
    const existing = (await o.client.list<ForeignCluster & KubeObject>(ForeignClusterResource)).items;
    const labels = { [SEARCH_DOMAIN_LABEL]: name };
    if (!sd || sd.metadata.deletionTimestamp) {
      // The domain is no longer searched: its clusters go as if they had left it.
      const plan = planRound({
        existing,
        heard: new Map(),
        misses: new Map(),
        localClusterId: o.localClusterId,
        discoveryType: "WAN",
        autojoin: false,
        labels,
        maxMisses: 1,
      });
      await applyPlan(plan, { client: o.client, log, verify });
      return plan;
    }
    const server = o.dnsServer ?? (await systemDnsServer());
    if (!server) {
      await setStatus(sd, {
        problem:
          "no DNS server to ask: /etc/resolv.conf lists none; start the controller manager with --dns-server host:port",
      });
      return undefined;
    }
    let found;
    try {
      found = await readDomain(server, sd.spec.domain);
    } catch (err) {
      if (!(err instanceof DnsLookupError)) throw err;
      // Nothing is removed on a failed lookup: the domain may be fine and the server down.
      const problem = `${err.message}; the ForeignClusters found before are kept (is the DNS server right, --dns-server?)`;
      if (sd.status?.problem !== problem) events.warning(sd, "LookupFailed", problem);
      await setStatus(sd, { problem, lastLookup: new Date().toISOString() });
      return undefined;
    }
    const readings = readClusters(found.records, sd.spec.domain);
    const heard = new Map(readings.flatMap((r) => (r.ok ? [[r.cluster.clusterId, r.cluster] as const] : [])));
    const problems = readings.flatMap((r) => (r.ok ? [] : [`${r.instance}: ${r.problem}`]));
    if (!found.exists)
      problems.unshift(
        `${serviceName(sd.spec.domain)} does not exist (NXDOMAIN): no cluster is listed in ${sd.spec.domain}`,
      );
    const plan = planRound({
      existing,
      heard,
      misses: new Map(),
      localClusterId: o.localClusterId,
      discoveryType: "WAN",
      autojoin: sd.spec.autojoin ?? false,
      labels,
      maxMisses: 1,
    });
    await applyPlan(plan, {
      client: o.client,
      log,
      verify,
      note: (what, fc, message) => {
        log.info(`WAN discovery: ${what}`, { searchDomain: name, foreignCluster: fc.name, message });
        if (what === "refused") problems.push(message);
      },
    });
    const after = (
      await o.client.list<ForeignCluster & KubeObject>(ForeignClusterResource, {
        labelSelector: `${SEARCH_DOMAIN_LABEL}=${name}`,
      })
    ).items;
    const problem = problems.join("; ");
    if (problem && problem !== sd.status?.problem) events.warning(sd, "RecordsIgnored", problem);
    await setStatus(sd, {
      foreignClusters: after.map((f) => ({
        name: f.metadata.name!,
        clusterID: f.spec.clusterIdentity?.clusterID ?? "",
      })),
      lastLookup: new Date().toISOString(),
      problem,
    });
    return plan;
  }

  return {
    async start() {
      domains.on({
        add: (d) => queue.add(d.metadata.name!),
        update: (a, b) => {
          if (a.metadata.generation !== b.metadata.generation) queue.add(b.metadata.name!);
        },
        delete: (d) => queue.add(d.metadata.name!),
      });
      domains.start();
      await domains.waitForSync();
      queue.start();
      resync = setInterval(() => domains.list().forEach((d) => queue.add(d.metadata.name!)), o.resyncMs ?? 30_000);
    },
    async stop() {
      clearInterval(resync);
      await queue.shutdown();
      await domains.stop();
    },
    handle,
    idle: () => queue.idle(),
  };
}
