// `liqo proxy` as a process: CONNECT reaches the API server (here a real one, the rig's) and the
// auth service and nothing else; the auth port forwards to the auth service; bad flags fail with
// messages naming them. The "auth service" is a TCP echo server: the proxy only relays bytes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { join } from "node:path";
import type { TCPSocketListener } from "bun";
import { freePort } from "../rig/ports.ts";
import { startTestRig, type TestRig } from "../rig/testing.ts";
import { root, startRole, type RoleProcess } from "./fabric-rig.ts";

let rig: TestRig;
let role: RoleProcess;
let echo: TCPSocketListener<undefined>;
let httpPort = 0;
let authPort = 0;
let api: URL;

/** Opens a CONNECT tunnel and returns the proxy's status line and, on 200, what `payload` got back. */
function tunnel(target: string, payload?: string): Promise<{ status: string; reply: string }> {
  return new Promise((resolve, reject) => {
    const s = connect(httpPort, "127.0.0.1");
    let buf = "";
    let opened = false;
    s.setTimeout(20_000, () => {
      s.destroy();
      reject(new Error(`CONNECT ${target}: no answer; got ${JSON.stringify(buf)}`));
    });
    s.on("connect", () => s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`));
    s.on("data", (d) => {
      buf += d.toString("latin1");
      const end = buf.indexOf("\r\n\r\n");
      if (!opened && end >= 0) {
        opened = true;
        const status = buf.slice(0, buf.indexOf("\r\n"));
        buf = buf.slice(end + 4);
        if (!status.includes(" 200 ") || !payload) {
          s.destroy();
          resolve({ status, reply: "" });
          return;
        }
        s.write(payload);
      }
      if (opened && payload && buf.length > 0) {
        s.destroy();
        resolve({ status: "HTTP/1.1 200", reply: buf });
      }
    });
    s.on("error", reject);
  });
}

beforeAll(async () => {
  rig = await startTestRig({ clusters: 1, names: ["rome"], nodes: 1 });
  api = new URL(rig.clusters[0]!.server);
  echo = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(s, d) {
        s.write(`echo:${Buffer.from(d).toString()}`);
      },
    },
  });
  httpPort = await freePort();
  authPort = await freePort();
  role = await startRole([
    "proxy",
    `--listen=127.0.0.1:${httpPort}`,
    `--auth-listen=127.0.0.1:${authPort}`,
    `--api-server=${api.hostname}:${api.port}`,
    `--auth-service=127.0.0.1:${echo.port}`,
    "--admin-address=127.0.0.1:0",
  ]);
}, 600_000);

afterAll(async () => {
  await role?.kill();
  echo?.stop(true);
  await rig?.down();
}, 120_000);

describe("liqo proxy", () => {
  test("CONNECT to the API server opens a tunnel the client's TLS runs through", async () => {
    // A TLS ClientHello's first bytes get a TLS answer (a handshake record, type 0x16) from the API server.
    const hello = await fetch(`${rig.clusters[0]!.server}/version`, {
      tls: { rejectUnauthorized: false },
      proxy: `http://127.0.0.1:${httpPort}`,
    } as RequestInit).catch((e) => e as Error);
    expect(hello instanceof Error ? hello.message : hello.status).toBeOneOf([200, 401, 403]);
  }, 60_000);

  test("CONNECT to the auth service relays; any other destination is refused with 403", async () => {
    const ok = await tunnel(`127.0.0.1:${echo.port}`, "ping");
    expect(ok.reply).toBe("echo:ping");
    const denied = await tunnel("127.0.0.1:22");
    expect(denied.status).toContain("403");
    const other = await tunnel(`${api.hostname}:${Number(api.port) + 1}`);
    expect(other.status).toContain("403");
    const metrics = await (await fetch(`${role.url}/metrics`)).text();
    expect(metrics).toMatch(/liqo_proxy_connections_total\{listener="http",outcome="forbidden"\} 2/);
  }, 60_000);

  test("the auth port forwards to the auth service", async () => {
    const reply = await new Promise<string>((resolve, reject) => {
      const s = connect(authPort, "127.0.0.1", () => s.write("hello"));
      s.on("data", (d) => {
        s.destroy();
        resolve(d.toString());
      });
      s.on("error", reject);
    });
    expect(reply).toBe("echo:hello");
  }, 30_000);

  test("bad flags fail with a message naming the flag", async () => {
    for (const [flags, message] of [
      [["--auth-service=a:443"], /--api-server is required outside a pod/],
      [["--auth-service=liqo-auth", "--api-server=a:443"], /--auth-service must be host:port/],
      [["--auth-service=a:443", "--api-server=,"], /--api-server needs at least one host:port/],
      [["--auth-service=a:443", "--api-server=a:443", "--listen=nope"], /--listen must be host:port/],
    ] as const) {
      const p = Bun.spawn(
        [join(root, "node_modules/.bin/bun"), "cli/liqo.ts", "proxy", "--admin-address=127.0.0.1:0", ...flags],
        { cwd: root, stdout: "pipe", stderr: "pipe", env: { ...process.env, KUBERNETES_SERVICE_HOST: "" } },
      );
      const [stderr, code] = [await new Response(p.stderr).text(), await p.exited];
      expect(stderr).toMatch(message);
      expect(code).not.toBe(0);
    }
  }, 60_000);
});
