// HTTPS with optional client certificates, for an admin API that accepts them instead of tokens.
// Bun.serve does not hand a request's peer certificate to the handler, nor does Bun's node:https
// (its request sockets have no getPeerCertificate), so this path terminates TLS with node:tls
// (requestCert, never rejecting at the handshake: a client with a token but no certificate must
// still get in), reads the certificate per connection, passes the connection to a node:http
// server, and tells the auth middleware what the handshake verified.
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import { attachClientCertificate, type ClientCertificate } from "./auth.ts";

export interface MtlsServerOptions {
  host: string;
  port: number;
  cert: string;
  key: string;
  passphrase?: string;
  /** PEM of the CA(s) whose client certificates are accepted. */
  clientCa: string;
  maxRequestBodySize: number;
  fetch: (request: Request) => Response | Promise<Response>;
}

const verified = new WeakMap<Socket, ClientCertificate>();

function certificateOf(socket: TLSSocket): ClientCertificate | undefined {
  const peer = socket.getPeerCertificate();
  if (!peer || !peer.subject) return undefined;
  if (!socket.authorized)
    return { verified: false, error: String(socket.authorizationError ?? "not signed by the admin client CA") };
  const subject = peer.subject as unknown as Record<string, string | string[] | undefined>;
  const list = (x: string | string[] | undefined) => (x === undefined ? [] : Array.isArray(x) ? x : [x]);
  const cn = list(subject.CN)[0] ?? "unnamed";
  return { verified: true, name: cn, groups: list(subject.O) };
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | "too-large"> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return "too-large";
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

async function handle(o: MtlsServerOptions, req: IncomingMessage, res: ServerResponse) {
  const body = req.method === "GET" || req.method === "HEAD" ? undefined : await readBody(req, o.maxRequestBodySize);
  if (body === "too-large") {
    res.writeHead(413, { "content-type": "text/plain", connection: "close" }).end("request body too large");
    return;
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(":")) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  const url = `https://${req.headers.host ?? `${o.host}:${o.port}`}${req.url ?? "/"}`;
  const request = new Request(url, { method: req.method, headers, body: body?.length ? body : undefined });
  const cert = verified.get(req.socket);
  if (cert) attachClientCertificate(request, cert);
  const response = await o.fetch(request);
  const out: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    const prev = out[name];
    out[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [prev]), value];
  });
  res.writeHead(response.status, out);
  res.end(req.method === "HEAD" ? undefined : Buffer.from(await response.arrayBuffer()));
}

export async function startMtlsServer(o: MtlsServerOptions): Promise<{ port: number; stop(): Promise<void> }> {
  const http = createHttpServer((req, res) => {
    handle(o, req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end("internal error");
    });
  });
  const sockets = new Set<TLSSocket>();
  const server = createTlsServer(
    {
      cert: o.cert,
      key: o.key,
      passphrase: o.passphrase,
      ca: o.clientCa,
      requestCert: true,
      rejectUnauthorized: false,
    },
    (socket) => {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
      const cert = certificateOf(socket);
      if (cert) verified.set(socket, cert);
      http.emit("connection", socket);
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : o.port;
  return {
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
