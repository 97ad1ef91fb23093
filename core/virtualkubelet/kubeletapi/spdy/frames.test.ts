import { describe, expect, test } from "bun:test";
import zlib from "node:zlib";
import { SPDY3_DICTIONARY } from "./dictionary.ts";
import {
  controlFrame,
  dataFrame,
  FrameReader,
  FrameType,
  HeaderDecoder,
  HeaderEncoder,
  parseHeaderBlock,
} from "./frames.ts";

function adler32(b: Uint8Array): number {
  let a = 1,
    c = 0;
  for (const x of b) {
    a = (a + x) % 65521;
    c = (c + a) % 65521;
  }
  return (c * 65536 + a) >>> 0;
}

describe("SPDY/3 dictionary", () => {
  test("is 1423 bytes", () => expect(SPDY3_DICTIONARY.length).toBe(1423));
  test("has the Adler-32 peers announce in their zlib headers", () =>
    expect(adler32(SPDY3_DICTIONARY)).toBe(3821447106));
});

describe("HeaderDecoder", () => {
  test("reads consecutive blocks of one compressed stream, as a Go peer sends them", () => {
    // Two header blocks from one zlib stream with the dictionary, each ending in a sync flush
    // (made with zlib at level 9, as Go's spdy framer does).
    const first = Buffer.from("78f9e3c6a7c202a62346703a2b294a4dcc851625c0149b925f5a02000000ffff", "hex");
    const second = Buffer.from("c22ac79a0a8a0400000000ffff", "hex");
    const d = new HeaderDecoder();
    expect(d.decode(first)).toEqual({ streamtype: "stdout" });
    expect(d.decode(second)).toEqual({ streamtype: "error" });
  });
});

describe("HeaderEncoder", () => {
  test("two blocks inflate, one at a time, to the headers written", () => {
    const e = new HeaderEncoder();
    const a = e.encode({ streamtype: "stdout" });
    const b = e.encode({});
    const first = zlib.inflateSync(Buffer.from(a), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
    expect(parseHeaderBlock(first)).toEqual({ streamtype: "stdout" });
    const both = zlib.inflateSync(Buffer.concat([a, b]), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
    expect(parseHeaderBlock(both.subarray(first.length))).toEqual({});
  });
  test("every block ends with a sync-flush marker so the peer can read it at once", () => {
    const block = new HeaderEncoder().encode({});
    expect([...block.slice(-5)]).toEqual([0, 0, 0, 0xff, 0xff]);
  });
});

describe("FrameReader", () => {
  test("splits frames arriving in pieces", () => {
    const bytes = new Uint8Array([
      ...controlFrame(FrameType.Ping, 0, Uint8Array.of(0, 0, 0, 1)),
      ...dataFrame(3, new TextEncoder().encode("hi"), true),
    ]);
    const r = new FrameReader();
    expect(r.push(bytes.subarray(0, 5))).toEqual([]);
    const frames = r.push(bytes.subarray(5));
    expect(frames).toHaveLength(2);
    expect(frames[0]).toMatchObject({ kind: "control", type: FrameType.Ping });
    expect(frames[1]).toMatchObject({ kind: "data", streamId: 3, flags: 1 });
  });
});
