// The end of stdin must reach the remote command (`echo hi | kubectl exec -i … -- tr a-z A-Z`).
// A fake remote API server speaks the exec WebSocket protocol the way kube-apiserver does (it
// chooses v5.channel.k8s.io, or only v4 when told to) and behaves like `tr a-z A-Z`: it answers
// only once its stdin is closed. The kubelet side is driven with the SPDY frames the local API
// server sends: SYN_STREAMs, stdin DATA, then an empty DATA frame with FIN (spdystream's Close()).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { KubeConfig } from "../../kube/kubeconfig.ts";
import type { ServerWebSocket } from "bun";
import { createKubeClient, type KubeClient } from "../../kube/client.ts";
import { silentLogger } from "../../log.ts";
import { serveExecUpgrade } from "./exec.ts";
import { startRemoteExec } from "./remote-exec.ts";
import { waitFor } from "../../../tests/support/wait.ts";
import { controlFrame, dataFrame, FLAG_FIN, FrameReader, FrameType, HeaderEncoder } from "./spdy/frames.ts";

type Session = { protocol: string; stdin: string; stdinClosed: boolean; messages: number[][] };
const sessions: Session[] = [];
let server: ReturnType<typeof Bun.serve<Session>>;
let remote: KubeClient;
let v4Only = false;

beforeAll(() => {
  server = Bun.serve<Session>({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req, srv) {
      const offered = (req.headers.get("sec-websocket-protocol") ?? "").split(",").map((s) => s.trim());
      const protocol = v4Only ? "v4.channel.k8s.io" : offered[0]!;
      const data: Session = { protocol, stdin: "", stdinClosed: false, messages: [] };
      if (srv.upgrade(req, { data, headers: { "sec-websocket-protocol": protocol } })) return undefined;
      return new Response("not an upgrade", { status: 400 });
    },
    websocket: {
      open(ws) {
        sessions.push(ws.data);
      },
      message(ws: ServerWebSocket<Session>, msg) {
        const bytes = typeof msg === "string" ? new TextEncoder().encode(msg) : new Uint8Array(msg);
        ws.data.messages.push([...bytes]);
        if (bytes[0] === 0) ws.data.stdin += new TextDecoder().decode(bytes.subarray(1));
        if (bytes[0] === 255 && bytes[1] === 0) {
          ws.data.stdinClosed = true;
          // `tr a-z A-Z` writes once its input ends, then exits 0.
          ws.send(Uint8Array.of(1, ...new TextEncoder().encode(ws.data.stdin.toUpperCase())));
          ws.send(Uint8Array.of(3, ...new TextEncoder().encode('{"metadata":{},"status":"Success"}')));
          ws.close(1000);
        }
      },
    },
  });
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${server.port}`, skipTLSVerify: true }],
    users: [{ name: "u" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  remote = createKubeClient(kc);
});
afterAll(() => server.stop(true));

const target = { remoteNamespace: "ns", remoteName: "pod" };
const request = { container: "c", command: ["tr", "a-z", "A-Z"], stdin: true, stdout: true, stderr: true, tty: false };

describe("startRemoteExec", () => {
  test("stdin closed before the WebSocket is open still reaches the remote as v5's CLOSE, after the data", async () => {
    sessions.length = 0;
    let out = "";
    let ended: Promise<string | undefined> | undefined;
    const done = new Promise<string | undefined>((resolve) => {
      ended = startRemoteExec(remote, target, request, {
        stdout: (d) => {
          out += new TextDecoder().decode(d);
        },
        stderr: () => {},
        status: () => {},
        end: resolve,
      }).then((exec) => {
        // Both while connecting, as when the caller's stdin is a short pipe.
        exec.stdin(new TextEncoder().encode("hi\n"));
        exec.closeStdin();
        return undefined;
      });
    });
    await ended;
    expect(
      await Promise.race([done, Bun.sleep(5000).then(() => "timed out waiting for the remote to finish")]),
    ).toBeUndefined();
    expect(out).toBe("HI\n");
    expect(sessions[0]!.protocol).toBe("v5.channel.k8s.io");
    expect(sessions[0]!.messages).toEqual([
      [0, ...new TextEncoder().encode("hi\n")],
      [255, 0],
    ]);
  });

  test("reports the protocol the remote chose once open", async () => {
    sessions.length = 0;
    const exec = await startRemoteExec(
      remote,
      target,
      { ...request, stdin: false },
      { stdout() {}, stderr() {}, status() {}, end() {} },
    );
    expect(
      await waitFor("the protocol once open", () => exec.protocol || undefined, { timeoutMs: 5_000, intervalMs: 10 }),
    ).toBe("v5.channel.k8s.io");
    exec.close();
  });

  test("a v4-only remote cannot be told: the caller hears so instead of nothing", async () => {
    sessions.length = 0;
    v4Only = true;
    try {
      let told = "";
      const exec = await startRemoteExec(remote, target, request, {
        stdout() {},
        stderr() {},
        status() {},
        end() {},
        stdinNotClosable: (p) => {
          told = p;
        },
      });
      exec.closeStdin();
      expect(await waitFor("the v4-only warning", () => told || undefined, { timeoutMs: 5_000, intervalMs: 10 })).toBe(
        "v4.channel.k8s.io",
      );
      expect(sessions[0]!.messages.some((m) => m[0] === 255)).toBe(false);
      exec.close();
    } finally {
      v4Only = false;
    }
  });
});

/** The SPDY side of the local API server: a raw connection to serveExecUpgrade. */
async function spdyExec(
  frames: (enc: HeaderEncoder) => Uint8Array[],
): Promise<{ stdout: string; error: string; fins: number[] }> {
  const kubelet = net.createServer((socket) =>
    serveExecUpgrade(socket, Buffer.alloc(0), remote, target, request, silentLogger),
  );
  await new Promise<void>((r) => kubelet.listen(0, "127.0.0.1", r));
  const port = (kubelet.address() as net.AddressInfo).port;
  const client = net.connect(port, "127.0.0.1");
  const reader = new FrameReader();
  const got = { stdout: "", error: "", fins: [] as number[] };
  let handshake = "";
  let upgraded = false;
  const finished = new Promise<void>((resolve) => {
    client.on("data", (chunk: Buffer) => {
      let bytes = new Uint8Array(chunk);
      if (!upgraded) {
        handshake += chunk.toString("latin1");
        const end = handshake.indexOf("\r\n\r\n");
        if (end < 0) return;
        upgraded = true;
        bytes = new Uint8Array(Buffer.from(handshake.slice(end + 4), "latin1"));
      }
      for (const f of reader.push(bytes)) {
        if (f.kind !== "data") continue;
        const text = new TextDecoder().decode(f.payload);
        if (f.streamId === 5) got.stdout += text;
        if (f.streamId === 1) got.error += text;
        if (f.flags & FLAG_FIN) got.fins.push(f.streamId);
      }
    });
    client.on("close", () => resolve());
  });
  // All of it in one write: the API server's frames arrive as fast as that.
  client.write(Buffer.concat(frames(new HeaderEncoder()).map((f) => Buffer.from(f))));
  await Promise.race([finished, Bun.sleep(5000)]);
  client.destroy();
  kubelet.close();
  return got;
}

function synStream(id: number, streamtype: string, enc: HeaderEncoder): Uint8Array {
  const block = enc.encode({ streamtype });
  const payload = new Uint8Array(10 + block.length);
  new DataView(payload.buffer).setUint32(0, id);
  payload.set(block, 10);
  return controlFrame(FrameType.SynStream, 0, payload);
}

const opening = (enc: HeaderEncoder) => [
  synStream(1, "error", enc),
  synStream(3, "stdin", enc),
  synStream(5, "stdout", enc),
  synStream(7, "stderr", enc),
];

describe("serveExecUpgrade", () => {
  test("stdin and its FIN sent together with the streams reach the remote command", async () => {
    const got = await spdyExec((enc) => [
      ...opening(enc),
      dataFrame(3, new TextEncoder().encode("hi\n")),
      dataFrame(3, new Uint8Array(0), true),
    ]);
    expect(got.stdout).toBe("HI\n");
    expect(got.error).toContain('"status":"Success"');
    expect(got.fins).toContain(5);
  });

  test("a reset stdin stream ends stdin too", async () => {
    const rst = new Uint8Array(8);
    new DataView(rst.buffer).setUint32(0, 3);
    new DataView(rst.buffer).setUint32(4, 5); // CANCEL
    const got = await spdyExec((enc) => [
      ...opening(enc),
      dataFrame(3, new TextEncoder().encode("bye\n")),
      controlFrame(FrameType.RstStream, 0, rst),
    ]);
    expect(got.stdout).toBe("BYE\n");
  });
});
