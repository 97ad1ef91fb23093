// The in-band proxy's two services, in Bun sockets: a TCP forwarder (to the authentication
// service) and an HTTP CONNECT proxy (to the API server, as Liqo's envoy liqo-proxy does; the
// client's TLS runs end to end inside the CONNECT tunnel, so the API server's certificate is
// checked against its real name). Either side may be a TCP address or a Unix socket, which lets a
// forwarder listening in one network namespace reach a service in another.
import type { Socket, SocketListener } from "bun";

export type Address = { hostname: string; port: number } | { unix: string };

interface Pipe {
  peer?: Socket<Pipe>;
  /** Bytes the peer could not take yet (backpressure), written on drain. */
  pending: Uint8Array[];
  /** CONNECT: the request head read so far. */
  head?: string;
  closed?: boolean;
}

const newPipe = (): Pipe => ({ pending: [] });

/** A running listener: `port` for a TCP one (0 asked = the one picked), undefined on a Unix socket. */
export type Listener = SocketListener<Pipe> & { readonly port: number | undefined };

function send(to: Socket<Pipe>, data: Uint8Array) {
  const queue = to.data.pending;
  if (queue.length) {
    queue.push(data);
    return;
  }
  const n = to.write(data);
  if (n < data.byteLength) queue.push(data.subarray(Math.max(n, 0)));
}

function flush(s: Socket<Pipe>) {
  const queue = s.data.pending;
  while (queue.length) {
    const chunk = queue[0]!;
    const n = s.write(chunk);
    if (n < chunk.byteLength) {
      queue[0] = chunk.subarray(Math.max(n, 0));
      return;
    }
    queue.shift();
  }
}

/** Connects to `to`, relaying between it and `client`; data the client sent meanwhile is queued. */
async function dial(to: Address, client: Socket<Pipe>, onOpen?: () => void): Promise<void> {
  const handlers = {
    data(s: Socket<Pipe>, d: Uint8Array) {
      if (s.data.peer) send(s.data.peer, d);
    },
    drain: flush,
    close(s: Socket<Pipe>) {
      s.data.closed = true;
      s.data.peer?.end();
    },
    error(s: Socket<Pipe>) {
      s.data.peer?.end();
    },
  };
  try {
    const upstream = (await Bun.connect<Pipe>({
      ...to,
      socket: handlers,
      data: { pending: [], peer: client },
    } as never)) as Socket<Pipe>;
    if (client.data.closed) {
      upstream.end();
      return;
    }
    const early = client.data.pending;
    client.data.pending = [];
    client.data.peer = upstream;
    onOpen?.();
    for (const chunk of early) send(upstream, chunk);
  } catch {
    client.end();
  }
}

const clientHandlers = (onData: (s: Socket<Pipe>, d: Uint8Array) => void) => ({
  data: onData,
  drain: flush,
  close(s: Socket<Pipe>) {
    s.data.closed = true;
    s.data.peer?.end();
  },
  error(s: Socket<Pipe>) {
    s.data.peer?.end();
  },
});

/** Every connection to `listen` is relayed to `to`. */
export function startForwarder(o: { listen: Address; to: Address; onConnection?: () => void }): Listener {
  return Bun.listen<Pipe>({
    ...o.listen,
    socket: {
      open(s: Socket<Pipe>) {
        s.data = newPipe();
        o.onConnection?.();
        void dial(o.to, s);
      },
      // Until the upstream is open, what the client sends waits in its own queue.
      ...clientHandlers((s, d) => {
        if (s.data.peer) send(s.data.peer, d);
        else s.data.pending.push(new Uint8Array(d));
      }),
    },
  } as never);
}

/** An HTTP CONNECT proxy; `allow` decides which host:port may be reached (e.g. only the API server). */
export function startConnectProxy(o: {
  listen: Address;
  allow: (host: string, port: number) => boolean;
  onConnection?: () => void;
}): Listener {
  return Bun.listen<Pipe>({
    ...o.listen,
    socket: {
      open(s: Socket<Pipe>) {
        s.data = newPipe();
        s.data.head = "";
      },
      ...clientHandlers((s, d) => {
        if (s.data.peer) {
          send(s.data.peer, d);
          return;
        }
        if (s.data.head === undefined) {
          s.data.pending.push(new Uint8Array(d));
          return;
        }
        s.data.head += Buffer.from(d).toString("latin1");
        const end = s.data.head.indexOf("\r\n\r\n");
        if (end < 0) {
          if (s.data.head.length > 8192) s.end("HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n");
          return;
        }
        const m = /^CONNECT (\[[^\]]+\]|[^\s:]+):(\d+) HTTP\/1\.[01]\r\n/.exec(s.data.head);
        const rest = Buffer.from(s.data.head.slice(end + 4), "latin1");
        s.data.head = undefined;
        if (!m) {
          s.end("HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n");
          return;
        }
        const host = m[1]!.replace(/^\[|\]$/g, "");
        const port = Number(m[2]);
        if (!o.allow(host, port)) {
          s.end(`HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n`);
          return;
        }
        if (rest.byteLength) s.data.pending.push(new Uint8Array(rest));
        o.onConnection?.();
        void dial({ hostname: host, port }, s, () => {
          s.write("HTTP/1.1 200 Connection established\r\n\r\n");
        });
      }),
    },
  } as never);
}
