// How a liqo cluster is described in DNS, for mDNS on the LAN and for a DNS zone on the WAN (the
// layout Liqo used): a PTR record `_liqo_auth._tcp.<domain>` → `<cluster ID>._liqo_auth._tcp.<domain>`
// per cluster, and for that instance an SRV record (host and port of its authentication service)
// and a TXT record (`id=<cluster ID>`, `name=<cluster name>`); the host's A record when it is an IP.
// Reading answers back checks every field, so a malformed or hostile answer is a named problem.
import { clusterIdProblem, clusterNameProblem } from "../peering/identity.ts";
import { type DnsRecord, normalName, RecordType } from "./dns.ts";

export const AUTH_SERVICE = "_liqo_auth._tcp";
export const MDNS_DOMAIN = "local";

export const serviceName = (domain: string) => `${AUTH_SERVICE}.${normalName(domain)}`;
export const instanceName = (clusterId: string, domain: string) => `${clusterId}.${serviceName(domain)}`;

export interface Advertisement {
  clusterId: string;
  clusterName: string;
  /** The authentication service's URL (https://host:port), as liqoctl generate peer-command prints it. */
  authUrl: string;
}

export interface DiscoveredCluster extends Advertisement {}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const isIpv4 = (s: string) => IPV4.test(s) && s.split(".").every((p) => Number(p) <= 255);

/** The records that advertise `a` in `domain`, each with `ttl` seconds. */
export function advertisementRecords(a: Advertisement, domain: string, ttl: number): DnsRecord[] {
  const url = new URL(a.authUrl);
  const port = Number(url.port || 443);
  const instance = instanceName(a.clusterId, domain);
  const host = url.hostname;
  const target = isIpv4(host) ? `liqo-${a.clusterId}.${normalName(domain)}` : host;
  return [
    { name: serviceName(domain), type: RecordType.PTR, ttl, target: instance },
    { name: instance, type: RecordType.SRV, ttl, priority: 0, weight: 0, port, target },
    { name: instance, type: RecordType.TXT, ttl, strings: [`id=${a.clusterId}`, `name=${a.clusterName}`] },
    ...(isIpv4(host) ? [{ name: target, type: RecordType.A, ttl, address: host } as DnsRecord] : []),
  ];
}

export type Reading = { ok: true; cluster: DiscoveredCluster } | { ok: false; instance: string; problem: string };

/**
 * The clusters a set of records describes in `domain`: one reading per instance the PTR records
 * list. `resolve` gives an address for an SRV target without an A record among `records` (the
 * WAN's resolver); without one, such a target is used as the URL's host name.
 */
export function readClusters(
  records: readonly DnsRecord[],
  domain: string,
  resolve?: (host: string) => string | undefined,
): Reading[] {
  const service = serviceName(domain);
  const instances = [
    ...new Set(
      records
        .filter((r) => r.type === RecordType.PTR && normalName(r.name) === service)
        .map((r) => normalName((r as { target: string }).target)),
    ),
  ];
  return instances.map((instance) => readInstance(instance, records, resolve));
}

function readInstance(
  instance: string,
  records: readonly DnsRecord[],
  resolve?: (host: string) => string | undefined,
): Reading {
  const fail = (problem: string): Reading => ({ ok: false, instance, problem });
  const of = <T extends DnsRecord["type"]>(type: T, name: string) =>
    records.filter(
      (r): r is Extract<DnsRecord, { type: T }> => r.type === type && normalName(r.name) === normalName(name),
    );
  const srv = of(RecordType.SRV, instance);
  const txt = of(RecordType.TXT, instance);
  if (srv.length !== 1)
    return fail(srv.length ? "several SRV records" : "no SRV record (host and port of the auth service)");
  if (txt.length !== 1) return fail(txt.length ? "several TXT records" : "no TXT record (id= and name=)");
  const fields = new Map<string, string>();
  for (const s of txt[0]!.strings) {
    const eq = s.indexOf("=");
    if (eq > 0) fields.set(s.slice(0, eq).toLowerCase(), s.slice(eq + 1));
  }
  const id = fields.get("id") ?? "";
  const name = fields.get("name") ?? "";
  const idProblem = clusterIdProblem(id);
  if (idProblem) return fail(`TXT id=: ${idProblem}`);
  const nameProblem = clusterNameProblem(name);
  if (nameProblem) return fail(`TXT name=: ${nameProblem}`);
  if (normalName(instance).split(".")[0] !== id) return fail(`the instance name does not start with the TXT id ${id}`);
  const { port, target } = srv[0]!;
  if (port < 1 || port > 65535) return fail(`SRV port ${port} is not a port`);
  const a = of(RecordType.A, target);
  const host = a.length ? a[0]!.address : (resolve?.(normalName(target)) ?? normalName(target));
  if (!isIpv4(host) && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/.test(host))
    return fail(`SRV target ${target} is neither an IPv4 address nor a dotted host name`);
  if (host === "0.0.0.0" || host.startsWith("224.") || host === "255.255.255.255")
    return fail(`address ${host} cannot be an auth service`);
  return { ok: true, cluster: { clusterId: id, clusterName: name, authUrl: `https://${host}:${port}` } };
}
