// SPDY/3.1 framing, the server side of just what Kubernetes' streaming (exec, attach) uses: the
// peer opens streams (SYN_STREAM) with a `streamtype` header, we answer SYN_REPLY, data flows in
// DATA frames, FIN closes a direction. PING is echoed; SETTINGS and WINDOW_UPDATE are read and
// ignored (Kubernetes' spdystream does not enforce flow control).
import zlib from "node:zlib";
import { SPDY3_DICTIONARY } from "./dictionary.ts";

export const FrameType = {
  SynStream: 1,
  SynReply: 2,
  RstStream: 3,
  Settings: 4,
  Ping: 6,
  GoAway: 7,
  Headers: 8,
  WindowUpdate: 9,
} as const;
export const FLAG_FIN = 0x01;

export type Frame =
  | { kind: "control"; type: number; flags: number; payload: Uint8Array }
  | { kind: "data"; streamId: number; flags: number; payload: Uint8Array };

/** Splits a byte stream into frames; keeps a partial frame until the rest arrives. */
export class FrameReader {
  private buf = new Uint8Array(0);

  push(chunk: Uint8Array): Frame[] {
    const merged = new Uint8Array(this.buf.length + chunk.length);
    merged.set(this.buf);
    merged.set(chunk, this.buf.length);
    const frames: Frame[] = [];
    let at = 0;
    while (merged.length - at >= 8) {
      const view = new DataView(merged.buffer, merged.byteOffset + at);
      const length = (merged[at + 5]! << 16) | (merged[at + 6]! << 8) | merged[at + 7]!;
      if (merged.length - at < 8 + length) break;
      const flags = merged[at + 4]!;
      const payload = merged.slice(at + 8, at + 8 + length);
      if (merged[at]! & 0x80) frames.push({ kind: "control", type: view.getUint16(2), flags, payload });
      else frames.push({ kind: "data", streamId: view.getUint32(0) & 0x7fffffff, flags, payload });
      at += 8 + length;
    }
    this.buf = merged.slice(at);
    return frames;
  }
}

/**
 * Header blocks share one zlib stream per direction for the whole connection. Inflating the
 * concatenation of every block received so far and keeping the new suffix is quadratic, but a
 * streaming session opens at most five streams, so it stays tiny and needs no async zlib state.
 */
export class HeaderDecoder {
  private compressed: Buffer[] = [];
  private seen = 0;

  decode(block: Uint8Array): Record<string, string> {
    this.compressed.push(Buffer.from(block));
    const all = zlib.inflateSync(Buffer.concat(this.compressed), {
      dictionary: SPDY3_DICTIONARY,
      finishFlush: zlib.constants.Z_SYNC_FLUSH,
    });
    const raw = all.subarray(this.seen);
    this.seen = all.length;
    return parseHeaderBlock(raw);
  }
}

export function parseHeaderBlock(raw: Uint8Array): Record<string, string> {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const dec = new TextDecoder();
  const out: Record<string, string> = {};
  let at = 4;
  const count = view.getUint32(0);
  for (let i = 0; i < count; i++) {
    const nameLen = view.getUint32(at);
    const name = dec.decode(raw.subarray(at + 4, at + 4 + nameLen));
    at += 4 + nameLen;
    const valueLen = view.getUint32(at);
    // Multiple values of one header are NUL-separated; the first is enough for streamtype.
    const value = dec.decode(raw.subarray(at + 4, at + 4 + valueLen)).split("\0")[0]!;
    at += 4 + valueLen;
    out[name.toLowerCase()] = value;
  }
  return out;
}

/**
 * Our header blocks go out as zlib "stored" (uncompressed) deflate blocks: a valid continuation of
 * one zlib stream that any inflater reads, without a compressor's state to carry. The dictionary
 * is only needed to read compressed data, and stored blocks never reference it.
 */
export class HeaderEncoder {
  private started = false;

  encode(headers: Record<string, string>): Uint8Array {
    const enc = new TextEncoder();
    const parts: number[] = [];
    const u32 = (n: number) => parts.push((n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
    const entries = Object.entries(headers);
    u32(entries.length);
    for (const [k, v] of entries) {
      const kb = enc.encode(k.toLowerCase());
      const vb = enc.encode(v);
      u32(kb.length);
      parts.push(...kb);
      u32(vb.length);
      parts.push(...vb);
    }
    const raw = Uint8Array.from(parts);
    const out: number[] = [];
    // zlib header: deflate, 32K window, no preset dictionary, check bits making it a multiple of 31.
    if (!this.started) out.push(0x78, 0x01);
    this.started = true;
    for (let at = 0; at < raw.length; at += 0xffff) {
      const chunk = raw.subarray(at, at + 0xffff);
      // BFINAL=0, BTYPE=00 (stored), then LEN and its one's complement, little-endian.
      out.push(
        0x00,
        chunk.length & 0xff,
        chunk.length >>> 8,
        ~chunk.length & 0xff,
        (~chunk.length >>> 8) & 0xff,
        ...chunk,
      );
    }
    // An empty stored block, as a sync flush ends: inflaters (Go's among them) hand out a block's
    // bytes only when the next block starts, so without it the peer waits for the next frame.
    out.push(0x00, 0x00, 0x00, 0xff, 0xff);
    return Uint8Array.from(out);
  }
}

export function controlFrame(type: number, flags: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + payload.length);
  const view = new DataView(out.buffer);
  view.setUint16(0, 0x8000 | 3);
  view.setUint16(2, type);
  out[4] = flags;
  out[5] = (payload.length >>> 16) & 0xff;
  out[6] = (payload.length >>> 8) & 0xff;
  out[7] = payload.length & 0xff;
  out.set(payload, 8);
  return out;
}

export function dataFrame(streamId: number, payload: Uint8Array, fin = false): Uint8Array {
  const out = new Uint8Array(8 + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, streamId & 0x7fffffff);
  out[4] = fin ? FLAG_FIN : 0;
  out[5] = (payload.length >>> 16) & 0xff;
  out[6] = (payload.length >>> 8) & 0xff;
  out[7] = payload.length & 0xff;
  out.set(payload, 8);
  return out;
}

export function synReply(streamId: number, encoder: HeaderEncoder): Uint8Array {
  const block = encoder.encode({});
  const payload = new Uint8Array(4 + block.length);
  new DataView(payload.buffer).setUint32(0, streamId & 0x7fffffff);
  payload.set(block, 4);
  return controlFrame(FrameType.SynReply, 0, payload);
}

export function goAway(lastStreamId: number): Uint8Array {
  const payload = new Uint8Array(8);
  new DataView(payload.buffer).setUint32(0, lastStreamId & 0x7fffffff);
  return controlFrame(FrameType.GoAway, 0, payload);
}

/** The stream ID and headers of a SYN_STREAM payload. */
export function parseSynStream(
  payload: Uint8Array,
  decoder: HeaderDecoder,
): { streamId: number; headers: Record<string, string> } {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  return { streamId: view.getUint32(0) & 0x7fffffff, headers: decoder.decode(payload.subarray(10)) };
}
