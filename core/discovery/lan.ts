// LAN discovery over mDNS (Liqo's discovery on LAN): the responder answers queries for
// `_liqo_auth._tcp.local` with this cluster's ID, name and auth service; the browser asks every
// ttl/3 seconds and turns what answered into ForeignClusters (discovery type LAN), following
// address changes and removing a cluster after three rounds without an answer unless peered.
// Everything heard is untrusted: malformed packets are counted and dropped, at most
// MAX_CLUSTERS_PER_ROUND clusters are taken per round, a new address is written only once its auth
// service answers with the claimed ID (apply.ts), an address that failed that is not asked again
// for three ttls (so a spoofed claim neither hides the real answer nor costs a check every round),
// and an ID still answered at two addresses is left alone that round. Responses are rate-limited,
// so a flood of queries makes no flood.
import { ForeignClusterResource, type ForeignCluster } from "../apis/index.ts";
import type { KubeClient } from "../kube/client.ts";
import type { KubeObject } from "../kube/resources.ts";
import { silentLogger, type Logger } from "../log.ts";
import type { Registry } from "../metrics/index.ts";
import { readAuthUrl } from "../peering/auth-url.ts";
import { createEventRecorder } from "../kube/events.ts";
import { applyPlan, verifyByIds, type Verifier } from "./apply.ts";
import { decodeMessage, DnsFormatError, encodeMessage, normalName, RecordType } from "./dns.ts";
import { openMdnsSocket, type MdnsSocket, type MdnsSocketOptions } from "./mdns.ts";
import { planRound, type Plan } from "./plan.ts";
import { advertisementRecords, MDNS_DOMAIN, readClusters, serviceName, type DiscoveredCluster } from "./service.ts";

export const MAX_CLUSTERS_PER_ROUND = 64;
const MAX_ADDRESSES = 4;
const MIN_RESPONSE_GAP_MS = 250;

export interface LanDiscoveryOptions extends MdnsSocketOptions {
  client: KubeClient;
  local: { clusterId: string; clusterName: string };
  liqoNamespace?: string;
  /** Answer other clusters' queries (Liqo's enableAdvertisement). */
  advertise: boolean;
  /** Ask, and keep ForeignClusters for what answers (Liqo's enableDiscovery). */
  discover: boolean;
  /** Discovered clusters may be peered with by themselves (Liqo's autojoin). */
  autojoin: boolean;
  /** Seconds an answer is valid (Liqo's ttl, default 90); a round every ttl/3 s. */
  ttlSeconds?: number;
  /** The auth URL to advertise (default: the ConfigMap liqo-auth-url, as liqoctl generate peer-command reads it). */
  authUrl?: string;
  verify?: Verifier;
  logger?: Logger;
  registry?: Registry;
}

export interface LanDiscovery {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Ends the current round (plans and applies what was heard) and starts the next one. */
  round(): Promise<Plan | undefined>;
  stats(): Record<string, number>;
}

export function createLanDiscovery(o: LanDiscoveryOptions): LanDiscovery {
  const log = (o.logger ?? silentLogger).child({ component: "discovery-lan" });
  const ttl = o.ttlSeconds ?? 90;
  const liqoNamespace = o.liqoNamespace ?? "liqo";
  const service = serviceName(MDNS_DOMAIN);
  const events = createEventRecorder(o.client, "liqo-discovery", log);
  const verify = o.verify ?? verifyByIds;
  const counts: Record<string, number> = {};
  const packets = o.registry?.counter({
    name: "liqo_discovery_packets_total",
    help: "mDNS packets received, by what was done with them.",
    labelNames: ["outcome"],
  });
  const count = (outcome: string) => {
    counts[outcome] = (counts[outcome] ?? 0) + 1;
    packets?.inc({ outcome });
  };
  const warned = new Set<string>();
  const warnOnce = (key: string, message: string, fields: Record<string, unknown>) => {
    if (warned.size > 1000) warned.clear();
    if (warned.has(key)) return;
    warned.add(key);
    log.warn(message, fields);
  };

  let socket: MdnsSocket | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  /** This round's answers: per cluster ID, each address it was claimed at (at most MAX_ADDRESSES). */
  let heard = new Map<string, Map<string, DiscoveredCluster>>();
  /** Addresses whose auth service did not prove the ID claimed for them, not checked again until then. */
  const refusedUntil = new Map<string, number>();
  const refusalKey = (clusterId: string, url: string) => `${clusterId} ${url}`;
  const remembered: Verifier = async (url, clusterId) => {
    const why = await verify(url, clusterId);
    if (why) {
      if (refusedUntil.size > 10_000) refusedUntil.clear();
      refusedUntil.set(refusalKey(clusterId, url), Date.now() + ttl * 3_000);
    }
    return why;
  };
  let misses = new Map<string, number>();
  let advertised: Uint8Array | undefined;
  let lastResponse = 0;
  let responding = false;
  let running: Promise<unknown> = Promise.resolve();

  async function refreshAdvertisement() {
    let url = o.authUrl;
    let why = "";
    try {
      url ??= await readAuthUrl(o.client, liqoNamespace);
    } catch (err) {
      why = `: ${(err as Error).message}`;
    }
    if (!url) {
      warnOnce(
        `no-auth-url${why}`,
        `nothing to advertise yet: no auth URL (the liqo-auth Service's address, or ConfigMap liqo-auth-url)${why}`,
        { liqoNamespace },
      );
      advertised = undefined;
      return;
    }
    try {
      const [ptr, ...rest] = advertisementRecords({ ...o.local, authUrl: url }, MDNS_DOMAIN, ttl);
      advertised = encodeMessage({ response: true, answers: [ptr!], additionals: rest });
    } catch (err) {
      // A hand-edited liqo-auth-url that is no URL, or a host DNS cannot carry: say so, advertise nothing.
      warnOnce(
        `bad-auth-url/${url}`,
        `cannot advertise auth URL ${url}: ${(err as Error).message}; fix ConfigMap liqo-auth-url or the liqo-auth Service`,
        { liqoNamespace },
      );
      advertised = undefined;
    }
  }

  function onQuery(questions: { name: string; type: number }[]) {
    if (!o.advertise || !advertised) return;
    const asked = questions.some(
      (q) => normalName(q.name) === service && (q.type === RecordType.PTR || q.type === RecordType.ANY),
    );
    if (!asked) return;
    // One answer serves every query in the gap: a flood of queries makes at most 4 answers a second.
    const now = Date.now();
    if (responding || now - lastResponse < MIN_RESPONSE_GAP_MS) {
      count("query-throttled");
      return;
    }
    responding = true;
    lastResponse = now;
    count("query-answered");
    socket
      ?.send(advertised)
      .catch((err) => log.warn("mDNS answer not sent", { err: (err as Error).message }))
      .finally(() => {
        responding = false;
      });
  }

  function onAnswer(records: Parameters<typeof readClusters>[0], from: string) {
    if (!o.discover) return;
    for (const reading of readClusters(records, MDNS_DOMAIN)) {
      if (!reading.ok) {
        count("invalid");
        warnOnce(`${from}/${reading.instance}/${reading.problem}`, "mDNS answer ignored", {
          from,
          instance: reading.instance,
          problem: reading.problem,
        });
        continue;
      }
      const c = reading.cluster;
      if (c.clusterId === o.local.clusterId) continue;
      const claims = heard.get(c.clusterId);
      if (claims) {
        if (!claims.has(c.authUrl) && claims.size < MAX_ADDRESSES) claims.set(c.authUrl, c);
        continue;
      }
      if (heard.size >= MAX_CLUSTERS_PER_ROUND) {
        count("dropped");
        warnOnce(
          "too-many",
          `more than ${MAX_CLUSTERS_PER_ROUND} clusters answered in one round; the rest are dropped`,
          { from },
        );
        continue;
      }
      heard.set(c.clusterId, new Map([[c.authUrl, c]]));
      count("answer");
    }
  }

  function onMessage(bytes: Uint8Array, from: string) {
    let m;
    try {
      m = decodeMessage(bytes);
    } catch (err) {
      if (!(err instanceof DnsFormatError)) throw err;
      count("malformed");
      warnOnce(`malformed/${from}`, "malformed mDNS packet dropped", {
        from,
        problem: err.message,
        bytes: bytes.length,
      });
      return;
    }
    if (m.response) onAnswer([...m.answers, ...m.additionals], from);
    else onQuery(m.questions);
  }

  /**
   * One address per cluster heard: addresses refused lately are dropped (a spoofer's claim does not
   * hide the real answer); if several remain, the ForeignCluster's current one is kept and the
   * cluster is left alone this round (a conflict).
   */
  function choose(existing: ForeignCluster[]) {
    const now = Date.now();
    const chosen = new Map<string, DiscoveredCluster>();
    const conflicts = new Set<string>();
    for (const [id, claims] of heard) {
      const open = [...claims.values()].filter((c) => (refusedUntil.get(refusalKey(id, c.authUrl)) ?? 0) <= now);
      if (!open.length) continue; // only refused addresses answered: as good as silence
      const current = existing.find((f) => f.spec.clusterIdentity?.clusterID === id)?.spec.foreignAuthUrl;
      chosen.set(id, open.find((c) => c.authUrl === current) ?? open[0]!);
      if (open.length > 1) {
        conflicts.add(id);
        count("conflicting");
        log.warn("answers for one cluster ID with different addresses: left as it is this round", {
          clusterId: id,
          addresses: open.map((c) => c.authUrl),
        });
      }
    }
    return { chosen, conflicts };
  }

  async function round(): Promise<Plan | undefined> {
    const work = running.then(async () => {
      await refreshAdvertisement();
      if (!o.discover) return undefined;
      const existing = (await o.client.list<ForeignCluster & KubeObject>(ForeignClusterResource)).items;
      const { chosen, conflicts } = choose(existing);
      const plan = planRound({
        existing,
        heard: chosen,
        conflicts,
        misses,
        localClusterId: o.local.clusterId,
        discoveryType: "LAN",
        autojoin: o.autojoin,
        ttlSeconds: ttl,
      });
      heard = new Map();
      for (const name of plan.kept) {
        const id = existing.find((f) => f.metadata.name === name)?.spec.clusterIdentity?.clusterID ?? "";
        if (plan.misses.get(id) === 3)
          log.info("LAN discovery: not answering for three rounds, kept: peered", { foreignCluster: name });
      }
      misses = plan.misses;
      await applyPlan(plan, {
        client: o.client,
        log,
        verify: remembered,
        note: (what, fc, message) => {
          log.info(`LAN discovery: ${what}`, { foreignCluster: fc.name, message });
          if (what === "refused") count("spoofed");
          const ref = {
            apiVersion: "discovery.liqo.io/v1alpha1",
            kind: "ForeignCluster",
            metadata: { name: fc.name },
          } as KubeObject;
          if (what === "updated" || what === "created")
            events.normal(ref, what === "created" ? "Discovered" : "DiscoveryUpdated", message);
          if (what === "refused" && existing.some((f) => f.metadata.name === fc.name))
            events.warning(ref, "DiscoveryAnswerRefused", message);
        },
      });
      await socket?.send(encodeMessage({ questions: [{ name: service, type: RecordType.PTR }] }));
      return plan;
    });
    running = work.catch(() => undefined);
    return work;
  }

  return {
    async start() {
      socket = await openMdnsSocket(o, onMessage, (err) => log.warn("mDNS socket error", { err: err.message }));
      await refreshAdvertisement();
      if (o.discover) await socket.send(encodeMessage({ questions: [{ name: service, type: RecordType.PTR }] }));
      timer = setInterval(
        () => round().catch((err) => log.warn("discovery round failed", { err: (err as Error).message })),
        (ttl * 1000) / 3,
      );
      log.info("LAN discovery started", {
        advertise: o.advertise,
        discover: o.discover,
        autojoin: o.autojoin,
        ttl,
        interface: o.interfaceAddress ?? "default",
      });
    },
    async stop() {
      clearInterval(timer);
      await running;
      await socket?.close();
      socket = undefined;
    },
    round,
    stats: () => ({ ...counts }),
  };
}
