import { describe, expect, test } from "bun:test";
import {
  decodeAnswer,
  encodeAnswer,
  encodeQuery,
  parseQuery,
  RCode,
  readName,
  RRType,
  udpLimit,
  type Answer,
  type ResourceRecord,
} from "./wire.ts";

const header = (id: number, flags: number, qd: number, an = 0, ns = 0, ar = 0) =>
  Uint8Array.from([id >> 8, id & 0xff, flags >> 8, flags & 0xff, 0, qd, an >> 8, an & 0xff, 0, ns, ar >> 8, ar & 0xff]);
const join = (...parts: ArrayLike<number>[]) => Uint8Array.from(parts.flatMap((p) => [...Array.from(p)]));

describe("parseQuery", () => {
  test("a plain query: id, rd, the question with its case kept and a lower-case copy", () => {
    const q = parseQuery(encodeQuery(0x1234, "Web.Shop.svc.clusterset.local", RRType.A))!;
    expect(q.id).toBe(0x1234);
    expect(q.rd).toBe(true);
    expect(q.opcode).toBe(0);
    expect(q.question).toEqual({
      name: "Web.Shop.svc.clusterset.local",
      lower: "web.shop.svc.clusterset.local",
      type: RRType.A,
      class: 1,
    });
    expect(q.ednsSize).toBeUndefined();
  });

  test("an OPT record gives the requestor's UDP size", () => {
    const q = parseQuery(encodeQuery(1, "a.clusterset.local", RRType.A, { edns: 4096 }))!;
    expect(q.ednsSize).toBe(4096);
    expect(udpLimit(q)).toBe(1232);
    expect(udpLimit({ ...q, ednsSize: 100 })).toBe(512);
    expect(udpLimit({ ...q, ednsSize: undefined })).toBe(512);
  });

  test("shorter than a header, or a response: dropped", () => {
    expect(parseQuery(new Uint8Array(0))).toBeUndefined();
    expect(parseQuery(new Uint8Array(11))).toBeUndefined();
    const response = encodeQuery(7, "a.clusterset.local", RRType.A);
    response[2]! |= 0x80;
    expect(parseQuery(response)).toBeUndefined();
  });

  test("another opcode (NOTIFY, UPDATE) is returned as such, unparsed", () => {
    const p = encodeQuery(7, "a.clusterset.local", RRType.A);
    p[2] = (p[2]! & 0x87) | (5 << 3);
    const q = parseQuery(p)!;
    expect(q.opcode).toBe(5);
    expect(q.question).toBeUndefined();
  });

  test("no question, two questions, or records in the answer section: formerr", () => {
    expect(parseQuery(header(1, 0x0100, 0))!.bad).toBe("formerr");
    const two = encodeQuery(1, "a.clusterset.local", RRType.A);
    two[5] = 2;
    expect(parseQuery(two)!.bad).toBe("formerr");
    const an = encodeQuery(1, "a.clusterset.local", RRType.A);
    an[7] = 1;
    expect(parseQuery(an)!.bad).toBe("formerr");
  });

  test("a truncated question: formerr, at every length", () => {
    const full = encodeQuery(9, "web.shop.svc.clusterset.local", RRType.SRV);
    for (let n = 12; n < full.length; n++) {
      const q = parseQuery(full.subarray(0, n))!;
      expect(q.bad).toBe("formerr");
      expect(q.id).toBe(9);
    }
  });

  test("a huge additional count with nothing behind it: formerr, at once", () => {
    const p = encodeQuery(1, "a.clusterset.local", RRType.A);
    p[10] = 0xff;
    p[11] = 0xff;
    const t = performance.now();
    expect(parseQuery(p)!.bad).toBe("formerr");
    expect(performance.now() - t).toBeLessThan(50);
  });

  test("a compression pointer to itself, forwards, or in a loop: formerr", () => {
    const self = join(header(1, 0, 1), [0xc0, 12, 0, 1, 0, 1]);
    expect(parseQuery(self)!.bad).toBe("formerr");
    const forwards = join(header(1, 0, 1), [0xc0, 14, 1, 0x61, 0, 0, 1, 0, 1]);
    expect(parseQuery(forwards)!.bad).toBe("formerr");
    // 12: label "a", pointer to 16; 16: pointer back to 12 — a loop through two pointers.
    const loop = join(header(1, 0, 1), [1, 0x61, 0xc0, 16, 0xc0, 12, 0, 1, 0, 1]);
    expect(parseQuery(loop)!.bad).toBe("formerr");
  });

  test("labels of reserved types, longer than 63 bytes, and names past 255 bytes: formerr", () => {
    expect(parseQuery(join(header(1, 0, 1), [0x40, 0, 0, 1, 0, 1]))!.bad).toBe("formerr");
    expect(parseQuery(join(header(1, 0, 1), [64, ...new Array(64).fill(0x61), 0, 0, 1, 0, 1]))!.bad).toBe("formerr");
    const long = Array.from({ length: 5 }, () => [63, ...new Array(63).fill(0x61)]).flat();
    expect(parseQuery(join(header(1, 0, 1), long, [0, 0, 1, 0, 1]))!.bad).toBe("formerr");
  });

  test("a backwards pointer is followed (compressed questions are legal)", () => {
    // The header's last byte is 0 (arcount): a pointer to offset 11 reads the root name.
    const p = join(header(1, 0, 1), [0xc0, 11, 0, 1, 0, 1]);
    expect(parseQuery(p)!.question!.name).toBe("");
  });

  test("dots and odd bytes inside a label are escaped, not read as structure", () => {
    const p = join(header(1, 0, 1), [3, 0x61, 0x2e, 0x00, 0, 0, 1, 0, 1]);
    expect(readName(p, 12).name).toBe("a\\.\\000");
  });

  test("random bytes never throw", () => {
    let seed = 42;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed & 0xff;
    };
    for (let i = 0; i < 5000; i++) {
      const p = Uint8Array.from({ length: 12 + (rnd() % 64) }, rnd);
      p[2] = p[2]! & 0x7f;
      expect(() => parseQuery(p)).not.toThrow();
    }
  });
});

describe("encodeAnswer", () => {
  const a = (n: number): ResourceRecord => ({
    name: "web.shop.svc.clusterset.local",
    ttl: 5,
    data: { type: RRType.A, address: `10.0.${n >> 8}.${n & 0xff}` },
  });

  test("header, question and records round-trip; the answer name points at the question", () => {
    const q = parseQuery(encodeQuery(77, "WEB.shop.svc.clusterset.local", RRType.A))!;
    const answer: Answer = { rcode: RCode.NOERROR, aa: true, answers: [a(1), a(2)], authority: [] };
    const out = encodeAnswer(q, answer);
    const d = decodeAnswer(out);
    expect(d.id).toBe(77);
    expect(d.qr).toBe(true);
    expect(d.aa).toBe(true);
    expect(d.tc).toBe(false);
    expect(d.rcode).toBe(0);
    expect(d.answers.map((r) => [r.name, r.type, r.ttl, r.data])).toEqual([
      ["WEB.shop.svc.clusterset.local", 1, 5, "10.0.0.1"],
      ["WEB.shop.svc.clusterset.local", 1, 5, "10.0.0.2"],
    ]);
    // 2-byte pointers instead of the 31-byte name: 12 + 35 (question) + 2 × (2 + 10 + 4).
    expect(out.length).toBe(12 + 35 + 2 * 16);
  });

  test("AAAA, SRV and SOA records", () => {
    const q = parseQuery(encodeQuery(1, "x.clusterset.local", RRType.ANY))!;
    const out = encodeAnswer(q, {
      rcode: 0,
      aa: true,
      answers: [
        { name: "x.clusterset.local", ttl: 5, data: { type: RRType.AAAA, address: "fd00::1:2" } },
        {
          name: "x.clusterset.local",
          ttl: 5,
          data: { type: RRType.SRV, priority: 0, weight: 100, port: 80, target: "web.shop.svc.clusterset.local" },
        },
      ],
      authority: [
        {
          name: "clusterset.local",
          ttl: 5,
          data: {
            type: RRType.SOA,
            mname: "ns.dns.clusterset.local",
            rname: "h.clusterset.local",
            serial: 1,
            refresh: 2,
            retry: 3,
            expire: 4,
            minimum: 5,
          },
        },
      ],
    });
    const d = decodeAnswer(out);
    expect(d.answers.map((r) => r.data)).toEqual(["fd00:0:0:0:0:0:1:2", "0 100 80 web.shop.svc.clusterset.local"]);
    expect(d.authority.map((r) => [r.name, r.data])).toEqual([["clusterset.local", "ns.dns.clusterset.local"]]);
  });

  test("over the UDP limit: the records that fit, and TC so the client retries over TCP", () => {
    const q = parseQuery(encodeQuery(1, "web.shop.svc.clusterset.local", RRType.A))!;
    const many = Array.from({ length: 100 }, (_, i) => a(i));
    const out = encodeAnswer(q, { rcode: 0, aa: true, answers: many, authority: [] }, 512);
    expect(out.length).toBeLessThanOrEqual(512);
    const d = decodeAnswer(out);
    expect(d.tc).toBe(true);
    expect(d.answers.length).toBe(Math.floor((512 - 12 - 35) / 16));
    const tcp = decodeAnswer(encodeAnswer(q, { rcode: 0, aa: true, answers: many, authority: [] }));
    expect(tcp.tc).toBe(false);
    expect(tcp.answers.length).toBe(100);
  });

  test("an EDNS query gets an OPT record back, counted in the limit", () => {
    const q = parseQuery(encodeQuery(1, "web.shop.svc.clusterset.local", RRType.A, { edns: 1232 }))!;
    const out = encodeAnswer(q, { rcode: 0, aa: true, answers: [a(1)], authority: [] }, udpLimit(q));
    expect(out[11]).toBe(1); // arcount
    expect(out.length).toBe(12 + 35 + 16 + 11);
  });
});
