// What the clusterset.local zone answers, computed from ServiceImports and the imported
// EndpointSlices alone (KEP-1645's DNS specification): pure, no I/O, table-tested.
//
//   <svc>.<ns>.svc.clusterset.local                      A/AAAA: the ClusterSetIP import's spec.ips;
//                                                        a Headless import's ready endpoints
//   <host>.<cluster>.<svc>.<ns>.svc.clusterset.local     A/AAAA: one endpoint of a Headless import
//   _<port>._<proto>.<svc>.<ns>.svc.clusterset.local     SRV: a named port
//   anything else in the zone                            NXDOMAIN, or NODATA where a name below exists
import { isIPv4, isIPv6 } from "node:net";
import type { ServiceImport } from "../../apis/multicluster/serviceimport.ts";
import { RCode, RRType, type Answer, type Question, type ResourceRecord } from "./wire.ts";

export const ZONE = "clusterset.local";

/**
 * Five seconds: an answer is the state of the caches now, and an import's endpoints change as
 * clusters export, unexport or fail. A client (and CoreDNS' cache in front of us) should not keep
 * sending traffic to a withdrawn cluster's addresses for longer than that; the cost, a query per
 * name per client every 5 s, is answered from memory.
 */
export const DEFAULT_TTL = 5;
/**
 * One second for NXDOMAIN and NODATA (the SOA's minimum, RFC 2308): a workload that asks for a
 * name before its export is imported (measured: 5 s of negative caching made the median export →
 * resolvable time 4.7 s in tests/bench/mcs-real-nodes.ts, against 0.5 s without it) finds it a
 * second after it appears.
 */
export const NEGATIVE_TTL = 1;

export interface ImportedEndpoint {
  addresses: string[];
  ready: boolean;
  hostname?: string;
}

/** One exporting cluster's share of a Headless import, as its imported EndpointSlices say. */
export interface ImportedSlice {
  cluster: string;
  ports: { name?: string; port?: number; protocol?: string }[];
  endpoints: ImportedEndpoint[];
}

/** Read-only views of the caches the answers come from. */
export interface ZoneView {
  serviceImport(namespace: string, name: string): ServiceImport | undefined;
  slices(namespace: string, name: string): ImportedSlice[];
  /** Whether any ServiceImport exists in the namespace (its name then exists, with no records). */
  hasNamespace(namespace: string): boolean;
}

const soa = (ttl: number): ResourceRecord => ({
  name: ZONE,
  ttl,
  data: {
    type: RRType.SOA,
    mname: `ns.dns.${ZONE}`,
    rname: `hostmaster.${ZONE}`,
    // The answers have no versions; a serial that only goes up is all a reader may ask of it.
    serial: Math.floor(Date.now() / 1000) >>> 0,
    refresh: 7200,
    retry: 1800,
    expire: 86400,
    minimum: ttl,
  },
});

/** The name of an endpoint of a Headless import: its hostname, else its address with dashes, as cluster DNS does. */
export const endpointLabel = (e: ImportedEndpoint) =>
  (e.hostname ?? e.addresses[0]!.replaceAll(".", "-").replaceAll(":", "-")).toLowerCase();

const addressRecord = (name: string, address: string, ttl: number): ResourceRecord | undefined =>
  isIPv4(address)
    ? { name, ttl, data: { type: RRType.A, address } }
    : isIPv6(address)
      ? { name, ttl, data: { type: RRType.AAAA, address } }
      : undefined;

const wantedAddress = (type: number) => type === RRType.A || type === RRType.AAAA || type === RRType.ANY;
const sameFamily = (rr: ResourceRecord, type: number) => type === RRType.ANY || rr.data.type === type;

/** The answer to one question, or undefined when the name is not in our zone (REFUSED: we are no resolver). */
export function answerQuestion(
  q: Question,
  view: ZoneView,
  ttl = DEFAULT_TTL,
  negativeTtl = NEGATIVE_TTL,
): Answer | undefined {
  const name = q.lower.endsWith(".") ? q.lower.slice(0, -1) : q.lower;
  if (name !== ZONE && !name.endsWith(`.${ZONE}`)) return undefined;
  const labels = name === ZONE ? [] : name.slice(0, -ZONE.length - 1).split(".");
  const ok = (answers: ResourceRecord[]): Answer => ({
    rcode: RCode.NOERROR,
    aa: true,
    answers,
    authority: answers.length ? [] : [soa(negativeTtl)],
  });
  const nx: Answer = { rcode: RCode.NXDOMAIN, aa: true, answers: [], authority: [soa(negativeTtl)] };

  if (labels.length === 0) return ok(q.type === RRType.SOA ? [soa(negativeTtl)] : []);
  if (labels.at(-1) !== "svc") return nx;
  if (labels.length === 1) return ok([]);
  const ns = labels.at(-2)!;
  if (labels.length === 2) return view.hasNamespace(ns) ? ok([]) : nx;
  const svc = labels.at(-3)!;
  const si = view.serviceImport(ns, svc);
  if (!si?.spec) return nx;
  const base = `${svc}.${ns}.svc.${ZONE}`;
  const headless = si.spec.type === "Headless";
  const ready = () =>
    view
      .slices(ns, svc)
      .flatMap((s) => s.endpoints.filter((e) => e.ready && e.addresses.length).map((e) => ({ s, e })));

  if (labels.length === 3) {
    if (!wantedAddress(q.type)) return ok([]);
    const addresses = headless ? ready().flatMap(({ e }) => e.addresses) : (si.spec.ips ?? []);
    const unique = [...new Set(addresses)];
    return ok(
      unique.map((a) => addressRecord(base, a, ttl)).filter((r): r is ResourceRecord => !!r && sameFamily(r, q.type)),
    );
  }

  const [first, second] = labels;
  // _<port>._<proto>.<svc>.<ns>.svc: the SRV records of a named port.
  if (labels.length === 5 && first!.startsWith("_") && second!.startsWith("_")) {
    const port = first!.slice(1);
    const proto = second!.slice(1);
    const matches = (p: { name?: string; protocol?: string }) =>
      (p.name ?? "").toLowerCase() === port && (p.protocol ?? "TCP").toLowerCase() === proto;
    if (headless) {
      const records: ResourceRecord[] = [];
      for (const { s, e } of ready()) {
        const p = s.ports.find(matches);
        if (p?.port === undefined) continue;
        const target = `${endpointLabel(e)}.${s.cluster.toLowerCase()}.${base}`;
        records.push({ name, ttl, data: { type: RRType.SRV, priority: 0, weight: 100, port: p.port, target } });
      }
      if (!records.length && !si.spec.ports.some(matches)) return nx;
      return ok(q.type === RRType.SRV || q.type === RRType.ANY ? records : []);
    }
    const p = si.spec.ports.find(matches);
    if (!p) return nx;
    return ok(
      q.type === RRType.SRV || q.type === RRType.ANY
        ? [{ name, ttl, data: { type: RRType.SRV, priority: 0, weight: 100, port: p.port, target: base } }]
        : [],
    );
  }

  // <host>.<cluster>.<svc>.<ns>.svc (and <cluster>.<svc>.<ns>.svc, which exists when it has endpoints).
  if (headless && labels.length <= 5) {
    const cluster = labels.length === 5 ? second! : first!;
    const host = labels.length === 5 ? first : undefined;
    const found = ready().filter(
      ({ s, e }) => s.cluster.toLowerCase() === cluster && (!host || endpointLabel(e) === host),
    );
    if (!found.length) return nx;
    if (!host || !wantedAddress(q.type)) return ok([]);
    return ok(
      found
        .flatMap(({ e }) => e.addresses.map((a) => addressRecord(name, a, ttl)))
        .filter((r): r is ResourceRecord => !!r && sameFamily(r, q.type)),
    );
  }
  return nx;
}
