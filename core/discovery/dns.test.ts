import { describe, expect, test } from "bun:test";
import { decodeMessage, DnsFormatError, encodeMessage, MAX_MESSAGE, RecordType, type DnsRecord } from "./dns.ts";

const records: DnsRecord[] = [
  { name: "_liqo_auth._tcp.local", type: RecordType.PTR, ttl: 90, target: "abc._liqo_auth._tcp.local" },
  {
    name: "abc._liqo_auth._tcp.local",
    type: RecordType.SRV,
    ttl: 90,
    priority: 0,
    weight: 0,
    port: 31443,
    target: "liqo-abc.local",
  },
  { name: "abc._liqo_auth._tcp.local", type: RecordType.TXT, ttl: 90, strings: ["id=abc", "name=milan"] },
  { name: "liqo-abc.local", type: RecordType.A, ttl: 90, address: "172.31.0.12" },
];

describe("encode and decode", () => {
  test("a query round-trips", () => {
    const m = decodeMessage(
      encodeMessage({ id: 7, questions: [{ name: "_liqo_auth._tcp.local", type: RecordType.PTR }] }),
    );
    expect(m).toEqual({
      id: 7,
      response: false,
      questions: [{ name: "_liqo_auth._tcp.local", type: 12 }],
      answers: [],
      additionals: [],
    });
  });
  test("an answer with PTR, SRV, TXT and A round-trips", () => {
    const m = decodeMessage(
      encodeMessage({ response: true, answers: records.slice(0, 1), additionals: records.slice(1) }),
    );
    expect(m.response).toBe(true);
    expect(m.answers).toEqual(records.slice(0, 1));
    expect(m.additionals).toEqual(records.slice(1));
  });
  test("a compressed name (as other responders send) is followed", () => {
    // Header, then the question "a.local" at byte 12, then a PTR answer whose name points back to it.
    const bytes = [
      0,
      0,
      0x84,
      0,
      0,
      1,
      0,
      1,
      0,
      0,
      0,
      0,
      1,
      0x61,
      5,
      ...Buffer.from("local"),
      0,
      0,
      12,
      0,
      1,
      0xc0,
      12,
      0,
      12,
      0,
      1,
      0,
      0,
      0,
      10,
      0,
      2,
      0xc0,
      12,
    ];
    const m = decodeMessage(Uint8Array.from(bytes));
    expect(m.answers).toEqual([{ name: "a.local", type: 12, ttl: 10, target: "a.local" }]);
  });
  test("unknown record types are skipped", () => {
    const bytes = [...encodeMessage({ response: true, answers: records.slice(3) })];
    bytes[7] = 2; // two answers
    bytes.push(1, 0x62, 0, 0, 28, 0, 1, 0, 0, 0, 1, 0, 16, ...new Array(16).fill(0)); // an AAAA record
    expect(decodeMessage(Uint8Array.from(bytes)).answers).toEqual(records.slice(3));
  });
});

describe("hostile input is a DnsFormatError, never a crash or a hang", () => {
  const bad = (bytes: number[] | Uint8Array) => () => decodeMessage(Uint8Array.from(bytes));
  test("shorter than a header", () => expect(bad([1, 2, 3])).toThrow(DnsFormatError));
  test("oversized", () => expect(bad(new Uint8Array(MAX_MESSAGE + 1))).toThrow(/over 9000/));
  test("claims more records than it holds", () =>
    expect(bad([0, 0, 0x84, 0, 0, 0, 0, 5, 0, 0, 0, 0])).toThrow(/truncated/));
  test("claims thousands of records", () =>
    expect(bad([0, 0, 0x84, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0])).toThrow(/over 256/));
  test("a compression pointer loop", () =>
    expect(bad([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 12, 0, 1])).toThrow(/backwards/));
  test("a pointer chain that jumps too often", () => {
    const bytes = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    for (let i = 0; i < 20; i++) bytes.push(0xc0, 12 + (i === 0 ? 0 : 1 + 2 * (i - 1)));
    bytes.push(0, 12, 0, 1);
    // The question's name starts at the last pointer.
    const start = bytes.length - 6;
    const msg = [...bytes.slice(0, 12), 0xc0, start, ...bytes.slice(12)];
    expect(bad(msg)).toThrow(DnsFormatError);
  });
  test("a label running past the end", () =>
    expect(bad([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 40, 0x61])).toThrow(/truncated label/));
  test("a name over 255 bytes", () => {
    const name: number[] = [];
    for (let i = 0; i < 5; i++) name.push(63, ...new Array(63).fill(0x61));
    expect(bad([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, ...name, 0, 0, 12, 0, 1])).toThrow(/255/);
  });
  test("an A record of the wrong size", () => {
    const bytes = [...encodeMessage({ response: true, answers: records.slice(3) })];
    bytes[bytes.length - 5] = 5;
    bytes.push(0);
    expect(bad(bytes)).toThrow(/not 4/);
  });
  test("a TXT string overrunning its record", () => {
    const bytes = [...encodeMessage({ response: true, answers: [records[2]!] })];
    const at = bytes.indexOf(6); // length of "id=abc"
    bytes[at] = 200;
    expect(bad(bytes)).toThrow(/overruns/);
  });
  test("random garbage never throws anything but DnsFormatError", () => {
    let seed = 42;
    const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 256;
    for (let n = 0; n < 2000; n++) {
      const bytes = Array.from({ length: 12 + (n % 300) }, rand);
      bytes[4] = 0;
      bytes[5] = n % 4;
      try {
        decodeMessage(Uint8Array.from(bytes));
      } catch (err) {
        expect(err).toBeInstanceOf(DnsFormatError);
      }
    }
  });
});

test("encoding refuses what DNS cannot carry", () => {
  expect(() => encodeMessage({ questions: [{ name: `${"a".repeat(64)}.local`, type: 12 }] })).toThrow(/1 to 63/);
  expect(() =>
    encodeMessage({ answers: [{ name: "a.local", type: RecordType.A, ttl: 1, address: "300.1.1.1" }] }),
  ).toThrow(/IPv4/);
  expect(() =>
    encodeMessage({ answers: [{ name: "a.local", type: RecordType.TXT, ttl: 1, strings: ["x".repeat(256)] }] }),
  ).toThrow(/255 bytes/);
});
