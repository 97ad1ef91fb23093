// /exec/{namespace}/{pod}/{container}: the API server speaks SPDY/3.1 to kubelets (it translates
// kubectl's WebSockets into SPDY itself), so this side is a SPDY server and the other side a
// WebSocket client to the remote API server's pods/exec. Protocol v4.channel.k8s.io: streams
// named by their `streamtype` header; the final Status JSON goes on the error stream.
import type { Duplex } from "node:stream";
import type { KubeClient } from "../../kube/client.ts";
import { keyOf } from "../../kube/resources.ts";
import type { Logger } from "../../log.ts";
import { startRemoteExec, type ExecRequest, type RemoteExec } from "./remote-exec.ts";
import {
  controlFrame,
  dataFrame,
  FLAG_FIN,
  FrameReader,
  FrameType,
  goAway,
  HeaderDecoder,
  HeaderEncoder,
  parseSynStream,
  synReply,
} from "./spdy/frames.ts";
import type { RemotePodRef } from "./types.ts";

export const EXEC_PROTOCOL = "v4.channel.k8s.io";

type StreamType = "error" | "stdin" | "stdout" | "stderr" | "resize";

/** Kubelet's query (command=…&input=1&output=1&error=1&tty=1) as an exec request. */
export function execRequestFromQuery(container: string, query: URLSearchParams): ExecRequest {
  const flag = (k: string) => ["1", "true"].includes(query.get(k) ?? "");
  return {
    container,
    command: query.getAll("command"),
    stdin: flag("input"),
    stdout: flag("output"),
    stderr: flag("error"),
    tty: flag("tty"),
  };
}

export function expectedStreams(req: ExecRequest): StreamType[] {
  const s: StreamType[] = ["error"];
  if (req.stdin) s.push("stdin");
  if (req.stdout) s.push("stdout");
  if (req.stderr && !req.tty) s.push("stderr");
  if (req.tty) s.push("resize");
  return s;
}

/** A v4 Status for failures that happen on our side (the remote never produced one). */
export function failureStatus(message: string): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify({ metadata: {}, status: "Failure", message, reason: "InternalError", code: 500 }),
  );
}

export function serveExecUpgrade(
  socket: Duplex,
  head: Buffer,
  remote: KubeClient,
  target: RemotePodRef,
  req: ExecRequest,
  log: Logger,
): void {
  socket.write(
    "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n" +
      `X-Stream-Protocol-Version: ${EXEC_PROTOCOL}\r\n\r\n`,
  );
  const reader = new FrameReader();
  const decoder = new HeaderDecoder();
  const encoder = new HeaderEncoder();
  const streams = new Map<StreamType, number>();
  const wanted = expectedStreams(req);
  let session: RemoteExec | undefined;
  // What the caller sent while the remote session was being set up (the remote endpoint is
  // resolved asynchronously): `echo hi | kubectl exec -i` sends stdin and its end at once, in the
  // same TCP segment as the last SYN_STREAM, and dropping them leaves the remote command waiting
  // for input forever.
  const early: Array<(s: RemoteExec) => void> = [];
  const toSession = (op: (s: RemoteExec) => void) => {
    if (session) op(session);
    else if (!done) early.push(op);
  };
  let stdinEnded = false;
  const endStdin = (by: "fin" | "reset") => {
    if (stdinEnded) return;
    stdinEnded = true;
    log.debug("exec stdin ended", { by });
    toSession((s) => s.closeStdin());
  };
  let starting = false;
  let lastStreamId = 0;
  let status: Uint8Array | undefined;
  let done = false;

  const write = (b: Uint8Array) => {
    if (!socket.destroyed) socket.write(b);
  };
  const toStream = (type: StreamType, data: Uint8Array) => {
    const id = streams.get(type);
    // SPDY frames carry at most 16 MiB; chunk well below to keep latency low.
    if (id !== undefined)
      for (let at = 0; at < data.length; at += 32_768) write(dataFrame(id, data.subarray(at, at + 32_768)));
  };

  const end = (error?: string) => {
    if (done) return;
    done = true;
    toStream(
      "error",
      status ?? (error ? failureStatus(error) : new TextEncoder().encode('{"metadata":{},"status":"Success"}')),
    );
    for (const type of ["stdout", "stderr", "error"] as const) {
      const id = streams.get(type);
      if (id !== undefined) write(dataFrame(id, new Uint8Array(0), true));
    }
    write(goAway(lastStreamId));
    log.debug("exec ended", { remoteProtocol: session?.protocol, stdinEnded, error });
    // Let the peer read the FINs before the TCP close.
    socket.end();
    if (error) log.warn("exec ended with an error", { error, pod: keyOf(target.remoteNamespace, target.remoteName) });
  };

  const maybeStart = () => {
    if (starting || !wanted.every((t) => streams.has(t))) return;
    starting = true;
    startRemoteExec(remote, target, req, {
      stdout: (d) => toStream("stdout", d),
      stderr: (d) => toStream(streams.has("stderr") ? "stderr" : "stdout", d),
      status: (s) => {
        status = s;
      },
      end,
      stdinNotClosable: (protocol) =>
        log.warn(
          "stdin ended but the remote API server speaks only the exec protocol " +
            `"${protocol}", which cannot pass that on: the remote command keeps reading`,
          { pod: keyOf(target.remoteNamespace, target.remoteName) },
        ),
    }).then(
      (s) => {
        session = s;
        for (const op of early.splice(0)) op(s);
        if (done) s.close();
      },
      (err) => end(`cannot start the exec in the remote cluster: ${(err as Error).message}`),
    );
  };

  const onFrame = (frame: ReturnType<FrameReader["push"]>[number]) => {
    if (frame.kind === "data") {
      const type = [...streams].find(([, id]) => id === frame.streamId)?.[0];
      const payload = frame.payload;
      if (type === "stdin" && payload.length && !stdinEnded) toSession((s) => s.stdin(payload));
      if (type === "resize" && payload.length) toSession((s) => s.resize(payload));
      // spdystream's Close() is an empty DATA frame with FIN: how the API server (and kubectl over
      // SPDY) says the caller's stdin is at its end.
      if (type === "stdin" && frame.flags & FLAG_FIN) endStdin("fin");
      return;
    }
    switch (frame.type) {
      case FrameType.SynStream: {
        const { streamId, headers } = parseSynStream(frame.payload, decoder);
        lastStreamId = Math.max(lastStreamId, streamId);
        const type = headers.streamtype as StreamType | undefined;
        if (type) streams.set(type, streamId);
        log.debug("exec stream opened", { streamId, type });
        write(synReply(streamId, encoder));
        maybeStart();
        break;
      }
      case FrameType.Ping:
        write(controlFrame(FrameType.Ping, 0, frame.payload));
        break;
      case FrameType.GoAway:
        session?.close();
        break;
      case FrameType.RstStream: {
        // A reset stdin stream will carry nothing more either.
        const id = new DataView(frame.payload.buffer, frame.payload.byteOffset).getUint32(0) & 0x7fffffff;
        if (id === streams.get("stdin")) endStdin("reset");
        break;
      }
      // SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do for a single exec.
    }
  };

  const onData = (chunk: Buffer) => {
    try {
      for (const f of reader.push(new Uint8Array(chunk))) onFrame(f);
    } catch (err) {
      log.warn("bad SPDY data from the API server; closing the exec", { err });
      session?.close();
      socket.destroy();
    }
  };
  socket.on("data", onData);
  socket.on("close", () => {
    done = true;
    session?.close();
  });
  socket.on("error", () => {
    session?.close();
  });
  if (head.length) onData(head);
}
