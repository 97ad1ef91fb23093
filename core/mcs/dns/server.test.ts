// The server over real sockets on localhost: node:dns's Resolver (which Bun implements) as a
// client over UDP, and raw UDP and TCP for what a resolver library will not send.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Resolver } from "node:dns/promises";
import { connect } from "node:net";
import type { ServiceImport } from "../../apis/multicluster/serviceimport.ts";
import type { ZoneView } from "./records.ts";
import { splitAddress, startDnsServer, type DnsServer } from "./server.ts";
import { decodeAnswer, encodeQuery, RCode, RRType } from "./wire.ts";

const ips = Array.from({ length: 2 }, (_, i) => `10.96.0.${50 + i}`);
const view: ZoneView = {
  serviceImport: (ns, name) =>
    ns === "shop" && name === "web"
      ? ({ spec: { type: "ClusterSetIP", ips, ports: [{ name: "http", protocol: "TCP", port: 80 }] } } as ServiceImport)
      : ns === "shop" && name === "big"
        ? ({ spec: { type: "Headless", ports: [] } } as unknown as ServiceImport)
        : undefined,
  slices: (_ns, name) =>
    name === "big"
      ? [
          {
            cluster: "c",
            ports: [],
            endpoints: Array.from({ length: 200 }, (_, i) => ({
              addresses: [`10.2.${i >> 8}.${i & 255}`],
              ready: true,
            })),
          },
        ]
      : [],
  hasNamespace: (ns) => ns === "shop",
};

let server: DnsServer;
let synced = true;
beforeAll(async () => {
  server = await startDnsServer({ address: "127.0.0.1:0", view, ready: () => synced, tcpIdleSeconds: 1 });
});
afterAll(() => server.stop());

/** One UDP exchange; undefined when nothing comes back within `ms`. */
async function udp(packet: Uint8Array, ms = 300): Promise<Uint8Array | undefined> {
  const { promise, resolve } = Promise.withResolvers<Uint8Array | undefined>();
  const sock = await Bun.udpSocket({
    socket: { data: (_s, data) => resolve(new Uint8Array(data)) },
  });
  sock.send(packet, server.udpPort, "127.0.0.1");
  const timer = setTimeout(() => resolve(undefined), ms);
  const out = await promise;
  clearTimeout(timer);
  sock.close();
  return out;
}

/** Sends `bytes` over one TCP connection and collects what comes back until the server closes it or `ms` pass. */
async function tcp(bytes: Uint8Array, ms = 3000): Promise<{ data: Uint8Array; closed: boolean }> {
  const { promise, resolve } = Promise.withResolvers<{ data: Uint8Array; closed: boolean }>();
  const chunks: Buffer[] = [];
  const s = connect(server.tcpPort, "127.0.0.1", () => s.write(bytes));
  s.on("data", (c) => chunks.push(c));
  s.on("close", () => resolve({ data: new Uint8Array(Buffer.concat(chunks)), closed: true }));
  s.on("error", () => {});
  const timer = setTimeout(() => {
    s.destroy();
    resolve({ data: new Uint8Array(Buffer.concat(chunks)), closed: false });
  }, ms);
  const out = await promise;
  clearTimeout(timer);
  return out;
}
const framed = (...msgs: Uint8Array[]) => Uint8Array.from(msgs.flatMap((m) => [m.length >> 8, m.length & 255, ...m]));
/** Splits a TCP stream into its messages. */
function unframe(b: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at + 2 <= b.length; ) {
    const len = (b[at]! << 8) | b[at + 1]!;
    out.push(b.subarray(at + 2, at + 2 + len));
    at += 2 + len;
  }
  return out;
}

describe("the clusterset.local server over UDP", () => {
  test("node:dns's Resolver gets A (with the 5 s TTL) and SRV", async () => {
    const r = new Resolver();
    r.setServers([`127.0.0.1:${server.udpPort}`]);
    expect(await r.resolve4("web.shop.svc.clusterset.local", { ttl: true })).toEqual(
      ips.map((address) => ({ address, ttl: 5 })),
    );
    expect(await r.resolveSrv("_http._tcp.web.shop.svc.clusterset.local")).toEqual([
      { priority: 0, weight: 100, port: 80, name: "web.shop.svc.clusterset.local" },
    ]);
    await expect(r.resolve4("nope.shop.svc.clusterset.local")).rejects.toThrow();
  });

  test("rcodes: NXDOMAIN, REFUSED outside the zone or another class, NOTIMP for another opcode", async () => {
    const rcode = async (p: Uint8Array) => decodeAnswer((await udp(p))!).rcode;
    expect(await rcode(encodeQuery(1, "nope.shop.svc.clusterset.local", RRType.A))).toBe(RCode.NXDOMAIN);
    expect(await rcode(encodeQuery(2, "example.com", RRType.A))).toBe(RCode.REFUSED);
    expect(await rcode(encodeQuery(3, "web.shop.svc.clusterset.local", RRType.A, { class: 3 }))).toBe(RCode.REFUSED);
    expect(await rcode(encodeQuery(4, "clusterset.local", RRType.AXFR))).toBe(RCode.REFUSED);
    const notify = encodeQuery(5, "clusterset.local", RRType.SOA);
    notify[2] = (notify[2]! & 0x87) | (4 << 3);
    expect(await rcode(notify)).toBe(RCode.NOTIMP);
  });

  test("bad packets: FORMERR when the header is readable, nothing when not; the server lives on", async () => {
    const loop = Uint8Array.from([0, 9, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1]);
    const r = decodeAnswer((await udp(loop))!);
    expect([r.id, r.rcode]).toEqual([9, RCode.FORMERR]);
    expect(await udp(new Uint8Array(5), 150)).toBeUndefined();
    const response = encodeQuery(6, "web.shop.svc.clusterset.local", RRType.A);
    response[2]! |= 0x80;
    expect(await udp(response, 150)).toBeUndefined();
    expect(decodeAnswer((await udp(encodeQuery(7, "web.shop.svc.clusterset.local", RRType.A)))!).answers.length).toBe(
      2,
    );
  });

  test("an answer too big for UDP is truncated with TC; the same over TCP is whole", async () => {
    const q = encodeQuery(8, "big.shop.svc.clusterset.local", RRType.A);
    const u = decodeAnswer((await udp(q))!);
    expect(u.tc).toBe(true);
    expect(u.answers.length).toBeLessThan(200);
    const [t] = unframe((await tcp(framed(q), 500)).data);
    const whole = decodeAnswer(t!);
    expect(whole.tc).toBe(false);
    expect(whole.answers.length).toBe(200);
  });

  test("SERVFAIL until the caches have synced (an empty cache must not say NXDOMAIN)", async () => {
    synced = false;
    try {
      expect(decodeAnswer((await udp(encodeQuery(9, "web.shop.svc.clusterset.local", RRType.A)))!).rcode).toBe(
        RCode.SERVFAIL,
      );
    } finally {
      synced = true;
    }
  });
});

describe("the clusterset.local server over TCP", () => {
  test("several queries on one connection, split across writes as they come", async () => {
    const a = encodeQuery(11, "web.shop.svc.clusterset.local", RRType.A);
    const b = encodeQuery(12, "_http._tcp.web.shop.svc.clusterset.local", RRType.SRV);
    const { data } = await tcp(framed(a, b), 500);
    const answers = unframe(data).map(decodeAnswer);
    expect(answers.map((x) => [x.id, x.rcode, x.answers.length])).toEqual([
      [11, 0, 2],
      [12, 0, 1],
    ]);
  });

  test("an unreadable message closes the connection; a silent one is closed after the idle time", async () => {
    const garbage = framed(new Uint8Array(4));
    const g = await tcp(garbage, 2000);
    expect(g.closed).toBe(true);
    expect(g.data.length).toBe(0);
    // Half a length prefix, then silence: closed by the 1 s idle timeout, not held open.
    const t = performance.now();
    const idle = await tcp(Uint8Array.from([0]), 4000);
    expect(idle.closed).toBe(true);
    expect(performance.now() - t).toBeLessThan(3500);
  });
});

describe("splitAddress", () => {
  test("host:port, [v6]:port, :port", () => {
    expect(splitAddress("0.0.0.0:5353")).toEqual({ hostname: "0.0.0.0", port: 5353 });
    expect(splitAddress("[::]:53")).toEqual({ hostname: "::", port: 53 });
    expect(splitAddress(":5353")).toEqual({ hostname: "0.0.0.0", port: 5353 });
    expect(() => splitAddress("5353")).toThrow(/host:port/);
    expect(() => splitAddress("a:99999")).toThrow(/host:port/);
  });
});
