// Hostile HTTP for liqo's listening roles (the auth service, the admin API): random methods,
// paths, headers and bodies, slow clients that never finish their headers, and many connections at
// once. What a role must do with them: answer each with a status (or close it), keep answering
// the well-formed requests meanwhile, never put a secret in an answer, and keep its memory bounded.
import { connect } from "node:net";
import { connect as tlsConnect } from "node:tls";

function nested(depth: number): string {
  return "[".repeat(depth) + "]".repeat(depth);
}

const PATHS = [
  "/identity",
  "/ids",
  "/metrics",
  "/healthz",
  "/readyz",
  "/views/leader",
  "/views/controllers",
  "/../../../etc/passwd",
  "/%2e%2e/%2e%2e/etc/shadow",
  "/identity%00.json",
  "/名前/😀",
  `/${"a".repeat(8000)}`,
  "/identity?token=x&token=y&cluster[clusterID]=1",
  "//identity",
  "/identity/",
];

const BODIES: [string, () => string | Uint8Array | undefined][] = [
  ["none", () => undefined],
  ["random bytes", () => crypto.getRandomValues(new Uint8Array(4096))],
  ["1 MB of JSON", () => JSON.stringify({ token: "x".repeat(1_000_000) })],
  ["JSON nested 100,000 deep", () => nested(100_000)],
  ["wrong types", () => JSON.stringify({ cluster: 1, token: [], clusterID: { $ne: null } })],
  [
    "a cluster with unicode and a NUL",
    () => JSON.stringify({ cluster: { clusterID: "名\u0000", clusterName: "\u202e" }, token: "😀" }),
  ],
  ["truncated JSON", () => '{"cluster": {"clusterID": "a'],
  ["an array of 100,000 numbers", () => JSON.stringify(Array.from({ length: 100_000 }, (_, i) => i))],
];

const HEADERS: [string, () => Record<string, string>][] = [
  ["json", () => ({ "content-type": "application/json" })],
  ["a wrong content type", () => ({ "content-type": "text/xml; charset=utf-7" })],
  ["a 16 KB header", () => ({ "x-fuzz": "h".repeat(16_384) })],
  ["100 headers", () => Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`x-fuzz-${i}`, String(i)]))],
  ["a bearer that is not one", () => ({ authorization: "Bearer ../../../../" })],
  ["a forwarded-for chain", () => ({ "x-forwarded-for": Array.from({ length: 50 }, () => "10.0.0.1").join(", ") })],
];

const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"];

export interface FuzzAnswer {
  request: string;
  status: number | "no answer";
  body: string;
}

/** `n` random requests to `base`, `width` at a time; each answer (or the lack of one) returned. */
export async function fuzzHttp(
  base: string,
  rand: () => number,
  n: number,
  width = 8,
  tls?: { ca: string },
): Promise<FuzzAnswer[]> {
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
  const plan = Array.from({ length: n }, () => {
    const method = pick(METHODS);
    const path = pick(PATHS);
    const [bodyName, body] = pick(BODIES);
    const [headerName, headers] = pick(HEADERS);
    return { method, path, bodyName, body, headerName, headers };
  });
  const out: FuzzAnswer[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < plan.length) {
        const p = plan[next++]!;
        const request = `${p.method} ${p.path.slice(0, 60)} with ${p.headerName}, body ${p.bodyName}`;
        try {
          const res = await fetch(base + p.path, {
            method: p.method,
            headers: p.headers(),
            body: p.method === "GET" || p.method === "HEAD" ? undefined : p.body(),
            signal: AbortSignal.timeout(15_000),
            ...(tls ? { tls: { ca: tls.ca } } : {}),
          } as RequestInit);
          out.push({ request, status: res.status, body: await res.text() });
        } catch (err) {
          out.push({ request, status: "no answer", body: (err as Error).message });
        }
      }
    }),
  );
  return out;
}

/**
 * Opens `n` connections that send a request line and one header, then a byte every few seconds,
 * never finishing (slowloris). Returns a function that closes those still open, and how many the
 * server had already closed by then.
 */
export function slowClients(url: string, n: number): () => number {
  const u = new URL(url);
  const port = Number(u.port);
  const sockets = Array.from({ length: n }, () => {
    const s =
      u.protocol === "https:"
        ? tlsConnect({ host: u.hostname, port, rejectUnauthorized: false })
        : connect({ host: u.hostname, port });
    s.on("error", () => {});
    s.write(`POST /identity HTTP/1.1\r\nHost: ${u.host}\r\nContent-Length: 1000000\r\nX-Slow: `);
    return s;
  });
  const drip = setInterval(() => {
    for (const s of sockets) if (!s.destroyed) s.write("a");
  }, 2000);
  return () => {
    clearInterval(drip);
    const closed = sockets.filter((s) => s.destroyed || !s.writable).length;
    for (const s of sockets) s.destroy();
    return closed;
  };
}
