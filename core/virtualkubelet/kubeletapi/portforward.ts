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

/** One port-forward session: the API server's SPDY session with us, and ours with the remote API server. */
interface Session {
  /** The API server's connection (the local side). */
  socket: Duplex;
  /** The remote pod, `namespace/name`, for messages. */
  pod: string;
  log: Logger;
  localReader: FrameReader;
  decoder: HeaderDecoder;
  localEncoder: HeaderEncoder;
  remoteEncoder: HeaderEncoder;
  /** Local stream ID → remote stream ID and back; the streams of the API server are odd, ours too. */
  toRemoteId: Map<number, number>;
  toLocalId: Map<number, number>;
  /** Local error stream → its port. */
  errorStreams: Map<number, string>;
  nextRemoteId: number;
  lastLocalId: number;
  /** Our session with the remote API server, once open. */
  remoteSocket?: Duplex;
  /** Frames for the remote side written before its session is open. */
  queued?: Uint8Array[];
  /** Why the remote session could not be opened. */
  failure?: string;
  /** Ended, by either side. */
  closed: boolean;
}

/** Relays one port-forward connection of the API server, past its upgrade, to the remote pod's pods/portforward. */
export function servePortForwardUpgrade(
  socket: Duplex,
  head: Buffer,
  remote: KubeClient,
  target: RemotePodRef,
  log: Logger,
  dial: RemoteDialer = dialRemotePortForward,
): void {
  acceptUpgrade(socket);
  const s = newSession(socket, target, log);
  relayLocalSide(s, head);
  dial(remote, target).then(
    (remoteSide) => relayRemoteSide(s, remoteSide),
    (err: Error) => failRemoteSide(s, err),
  );
}

/** Answers the API server's upgrade: from here on the connection carries SPDY frames. */
function acceptUpgrade(socket: Duplex) {
  socket.write(
    "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n" +
      `X-Stream-Protocol-Version: ${PORTFORWARD_PROTOCOL}\r\n\r\n`,
  );
}

/** A session with no stream yet, whose frames for the remote side wait until it is open. */
function newSession(socket: Duplex, target: RemotePodRef, log: Logger): Session {
  return {
    socket,
    pod: `${target.remoteNamespace}/${target.remoteName}`,
    log,
    localReader: new FrameReader(),
    decoder: new HeaderDecoder(),
    localEncoder: new HeaderEncoder(),
    remoteEncoder: new HeaderEncoder(),
    toRemoteId: new Map(),
    toLocalId: new Map(),
    errorStreams: new Map(),
    nextRemoteId: 1,
    lastLocalId: 0,
    queued: [],
    closed: false,
  };
}

/** Reads the API server's frames (from `head` on) and passes them on; its connection closing ends ours. */
function relayLocalSide(s: Session, head: Buffer) {
  const onLocalData = (chunk: Buffer) => {
    try {
      for (const f of s.localReader.push(new Uint8Array(chunk))) onLocalFrame(s, f);
    } catch (err) {
      s.log.warn("bad SPDY data from the API server; closing the port-forward", { err });
      s.socket.destroy();
      s.remoteSocket?.destroy();
    }
  };
  s.socket.on("data", onLocalData);
  s.socket.on("close", () => {
    s.closed = true;
    s.remoteSocket?.destroy();
  });
  s.socket.on("error", () => s.remoteSocket?.destroy());
  if (head.length) onLocalData(head);
}

/** Takes the remote session once it is open: sends what waited for it, then reads and passes on its frames. */
function relayRemoteSide(s: Session, { socket: rs, head: rhead }: { socket: Duplex; head: Buffer }) {
  if (s.closed) return void rs.destroy();
  s.remoteSocket = rs;
  const reader = new FrameReader();
  const onRemoteData = (chunk: Buffer | Uint8Array) => {
    try {
      for (const f of reader.push(new Uint8Array(chunk))) onRemoteFrame(s, f);
    } catch (err) {
      close(s, `bad SPDY data from the remote API server: ${(err as Error).message}`);
    }
  };
  rs.on("data", onRemoteData);
  rs.on("close", () => close(s));
  rs.on("error", (err: Error) =>
    close(s, `the port-forward connection to the remote API server broke: ${err.message}`),
  );
  for (const b of s.queued!) rs.write(b);
  s.queued = undefined;
  if (rhead.length) onRemoteData(rhead);
}

/** No remote session: the streams opened so far, and every one opened later, end saying why. */
function failRemoteSide(s: Session, err: Error) {
  s.failure = err.message;
  s.queued = undefined;
  s.log.warn("cannot open the port-forward in the remote cluster", { pod: s.pod, error: s.failure });
  for (const localId of s.toRemoteId.keys()) failStream(s, localId);
  s.toRemoteId.clear();
}

/** Writes to the API server, unless its connection is gone. */
function writeLocal(s: Session, b: Uint8Array) {
  if (!s.socket.destroyed) s.socket.write(b);
}

/** Writes to the remote API server, or keeps the frame until its session is open. */
function writeRemote(s: Session, b: Uint8Array) {
  if (s.queued) s.queued.push(b);
  else if (s.remoteSocket && !s.remoteSocket.destroyed) s.remoteSocket.write(b);
}

/** No remote session: every error stream says why and every stream ends, as kubectl expects. */
function failStream(s: Session, localId: number) {
  const port = s.errorStreams.get(localId);
  if (port !== undefined)
    writeLocal(
      s,
      dataFrame(localId, new TextEncoder().encode(`error forwarding port ${port} to pod ${s.pod}: ${s.failure}`)),
    );
  writeLocal(s, dataFrame(localId, new Uint8Array(0), true));
}

/** Ends both sessions (once), saying why in the log when there is more to say than a normal end. */
function close(s: Session, why?: string) {
  if (s.closed) return;
  s.closed = true;
  if (why) s.log.warn("port-forward ended", { why, pod: s.pod });
  writeLocal(s, goAway(s.lastLocalId));
  s.socket.end();
  s.remoteSocket?.destroy();
}

/** Passes one frame of the API server on to the remote API server, with its stream ID mapped. */
function onLocalFrame(s: Session, frame: Frame) {
  if (frame.kind === "data") {
    const remoteId = s.toRemoteId.get(frame.streamId);
    if (s.failure) return;
    if (remoteId !== undefined) writeRemote(s, dataFrame(remoteId, frame.payload, (frame.flags & FLAG_FIN) !== 0));
    return;
  }
  switch (frame.type) {
    case FrameType.SynStream:
      openStream(s, frame);
      break;
    case FrameType.RstStream: {
      const remoteId = s.toRemoteId.get(streamOf(frame.payload));
      if (remoteId !== undefined)
        writeRemote(s, rstStream(remoteId, new DataView(frame.payload.buffer, frame.payload.byteOffset).getUint32(4)));
      break;
    }
    case FrameType.Ping:
      writeLocal(s, controlFrame(FrameType.Ping, 0, frame.payload));
      break;
    case FrameType.GoAway:
      close(s);
      break;
    // SETTINGS, WINDOW_UPDATE, HEADERS: spdystream does not enforce flow control.
  }
}

/** Answers a stream the API server opens and opens its twin in the remote session (or fails it, without one). */
function openStream(s: Session, frame: Extract<Frame, { kind: "control" }>) {
  const { streamId, headers } = parseSynStream(frame.payload, s.decoder);
  s.lastLocalId = Math.max(s.lastLocalId, streamId);
  writeLocal(s, synReply(streamId, s.localEncoder));
  s.log.debug("port-forward stream opened", {
    streamId,
    type: headers.streamtype,
    port: headers.port,
    requestID: headers.requestid,
  });
  if (headers.streamtype === "error") s.errorStreams.set(streamId, headers.port ?? "?");
  if (s.failure) return failStream(s, streamId);
  const remoteId = s.nextRemoteId;
  s.nextRemoteId += 2;
  s.toRemoteId.set(streamId, remoteId);
  s.toLocalId.set(remoteId, streamId);
  const forwarded: Record<string, string> = {};
  for (const k of ["streamtype", "port", "requestid"]) if (headers[k] !== undefined) forwarded[k] = headers[k];
  writeRemote(s, synStream(remoteId, frame.flags, forwarded, s.remoteEncoder));
}

/** Passes one frame of the remote API server back to the API server, with its stream ID mapped. */
function onRemoteFrame(s: Session, frame: Frame) {
  if (frame.kind === "data") {
    const localId = s.toLocalId.get(frame.streamId);
    if (localId !== undefined) writeLocal(s, dataFrame(localId, frame.payload, (frame.flags & FLAG_FIN) !== 0));
    return;
  }
  switch (frame.type) {
    case FrameType.RstStream: {
      const localId = s.toLocalId.get(streamOf(frame.payload));
      if (localId !== undefined)
        writeLocal(s, rstStream(localId, new DataView(frame.payload.buffer, frame.payload.byteOffset).getUint32(4)));
      break;
    }
    case FrameType.Ping:
      writeRemote(s, controlFrame(FrameType.Ping, 0, frame.payload));
      break;
    case FrameType.GoAway:
      close(s, "the remote API server ended the session");
      break;
    // SYN_REPLY (nothing to pass on: the local side had its reply), SETTINGS, WINDOW_UPDATE.
  }
}
