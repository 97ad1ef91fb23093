// Exec in the remote pod over the remote API server's WebSocket streaming protocol
// (v5.channel.k8s.io, else v4): each binary message starts with its channel byte —
// 0 stdin, 1 stdout, 2 stderr, 3 error (the final Status), 4 resize; v5 adds 255 to close a channel.
import type { KubeClient } from "../../kube/client.ts";
import { podPath, remoteEndpoint } from "./remote.ts";
import type { RemotePodRef } from "./types.ts";

export interface ExecRequest {
  container: string;
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

export interface ExecHandlers {
  stdout(data: Uint8Array): void;
  stderr(data: Uint8Array): void;
  /** The Status JSON the remote sent on the error channel (exit code, failure), verbatim. */
  status(json: Uint8Array): void;
  /** The session ended; `error` when it never started or broke (a Status must be synthesized). */
  end(error?: string): void;
  /** stdin ended but the remote speaks only v4, which cannot pass that on. */
  stdinNotClosable?(protocol: string): void;
}

export interface RemoteExec {
  stdin(data: Uint8Array): void;
  /**
   * The caller's stdin ended. Sent as v5's CLOSE of the stdin channel once the WebSocket is open
   * (the protocol is only known then); v4 has no way to say it, see `protocol`.
   */
  closeStdin(): void;
  /** The subprotocol the remote API server chose; "" until the WebSocket is open. */
  readonly protocol: string;
  resize(json: Uint8Array): void;
  close(): void;
}

const V5 = "v5.channel.k8s.io";
const Channel = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4, close: 255 } as const;

export async function startRemoteExec(
  remote: KubeClient,
  target: RemotePodRef,
  req: ExecRequest,
  on: ExecHandlers,
): Promise<RemoteExec> {
  const endpoint = await remoteEndpoint(remote);
  const q = new URLSearchParams({ container: req.container });
  for (const c of req.command) q.append("command", c);
  q.set("stdin", String(req.stdin));
  q.set("stdout", String(req.stdout));
  q.set("stderr", String(req.stderr && !req.tty));
  q.set("tty", String(req.tty));
  const url = `${endpoint.server.replace(/^http/, "ws")}${podPath(target.remoteNamespace, target.remoteName, "exec")}?${q}`;
  const ws = new WebSocket(url, {
    protocols: [V5, "v4.channel.k8s.io"],
    headers: endpoint.headers,
    tls: endpoint.tls,
    perMessageDeflate: false,
  } as never);
  ws.binaryType = "arraybuffer";
  let ended = false;
  let opened = false;
  const finish = (error?: string) => {
    if (ended) return;
    ended = true;
    on.end(error);
  };
  const pending: Uint8Array[] = [];
  let stdinClosed = false;
  const sendStdinClose = () => {
    // Only v5 can say "stdin is done" without closing everything: with v4 the remote command
    // keeps its stdin open until the session ends (what kubectl itself does against a v4 server).
    if (ws.protocol === V5) ws.send(Uint8Array.of(Channel.close, Channel.stdin));
    else on.stdinNotClosable?.(ws.protocol);
  };
  const send = (channel: number, data: Uint8Array) => {
    const msg = new Uint8Array(data.length + 1);
    msg[0] = channel;
    msg.set(data, 1);
    if (ws.readyState === WebSocket.OPEN) ws.send(msg);
    else if (ws.readyState === WebSocket.CONNECTING) pending.push(msg);
  };
  ws.onopen = () => {
    opened = true;
    for (const m of pending.splice(0)) ws.send(m);
    // stdin can end before the remote has answered (`echo hi | kubectl exec -i`): its CLOSE waits
    // here, after the data, because ws.protocol is "" while connecting.
    if (stdinClosed) sendStdinClose();
  };
  ws.onmessage = (ev) => {
    const bytes = new Uint8Array(ev.data as ArrayBuffer);
    if (bytes.length === 0) return;
    const body = bytes.subarray(1);
    switch (bytes[0]) {
      case Channel.stdout:
        on.stdout(body);
        break;
      case Channel.stderr:
        on.stderr(body);
        break;
      case Channel.error:
        on.status(body);
        break;
    }
  };
  ws.onerror = (ev) => {
    // Bun reports a refused upgrade (e.g. 403, 404 from the remote) as an error before open.
    const detail = (ev as ErrorEvent).message || "the WebSocket to the remote API server failed";
    finish(
      opened
        ? `the exec stream to the remote cluster broke: ${detail}`
        : `the remote API server refused the exec into ${target.remoteNamespace}/${target.remoteName}: ${detail}`,
    );
  };
  ws.onclose = (ev) =>
    finish(
      opened
        ? undefined
        : `the remote API server closed the exec into ${target.remoteNamespace}/${target.remoteName} before it started (code ${ev.code}${ev.reason ? `: ${ev.reason}` : ""})`,
    );
  return {
    stdin: (data) => send(Channel.stdin, data),
    closeStdin: () => {
      if (stdinClosed) return;
      stdinClosed = true;
      if (ws.readyState === WebSocket.OPEN) sendStdinClose();
    },
    get protocol() {
      return ws.protocol;
    },
    resize: (json) => send(Channel.resize, json),
    close: () => {
      try {
        ws.close();
      } catch {
        /* already closed */
      }
    },
  };
}
