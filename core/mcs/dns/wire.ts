// The DNS wire format (RFC 1035), only as much as an authoritative server of one zone needs: parse
// a query (header, one question, an EDNS OPT record) and encode an answer. Everything read is
// bounds-checked: a packet from the network is hostile until parsed, and a bad one becomes a
// typed DnsFormatError (answered FORMERR) or undefined (dropped), never an exception elsewhere.

export const RRType = { A: 1, NS: 2, SOA: 6, AAAA: 28, SRV: 33, OPT: 41, AXFR: 252, ANY: 255 } as const;
export const RCode = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
export const CLASS_IN = 1;

/** The largest UDP answer we send to a client that announces none (RFC 1035) or more (the DNS flag day's 1232). */
export const UDP_PLAIN_MAX = 512;
export const UDP_EDNS_MAX = 1232;

export interface Question {
  /** As sent (case kept, for the answer); compare with `lower`. */
  name: string;
  lower: string;
  type: number;
  class: number;
}

export interface Query {
  id: number;
  opcode: number;
  /** Recursion desired, echoed in the answer. */
  rd: boolean;
  /** Set when the header is sound but the rest could not be read or is not one question. */
  bad?: "formerr";
  question?: Question;
  /** The requestor's UDP payload size from its OPT record; undefined without EDNS. */
  ednsSize?: number;
}

export class DnsFormatError extends Error {}

const MAX_NAME = 255;
const MAX_LABEL = 63;

/**
 * Reads a (possibly compressed) name at `at`; returns it and the offset after it in the packet.
 * Pointers must point strictly backwards, which rules out loops; the name's length is capped.
 */
export function readName(buf: Uint8Array, at: number): { name: string; next: number } {
  const labels: string[] = [];
  let pos = at;
  let next = -1;
  let length = 0;
  let lowest = at;
  for (;;) {
    if (pos >= buf.length) throw new DnsFormatError("name runs past the end of the packet");
    const len = buf[pos]!;
    if (len === 0) {
      if (next < 0) next = pos + 1;
      break;
    }
    const kind = len & 0xc0;
    if (kind === 0xc0) {
      if (pos + 1 >= buf.length) throw new DnsFormatError("compression pointer runs past the end");
      const target = ((len & 0x3f) << 8) | buf[pos + 1]!;
      if (target >= lowest) throw new DnsFormatError("compression pointer does not point backwards");
      if (next < 0) next = pos + 2;
      lowest = target;
      pos = target;
      continue;
    }
    if (kind !== 0) throw new DnsFormatError("unknown label type");
    if (len > MAX_LABEL) throw new DnsFormatError("label longer than 63 bytes");
    if (pos + 1 + len > buf.length) throw new DnsFormatError("label runs past the end of the packet");
    length += len + 1;
    if (length + 1 > MAX_NAME) throw new DnsFormatError("name longer than 255 bytes");
    let label = "";
    for (let i = pos + 1; i <= pos + len; i++) {
      const c = buf[i]!;
      // Escaped as in zone files so that a dot or a byte inside a label never reads as structure.
      label +=
        c === 0x2e || c === 0x5c
          ? `\\${String.fromCharCode(c)}`
          : c > 0x20 && c < 0x7f
            ? String.fromCharCode(c)
            : `\\${c.toString().padStart(3, "0")}`;
    }
    labels.push(label);
    pos += 1 + len;
  }
  return { name: labels.join("."), next };
}

const u16 = (buf: Uint8Array, at: number) => (buf[at]! << 8) | buf[at + 1]!;

/**
 * Parses a query. Undefined when it must be dropped (shorter than a header, or a response: answering
 * those would let anyone bounce packets between two servers); otherwise the header fields and
 * either the question or `bad`.
 */
export function parseQuery(buf: Uint8Array): Query | undefined {
  if (buf.length < 12) return undefined;
  const id = u16(buf, 0);
  const flags = u16(buf, 2);
  if (flags & 0x8000) return undefined;
  const query: Query = { id, opcode: (flags >> 11) & 0xf, rd: (flags & 0x0100) !== 0 };
  if (query.opcode !== 0) return query;
  const qd = u16(buf, 4);
  const an = u16(buf, 6);
  const ns = u16(buf, 8);
  const ar = u16(buf, 10);
  // A query carries one question and nothing in the answer and authority sections.
  if (qd !== 1 || an !== 0 || ns !== 0) return { ...query, bad: "formerr" };
  try {
    const { name, next } = readName(buf, 12);
    if (next + 4 > buf.length) throw new DnsFormatError("question runs past the end of the packet");
    query.question = { name, lower: name.toLowerCase(), type: u16(buf, next), class: u16(buf, next + 2) };
    // The additional section: only an OPT record means anything to us; the loop is bounded by the
    // packet's length whatever the count claims.
    let pos = next + 4;
    for (let i = 0; i < ar; i++) {
      const rr = readName(buf, pos);
      if (rr.next + 10 > buf.length) throw new DnsFormatError("record runs past the end of the packet");
      const type = u16(buf, rr.next);
      const rdlen = u16(buf, rr.next + 8);
      if (rr.next + 10 + rdlen > buf.length) throw new DnsFormatError("record data runs past the end of the packet");
      if (type === RRType.OPT) query.ednsSize = u16(buf, rr.next + 2);
      pos = rr.next + 10 + rdlen;
    }
  } catch (err) {
    if (err instanceof DnsFormatError) return { ...query, question: undefined, bad: "formerr" };
    throw err;
  }
  return query;
}

export type RData =
  | { type: typeof RRType.A | typeof RRType.AAAA; address: string }
  | { type: typeof RRType.SRV; priority: number; weight: number; port: number; target: string }
  | {
      type: typeof RRType.SOA;
      mname: string;
      rname: string;
      serial: number;
      refresh: number;
      retry: number;
      expire: number;
      minimum: number;
    };

export interface ResourceRecord {
  /** Lower case, fully qualified without the final dot. */
  name: string;
  ttl: number;
  data: RData;
}

export interface Answer {
  rcode: number;
  /** Authoritative: set on every answer about our zone. */
  aa: boolean;
  answers: ResourceRecord[];
  authority: ResourceRecord[];
}

class Writer {
  buf = new Uint8Array(512);
  len = 0;
  private ensure(n: number) {
    if (this.len + n <= this.buf.length) return;
    const bigger = new Uint8Array(Math.max(this.buf.length * 2, this.len + n));
    bigger.set(this.buf.subarray(0, this.len));
    this.buf = bigger;
  }
  u8(v: number) {
    this.ensure(1);
    this.buf[this.len++] = v & 0xff;
  }
  u16(v: number) {
    this.u8(v >> 8);
    this.u8(v);
  }
  u32(v: number) {
    this.u16(Math.floor(v / 0x10000) & 0xffff);
    this.u16(v & 0xffff);
  }
  setU16(at: number, v: number) {
    this.buf[at] = (v >> 8) & 0xff;
    this.buf[at + 1] = v & 0xff;
  }
  bytes(b: Uint8Array) {
    this.ensure(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }
}

/** Splits a presentation name into label bytes, undoing readName's escapes. */
export function labelsOf(name: string): Uint8Array[] {
  if (name === "" || name === ".") return [];
  const out: Uint8Array[] = [];
  let cur: number[] = [];
  for (let i = 0; i < name.length; i++) {
    const ch = name[i]!;
    if (ch === "\\") {
      const digits = name.slice(i + 1, i + 4);
      if (/^\d{3}$/.test(digits)) {
        cur.push(Number(digits));
        i += 3;
      } else {
        cur.push(name.charCodeAt(i + 1));
        i += 1;
      }
    } else if (ch === ".") {
      out.push(Uint8Array.from(cur));
      cur = [];
    } else cur.push(name.charCodeAt(i) & 0xff);
  }
  if (cur.length) out.push(Uint8Array.from(cur));
  return out;
}

/** Writes a name, compressed against the question's name (at offset 12) when it equals it. */
function writeName(w: Writer, name: string, question: string | undefined) {
  if (question !== undefined && name === question.toLowerCase()) {
    w.u16(0xc000 | 12);
    return;
  }
  for (const l of labelsOf(name)) {
    if (l.length > MAX_LABEL) throw new Error(`label of ${name} is longer than 63 bytes`);
    w.u8(l.length);
    w.bytes(l);
  }
  w.u8(0);
}

function writeAddress(w: Writer, type: number, address: string) {
  if (type === RRType.A) {
    const parts = address.split(".").map(Number);
    w.u16(4);
    for (const p of parts) w.u8(p);
    return;
  }
  // IPv6: expand "::" to the missing groups of zeros.
  const [head, tail] = address.includes("::") ? address.split("::") : [address, undefined];
  const h = head ? head.split(":") : [];
  const t = tail !== undefined && tail !== "" ? tail.split(":") : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill("0"), ...t];
  w.u16(16);
  for (const g of groups) w.u16(Number.parseInt(g, 16));
}

function writeRecord(w: Writer, rr: ResourceRecord, question: string | undefined) {
  writeName(w, rr.name, question);
  w.u16(rr.data.type);
  w.u16(CLASS_IN);
  w.u32(rr.ttl);
  const d = rr.data;
  if (d.type === RRType.A || d.type === RRType.AAAA) {
    writeAddress(w, d.type, d.address);
    return;
  }
  const lenAt = w.len;
  w.u16(0);
  if (d.type === RRType.SRV) {
    w.u16(d.priority);
    w.u16(d.weight);
    w.u16(d.port);
    // RFC 2782: the target is never compressed.
    writeName(w, d.target, undefined);
  } else if (d.type === RRType.SOA) {
    writeName(w, d.mname, undefined);
    writeName(w, d.rname, undefined);
    w.u32(d.serial);
    w.u32(d.refresh);
    w.u32(d.retry);
    w.u32(d.expire);
    w.u32(d.minimum);
  }
  w.setU16(lenAt, w.len - lenAt - 2);
}

/**
 * Encodes the answer to `query`. With `maxSize` (UDP), answers that do not fit are left out and
 * TC is set, so the client asks again over TCP (RFC 7766); the question is always there.
 */
export function encodeAnswer(query: Query, answer: Answer, maxSize = 65535): Uint8Array {
  const q = query.question;
  const w = new Writer();
  w.u16(query.id);
  const flags = 0x8000 | (query.opcode << 11) | (answer.aa ? 0x0400 : 0) | (query.rd ? 0x0100 : 0) | answer.rcode;
  const flagsAt = w.len;
  w.u16(flags);
  w.u16(q ? 1 : 0);
  const counts = w.len;
  w.u16(0);
  w.u16(0);
  w.u16(query.ednsSize !== undefined ? 1 : 0);
  if (q) {
    writeName(w, q.name, undefined);
    w.u16(q.type);
    w.u16(q.class);
  }
  const opt = query.ednsSize !== undefined ? 11 : 0;
  let truncated = false;
  const section = (records: ResourceRecord[], countAt: number) => {
    let n = 0;
    for (const rr of records) {
      if (truncated) break;
      const before = w.len;
      writeRecord(w, rr, q?.name);
      if (w.len + opt > maxSize) {
        w.len = before;
        truncated = true;
        break;
      }
      n++;
    }
    w.setU16(countAt, n);
  };
  section(answer.answers, counts);
  section(answer.authority, counts + 2);
  if (truncated) w.setU16(flagsAt, flags | 0x0200);
  if (opt) {
    // OPT: root name, our UDP payload size, no extended rcode, version 0, no options.
    w.u8(0);
    w.u16(RRType.OPT);
    w.u16(UDP_EDNS_MAX);
    w.u32(0);
    w.u16(0);
  }
  return w.buf.slice(0, w.len);
}

/** The most a UDP answer to `query` may take. */
export const udpLimit = (query: Query) =>
  query.ednsSize === undefined ? UDP_PLAIN_MAX : Math.min(Math.max(query.ednsSize, UDP_PLAIN_MAX), UDP_EDNS_MAX);

/** A query, for tests and benchmarks: one question, RD set, optionally with an OPT record. */
export function encodeQuery(id: number, name: string, type: number, opts: { edns?: number; class?: number } = {}) {
  const w = new Writer();
  w.u16(id);
  w.u16(0x0100);
  w.u16(1);
  w.u16(0);
  w.u16(0);
  w.u16(opts.edns !== undefined ? 1 : 0);
  writeName(w, name, undefined);
  w.u16(type);
  w.u16(opts.class ?? CLASS_IN);
  if (opts.edns !== undefined) {
    w.u8(0);
    w.u16(RRType.OPT);
    w.u16(opts.edns);
    w.u32(0);
    w.u16(0);
  }
  return w.buf.slice(0, w.len);
}

/** Decodes an answer, for tests and benchmarks: header, and the answer and authority records. */
export function decodeAnswer(buf: Uint8Array) {
  const id = u16(buf, 0);
  const flags = u16(buf, 2);
  const qd = u16(buf, 4);
  const an = u16(buf, 6);
  const ns = u16(buf, 8);
  let pos = 12;
  for (let i = 0; i < qd; i++) pos = readName(buf, pos).next + 4;
  const records = (n: number) => {
    const out: { name: string; type: number; ttl: number; data: string }[] = [];
    for (let i = 0; i < n; i++) {
      const { name, next } = readName(buf, pos);
      const type = u16(buf, next);
      const ttl = u16(buf, next + 4) * 0x10000 + u16(buf, next + 6);
      const len = u16(buf, next + 8);
      const at = next + 10;
      let data: string;
      if (type === RRType.A) data = [...buf.subarray(at, at + 4)].join(".");
      else if (type === RRType.AAAA)
        data = Array.from({ length: 8 }, (_, k) => u16(buf, at + 2 * k).toString(16)).join(":");
      else if (type === RRType.SRV)
        data = `${u16(buf, at)} ${u16(buf, at + 2)} ${u16(buf, at + 4)} ${readName(buf, at + 6).name}`;
      else if (type === RRType.SOA) data = readName(buf, at).name;
      else data = "";
      out.push({ name, type, ttl, data });
      pos = at + len;
    }
    return out;
  };
  const answers = records(an);
  const authority = records(ns);
  return {
    id,
    rcode: flags & 0xf,
    aa: (flags & 0x0400) !== 0,
    tc: (flags & 0x0200) !== 0,
    qr: (flags & 0x8000) !== 0,
    answers,
    authority,
  };
}
