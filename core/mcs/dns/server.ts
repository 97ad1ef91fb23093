// The clusterset.local DNS server: UDP and TCP (RFC 7766: length-prefixed messages, several per
// connection) on one address, answering from a ZoneView. What it cannot read it drops or answers
// FORMERR/NOTIMP/REFUSED; a slow or silent TCP client is cut off, so no client can hold it.
import { silentLogger, type Logger } from "../../log.ts";
import { answerQuestion, type ZoneView } from "./records.ts";
import { CLASS_IN, encodeAnswer, parseQuery, RCode, RRType, udpLimit, type Answer, type Query } from "./wire.ts";

export interface DnsServerOptions {
  /** host:port, e.g. 0.0.0.0:5353 or [::]:5353; port 0 picks one (tests). */
  address: string;
  view: ZoneView;
  /** SERVFAIL while false (the caches have not synced): an empty cache would answer NXDOMAIN, wrongly. */
  ready?: () => boolean;
  logger?: Logger;
  /** A TCP connection idle this long is closed (default 10 s). */
  tcpIdleSeconds?: number;
  /** At most this many TCP connections at once; more are closed at once (default 256). */
  maxTcpConnections?: number;
}

export interface DnsServer {
  readonly udpPort: number;
  readonly tcpPort: number;
  readonly hostname: string;
  /** Queries answered, by rcode name, and dropped packets: for metrics and tests. */
  readonly counts: Map<string, number>;
  stop(): void;
}

export function splitAddress(address: string): { hostname: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(address);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port > 65535) throw new Error(`"${address}" is not host:port (e.g. 0.0.0.0:5353 or [::]:5353)`);
  return { hostname: m[1] ?? (m[2] || "0.0.0.0"), port };
}

const RCODE_NAMES = Object.fromEntries(Object.entries(RCode).map(([k, v]) => [v, k])) as Record<number, string>;
const header = (rcode: number): Answer => ({ rcode, aa: false, answers: [], authority: [] });

/** The answer to one parsed query: the whole policy of what is refused, in one place. */
export function respond(query: Query, view: ZoneView, ready: boolean): Answer {
  if (query.opcode !== 0) return header(RCode.NOTIMP);
  const q = query.question;
  if (query.bad || !q) return header(RCode.FORMERR);
  if (q.class !== CLASS_IN) return header(RCode.REFUSED);
  // Zone transfers and the meta types we do not serve.
  if (q.type === RRType.AXFR || q.type === 251 || q.type === RRType.OPT) return header(RCode.REFUSED);
  if (!ready) return header(RCode.SERVFAIL);
  return answerQuestion(q, view) ?? header(RCode.REFUSED);
}

export async function startDnsServer(o: DnsServerOptions): Promise<DnsServer> {
  const { hostname, port } = splitAddress(o.address);
  const log = (o.logger ?? silentLogger).child({ component: "clusterset-dns" });
  const counts = new Map<string, number>();
  const count = (k: string) => counts.set(k, (counts.get(k) ?? 0) + 1);
  const isReady = o.ready ?? (() => true);

  /** The bytes to send back, or undefined to drop; never throws. */
  function handle(packet: Uint8Array, limit: (q: Query) => number): Uint8Array | undefined {
    try {
      const query = parseQuery(packet);
      if (!query) {
        count("dropped");
        return undefined;
      }
      const answer = respond(query, o.view, isReady());
      count(RCODE_NAMES[answer.rcode] ?? String(answer.rcode));
      return encodeAnswer(query, answer, limit(query));
    } catch (err) {
      // A bug, not an input: log it and drop, rather than take the server down.
      count("dropped");
      log.warn("a DNS query could not be answered", { err: (err as Error).message });
      return undefined;
    }
  }

  const udp = await Bun.udpSocket({
    hostname,
    port,
    socket: {
      data(socket, data, rport, raddr) {
        const out = handle(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), udpLimit);
        if (out) socket.send(out, rport, raddr);
      },
    },
  });

  interface Conn {
    buf: Uint8Array;
    timer?: ReturnType<typeof setTimeout>;
  }
  let open = 0;
  const maxConns = o.maxTcpConnections ?? 256;
  const idle = o.tcpIdleSeconds ?? 10;
  // Our own timer rather than the socket's timeout(): measured here, Bun did not fire it for a
  // connection that sent a partial message and went silent.
  const arm = (socket: { data: Conn; end(): void }) => {
    if (socket.data.timer) clearTimeout(socket.data.timer);
    socket.data.timer = setTimeout(() => socket.end(), idle * 1000);
  };
  const tcp = Bun.listen<Conn>({
    hostname,
    // The same port as UDP, as DNS clients expect (port 0: the one the UDP socket got).
    port: udp.port,
    socket: {
      open(socket) {
        if (++open > maxConns) {
          count("refused-connection");
          socket.end();
          return;
        }
        socket.data = { buf: new Uint8Array(0) };
        arm(socket);
      },
      data(socket, chunk) {
        if (!socket.data) return;
        const prev = socket.data.buf;
        const buf = new Uint8Array(prev.length + chunk.length);
        buf.set(prev);
        buf.set(chunk, prev.length);
        let at = 0;
        while (buf.length - at >= 2) {
          const len = (buf[at]! << 8) | buf[at + 1]!;
          if (buf.length - at - 2 < len) break;
          const out = handle(buf.subarray(at + 2, at + 2 + len), () => 65535);
          at += 2 + len;
          if (!out) {
            // Unreadable: the stream may be out of step, so the connection ends here.
            socket.end();
            return;
          }
          const framed = new Uint8Array(out.length + 2);
          framed[0] = out.length >> 8;
          framed[1] = out.length & 0xff;
          framed.set(out, 2);
          socket.write(framed);
        }
        socket.data.buf = buf.slice(at);
        // Past one message's size, a client is sending junk rather than a query.
        if (socket.data.buf.length > 65537) socket.end();
        else arm(socket);
      },
      close(socket) {
        open--;
        if (socket.data?.timer) clearTimeout(socket.data.timer);
      },
      error(_socket, err) {
        log.debug("a DNS TCP connection failed", { err: err.message });
      },
    },
  });

  log.info("serving the clusterset.local zone", { address: `${hostname}:${udp.port}` });
  return {
    udpPort: udp.port,
    tcpPort: tcp.port,
    hostname,
    counts,
    stop() {
      udp.close();
      tcp.stop(true);
    },
  };
}
