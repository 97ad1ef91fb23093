// /portForward/{namespace}/{pod}: kube-apiserver opens a SPDY/3.1 session (protocol
// portforward.k8s.io) to the kubelet, and kubectl opens two streams per forwarded connection,
// `error` and `data`, tagged with `port` and `requestID` headers. This kubelet relays the session
// stream by stream to a SPDY session of its own with the remote API server's pods/portforward:
// every SYN_STREAM, DATA (with its FIN), RST_STREAM goes across with the stream ID mapped, so
// half-closes behave as with a real kubelet (a client that shuts its write side still gets the
// answer). The WebSocket flavour (v4.channel.k8s.io) has no half-close, which is why SPDY here.
import net from "node:net";
import tls from "node:tls";
import type { Duplex } from "node:stream";
import type { KubeClient } from "../../kube/client.ts";
import type { Logger } from "../../log.ts";
import { podPath, remoteEndpoint, statusMessage } from "./remote.ts";
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
  type Frame,
} from "./spdy/frames.ts";
import type { RemotePodRef } from "./types.ts";

export const PORTFORWARD_PROTOCOL = "portforward.k8s.io";

/** The SPDY upgrade of the remote API server's pods/portforward, as an open socket past the 101. */
export async function dialRemotePortForward(
  remote: KubeClient,
  target: RemotePodRef,
): Promise<{ socket: Duplex; head: Buffer }> {
  const endpoint = await remoteEndpoint(remote);
  const url = new URL(endpoint.server);
  const secure = url.protocol === "https:";
  const port = Number(url.port || (secure ? 443 : 80));
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const socket: Duplex = secure
    ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, ...endpoint.tls })
    : net.connect({ host, port });
  const path = `${url.pathname.replace(/\/+$/, "")}${podPath(target.remoteNamespace, target.remoteName, "portforward")}`;
  const headers = {
    ...endpoint.headers,
    host: url.host,
    connection: "Upgrade",
    upgrade: "SPDY/3.1",
    "x-stream-protocol-version": PORTFORWARD_PROTOCOL,
    "content-length": "0",
  };
  return await new Promise((resolve, reject) => {
    let got = Buffer.alloc(0);
    let answered = false;
    const fail = (message: string) => {
      if (answered) return;
      answered = true;
      socket.destroy();
      reject(new Error(message));
    };
    const onData = (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      const end = got.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = got.subarray(0, end).toString("latin1");
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      if (status === 101) {
        answered = true;
        socket.off("data", onData);
        resolve({ socket, head: got.subarray(end + 4) });
        return;
      }
      // Let the body (a Status) arrive before saying why.
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? NaN);
      const body = got.subarray(end + 4);
      if (Number.isFinite(length) && body.length < length) return;
      fail(
        `the remote API server answered ${status || head.split("\r\n")[0]}: ${statusMessage(body.toString()) || "no reason given"}`,
      );
    };
    socket.on("data", onData);
    socket.once("error", (err) => fail(`cannot reach the remote API server ${endpoint.server}: ${err.message}`));
    socket.once("close", () => fail("the remote API server closed the port-forward connection before upgrading it"));
    socket.once(secure ? "secureConnect" : "connect", () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\n${Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}`)
          .join("\r\n")}\r\n\r\n`,
      );
    });
  });
}

function synStream(
  streamId: number,
  flags: number,
  headers: Record<string, string>,
  encoder: HeaderEncoder,
): Uint8Array {
  const block = encoder.encode(headers);
  const payload = new Uint8Array(10 + block.length);
  new DataView(payload.buffer).setUint32(0, streamId & 0x7fffffff);
  payload.set(block, 10);
  return controlFrame(FrameType.SynStream, flags, payload);
}

function rstStream(streamId: number, status: number): Uint8Array {
  const payload = new Uint8Array(8);
  const view = new DataView(payload.buffer);
  view.setUint32(0, streamId & 0x7fffffff);
  view.setUint32(4, status);
  return controlFrame(FrameType.RstStream, 0, payload);
}

const streamOf = (payload: Uint8Array) => new DataView(payload.buffer, payload.byteOffset).getUint32(0) & 0x7fffffff;

export type RemoteDialer = (remote: KubeClient, target: RemotePodRef) => Promise<{ socket: Duplex; head: Buffer }>;

export function servePortForwardUpgrade(
  socket: Duplex,
  head: Buffer,
  remote: KubeClient,
  target: RemotePodRef,
  log: Logger,
  dial: RemoteDialer = dialRemotePortForward,
): void {
  socket.write(
    "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n" +
      `X-Stream-Protocol-Version: ${PORTFORWARD_PROTOCOL}\r\n\r\n`,
  );
  const pod = `${target.remoteNamespace}/${target.remoteName}`;
  const localReader = new FrameReader();
  const decoder = new HeaderDecoder();
  const localEncoder = new HeaderEncoder();
  const remoteEncoder = new HeaderEncoder();
  // local stream ID → remote stream ID and back; the streams of the API server are odd, ours too.
  const toRemoteId = new Map<number, number>();
  const toLocalId = new Map<number, number>();
  const errorStreams = new Map<number, string>(); // local error stream → its port
  let nextRemoteId = 1;
  let lastLocalId = 0;
  let remoteSocket: Duplex | undefined;
  let queued: Uint8Array[] | undefined = [];
  let failure: string | undefined;
  let closed = false;

  const writeLocal = (b: Uint8Array) => {
    if (!socket.destroyed) socket.write(b);
  };
  const writeRemote = (b: Uint8Array) => {
    if (queued) queued.push(b);
    else if (remoteSocket && !remoteSocket.destroyed) remoteSocket.write(b);
  };

  /** No remote session: every error stream says why and every stream ends, as kubectl expects. */
  const failStream = (localId: number) => {
    const port = errorStreams.get(localId);
    if (port !== undefined)
      writeLocal(
        dataFrame(localId, new TextEncoder().encode(`error forwarding port ${port} to pod ${pod}: ${failure}`)),
      );
    writeLocal(dataFrame(localId, new Uint8Array(0), true));
  };

  const close = (why?: string) => {
    if (closed) return;
    closed = true;
    if (why) log.warn("port-forward ended", { why, pod });
    writeLocal(goAway(lastLocalId));
    socket.end();
    remoteSocket?.destroy();
  };

  const onLocalFrame = (frame: Frame) => {
    if (frame.kind === "data") {
      const remoteId = toRemoteId.get(frame.streamId);
      if (failure) return;
      if (remoteId !== undefined) writeRemote(dataFrame(remoteId, frame.payload, (frame.flags & FLAG_FIN) !== 0));
      return;
    }
    switch (frame.type) {
      case FrameType.SynStream: {
        const { streamId, headers } = parseSynStream(frame.payload, decoder);
        lastLocalId = Math.max(lastLocalId, streamId);
        writeLocal(synReply(streamId, localEncoder));
        log.debug("port-forward stream opened", {
          streamId,
          type: headers.streamtype,
          port: headers.port,
          requestID: headers.requestid,
        });
        if (headers.streamtype === "error") errorStreams.set(streamId, headers.port ?? "?");
        if (failure) return failStream(streamId);
        const remoteId = nextRemoteId;
        nextRemoteId += 2;
        toRemoteId.set(streamId, remoteId);
        toLocalId.set(remoteId, streamId);
        const forwarded: Record<string, string> = {};
        for (const k of ["streamtype", "port", "requestid"]) if (headers[k] !== undefined) forwarded[k] = headers[k];
        writeRemote(synStream(remoteId, frame.flags, forwarded, remoteEncoder));
        break;
      }
      case FrameType.RstStream: {
        const remoteId = toRemoteId.get(streamOf(frame.payload));
        if (remoteId !== undefined)
          writeRemote(rstStream(remoteId, new DataView(frame.payload.buffer, frame.payload.byteOffset).getUint32(4)));
        break;
      }
      case FrameType.Ping:
        writeLocal(controlFrame(FrameType.Ping, 0, frame.payload));
        break;
      case FrameType.GoAway:
        close();
        break;
      // SETTINGS, WINDOW_UPDATE, HEADERS: spdystream does not enforce flow control.
    }
  };

  const onRemoteFrame = (frame: Frame) => {
    if (frame.kind === "data") {
      const localId = toLocalId.get(frame.streamId);
      if (localId !== undefined) writeLocal(dataFrame(localId, frame.payload, (frame.flags & FLAG_FIN) !== 0));
      return;
    }
    switch (frame.type) {
      case FrameType.RstStream: {
        const localId = toLocalId.get(streamOf(frame.payload));
        if (localId !== undefined)
          writeLocal(rstStream(localId, new DataView(frame.payload.buffer, frame.payload.byteOffset).getUint32(4)));
        break;
      }
      case FrameType.Ping:
        writeRemote(controlFrame(FrameType.Ping, 0, frame.payload));
        break;
      case FrameType.GoAway:
        close("the remote API server ended the session");
        break;
      // SYN_REPLY (nothing to pass on: the local side had its reply), SETTINGS, WINDOW_UPDATE.
    }
  };

  const onLocalData = (chunk: Buffer) => {
    try {
      for (const f of localReader.push(new Uint8Array(chunk))) onLocalFrame(f);
    } catch (err) {
      log.warn("bad SPDY data from the API server; closing the port-forward", { err });
      socket.destroy();
      remoteSocket?.destroy();
    }
  };
  socket.on("data", onLocalData);
  socket.on("close", () => {
    closed = true;
    remoteSocket?.destroy();
  });
  socket.on("error", () => remoteSocket?.destroy());
  if (head.length) onLocalData(head);

  dial(remote, target).then(
    ({ socket: rs, head: rhead }) => {
      if (closed) return void rs.destroy();
      remoteSocket = rs;
      const reader = new FrameReader();
      const onRemoteData = (chunk: Buffer | Uint8Array) => {
        try {
          for (const f of reader.push(new Uint8Array(chunk))) onRemoteFrame(f);
        } catch (err) {
          close(`bad SPDY data from the remote API server: ${(err as Error).message}`);
        }
      };
      rs.on("data", onRemoteData);
      rs.on("close", () => close());
      rs.on("error", (err: Error) =>
        close(`the port-forward connection to the remote API server broke: ${err.message}`),
      );
      for (const b of queued!) rs.write(b);
      queued = undefined;
      if (rhead.length) onRemoteData(rhead);
    },
    (err: Error) => {
      failure = err.message;
      queued = undefined;
      log.warn("cannot open the port-forward in the remote cluster", { pod, error: failure });
      for (const localId of toRemoteId.keys()) failStream(localId);
      toRemoteId.clear();
    },
  );
}
