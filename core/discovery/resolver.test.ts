import { afterEach, expect, test } from "bun:test";
import dgram from "node:dgram";
import { rmSync } from "node:fs";
import { decodeMessage, encodeMessage, RecordType } from "./dns.ts";
import { DnsLookupError, lookup, systemDnsServer } from "./resolver.ts";

// A DNS server on loopback that answers each query with what `reply` makes of it.
let server: dgram.Socket | undefined;
async function serve(reply: (query: Uint8Array) => Uint8Array[] | undefined): Promise<number> {
  server = dgram.createSocket("udp4");
  server.on("message", (msg, from) => {
    for (const out of reply(new Uint8Array(msg)) ?? []) server!.send(out, from.port, from.address);
  });
  await new Promise<void>((resolve) => server!.bind(0, "127.0.0.1", () => resolve()));
  return server.address().port;
}
afterEach(() => {
  server?.close();
  server = undefined;
});

const answer = (query: Uint8Array, id = decodeMessage(query).id) =>
  encodeMessage({
    id,
    response: true,
    answers: [
      { name: "_liqo_auth._tcp.example.test", type: RecordType.PTR, ttl: 60, target: "a._liqo_auth._tcp.example.test" },
    ],
  });

test("the records of the answer with the query's ID", async () => {
  const port = await serve((q) => [answer(q)]);
  const r = await lookup({ host: "127.0.0.1", port }, "_liqo_auth._tcp.example.test", RecordType.PTR);
  expect(r).toEqual({
    rcode: 0,
    records: [{ name: "_liqo_auth._tcp.example.test", type: 12, ttl: 60, target: "a._liqo_auth._tcp.example.test" }],
  });
});

test("an answer with another ID is not taken for ours", async () => {
  const port = await serve((q) => [answer(q, (decodeMessage(q).id + 1) & 0xffff), answer(q)]);
  const r = await lookup({ host: "127.0.0.1", port }, "_liqo_auth._tcp.example.test", RecordType.PTR);
  expect(r.records).toHaveLength(1);
});

test("a malformed answer is a DnsLookupError naming the server and the name", async () => {
  const port = await serve((q) => [Uint8Array.from([...q.slice(0, 2), 0x84, 0, 0, 0, 0, 9, 0, 0, 0, 0])]);
  const err = await lookup({ host: "127.0.0.1", port }, "x.example.test", RecordType.PTR).catch((e) => e);
  expect(err).toBeInstanceOf(DnsLookupError);
  expect(err.message).toContain(`127.0.0.1:${port} answered x.example.test with a malformed message`);
});

test("a server that does not answer is a DnsLookupError at the deadline", async () => {
  const port = await serve(() => undefined);
  const err = await lookup({ host: "127.0.0.1", port }, "x.example.test", RecordType.PTR, 300).catch((e) => e);
  expect(err).toBeInstanceOf(DnsLookupError);
  expect(err.message).toContain("no answer from");
});

test("NXDOMAIN comes back as rcode 3", async () => {
  const port = await serve((q) => {
    const out = answer(q);
    out[3] = 3;
    return [out];
  });
  expect((await lookup({ host: "127.0.0.1", port }, "x.example.test", RecordType.PTR)).rcode).toBe(3);
});

test("the system's DNS server is the first IPv4 nameserver of resolv.conf", async () => {
  const path = `${process.env.TMPDIR ?? "/tmp"}/resolv-${process.pid}.conf`;
  await Bun.write(path, "search x\nnameserver fe80::1\nnameserver 10.96.0.10\nnameserver 1.1.1.1\n");
  expect(await systemDnsServer(path)).toEqual({ host: "10.96.0.10", port: 53 });
  expect(await systemDnsServer("/nonexistent")).toBeUndefined();
  rmSync(path);
});
