import { afterAll, describe, expect, test } from "bun:test";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SocketListener } from "bun";
import { startConnectProxy, startForwarder } from "./proxy.ts";

const open: SocketListener<unknown>[] = [];
afterAll(() => {
  for (const l of open) l.stop(true);
});

/** A TCP server that echoes what it gets, upper-cased, so a relayed byte is told from an echoed one. */
const echo = Bun.listen({
  hostname: "127.0.0.1",
  port: 0,
  socket: {
    data(s, d) {
      s.write(Buffer.from(d).toString().toUpperCase());
    },
  },
});
open.push(echo as never);

/** Sends `payloads` over a raw TCP connection and resolves with everything received until `until` matches. */
async function exchange(port: number, payloads: string[], until: RegExp): Promise<string> {
  let got = "";
  const { promise, resolve, reject } = Promise.withResolvers<string>();
  const timer = setTimeout(() => reject(new Error(`no ${until} in ${JSON.stringify(got)}`)), 5000);
  const s = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_s, d) {
        got += Buffer.from(d).toString();
        if (until.test(got)) {
          clearTimeout(timer);
          resolve(got);
        }
      },
      close() {
        clearTimeout(timer);
        resolve(got);
      },
    },
  });
  for (const p of payloads) s.write(p);
  const out = await promise;
  s.end();
  return out;
}

describe("in-band proxy", () => {
  test("a forwarder through a Unix socket relays both ways, data sent before the upstream is open included", async () => {
    const sock = join(tmpdir(), `inband-${process.pid}-a.sock`);
    open.push(startForwarder({ listen: { unix: sock }, to: { hostname: "127.0.0.1", port: echo.port } }) as never);
    let connections = 0;
    const front = startForwarder({
      listen: { hostname: "127.0.0.1", port: 0 },
      to: { unix: sock },
      onConnection: () => connections++,
    });
    open.push(front as never);
    expect(await exchange(front.port!, ["hello ", "tunnel"], /HELLO TUNNEL/)).toBe("HELLO TUNNEL");
    expect(connections).toBe(1);
  });

  test("CONNECT to an allowed target answers 200 and then relays; bytes after the request head are kept", async () => {
    let connections = 0;
    const proxy = startConnectProxy({
      listen: { hostname: "127.0.0.1", port: 0 },
      allow: (h, p) => h === "127.0.0.1" && p === echo.port,
      onConnection: () => connections++,
    });
    open.push(proxy as never);
    const out = await exchange(
      proxy.port!,
      [`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: x\r\n\r\nearly`],
      /EARLY/,
    );
    expect(out).toBe("HTTP/1.1 200 Connection established\r\n\r\nEARLY");
    expect(connections).toBe(1);
  });

  test("a target that is not allowed is 403, anything but CONNECT is 405, and nothing is dialled", async () => {
    let connections = 0;
    const proxy = startConnectProxy({
      listen: { hostname: "127.0.0.1", port: 0 },
      allow: () => false,
      onConnection: () => connections++,
    });
    open.push(proxy as never);
    expect(await exchange(proxy.port!, [`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\n\r\n`], /\r\n\r\n/)).toStartWith(
      "HTTP/1.1 403 Forbidden",
    );
    expect(await exchange(proxy.port!, ["GET http://127.0.0.1/ HTTP/1.1\r\n\r\n"], /\r\n\r\n/)).toStartWith(
      "HTTP/1.1 405 Method Not Allowed",
    );
    expect(connections).toBe(0);
  });
});
