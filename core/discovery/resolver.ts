// A unicast DNS client (UDP, RFC 1035) for WAN discovery, on the same codec as mDNS: one question
// per query, a random ID, answers only from the server asked and with that ID, a deadline. The
// answer's records (answer and additional sections) come back as they are; the rcode says
// whether the name exists.
import dgram from "node:dgram";
import { randomInt } from "node:crypto";
import { decodeMessage, DnsFormatError, encodeMessage, MAX_MESSAGE, type DnsRecord } from "./dns.ts";

export interface DnsServer {
  host: string;
  port: number;
}

export class DnsLookupError extends Error {
  override name = "DnsLookupError";
}

export interface LookupAnswer {
  /** 0 NOERROR, 3 NXDOMAIN (the name does not exist), others are server failures. */
  rcode: number;
  records: DnsRecord[];
}

export async function lookup(server: DnsServer, name: string, type: number, timeoutMs = 3_000): Promise<LookupAnswer> {
  const id = randomInt(0, 0x10000);
  const query = encodeMessage({ id, questions: [{ name, type }] });
  // Recursion desired: a resolver may stand between us and the zone.
  query[2] = 0x01;
  const socket = dgram.createSocket("udp4");
  try {
    return await new Promise<LookupAnswer>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new DnsLookupError(`no answer from ${server.host}:${server.port} for ${name} within ${timeoutMs}ms`)),
        timeoutMs,
      );
      socket.on("error", (err) => {
        clearTimeout(timer);
        reject(new DnsLookupError(`asking ${server.host}:${server.port} for ${name}: ${err.message}`));
      });
      socket.on("message", (msg, from) => {
        if (from.address !== server.host || from.port !== server.port || msg.length > MAX_MESSAGE) return;
        let m;
        try {
          m = decodeMessage(new Uint8Array(msg.buffer, msg.byteOffset, msg.byteLength));
        } catch (err) {
          if (!(err instanceof DnsFormatError)) throw err;
          clearTimeout(timer);
          reject(
            new DnsLookupError(
              `${server.host}:${server.port} answered ${name} with a malformed message: ${err.message}`,
            ),
          );
          return;
        }
        if (m.id !== id || !m.response) return;
        clearTimeout(timer);
        resolve({ rcode: msg[3]! & 0x0f, records: [...m.answers, ...m.additionals] });
      });
      socket.send(query, server.port, server.host, (err) => {
        if (err) {
          clearTimeout(timer);
          reject(new DnsLookupError(`asking ${server.host}:${server.port} for ${name}: ${err.message}`));
        }
      });
    });
  } finally {
    socket.close();
  }
}

/** The first nameserver of resolv.conf (what a pod's DNS policy gives it), port 53. */
export async function systemDnsServer(path = "/etc/resolv.conf"): Promise<DnsServer | undefined> {
  const text = await Bun.file(path)
    .text()
    .catch(() => "");
  const ns = text
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .find((w) => w[0] === "nameserver" && /^\d+\.\d+\.\d+\.\d+$/.test(w[1] ?? ""));
  return ns ? { host: ns[1]!, port: 53 } : undefined;
}
