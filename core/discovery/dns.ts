// A small DNS message codec (RFC 1035, with RFC 6762's mDNS bits) for what discovery needs:
// questions and PTR, SRV, TXT and A records. Decoding is strict and bounded, since on a LAN
// anyone may send anything: a size cap, a record cap, name compression with a jump limit (no
// loops), names and labels within DNS limits; a malformed message is a DnsFormatError, never a crash.

export const RecordType = { A: 1, PTR: 12, TXT: 16, SRV: 33, ANY: 255 } as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];
const CLASS_IN = 1;

/** mDNS messages fit in 9000 bytes (RFC 6762 §17); so do the DNS answers discovery reads. */
export const MAX_MESSAGE = 9000;
const MAX_RECORDS = 256;
const MAX_JUMPS = 16;

export interface Question {
  name: string;
  type: number;
}

export type DnsRecord =
  | { name: string; type: 1; ttl: number; address: string }
  | { name: string; type: 12; ttl: number; target: string }
  | { name: string; type: 16; ttl: number; strings: string[] }
  | { name: string; type: 33; ttl: number; priority: number; weight: number; port: number; target: string };

export interface DnsMessage {
  id: number;
  response: boolean;
  questions: Question[];
  answers: DnsRecord[];
  /** Additional records (mDNS responders put SRV, TXT and A there). */
  additionals: DnsRecord[];
}

export class DnsFormatError extends Error {
  override name = "DnsFormatError";
}

/** Names compare case-insensitively and without the final dot. */
export const normalName = (name: string) => name.replace(/\.$/, "").toLowerCase();

// ---- encoding (no compression: our messages are small) ----

function encodeName(name: string, out: number[]): void {
  const labels = normalName(name) === "" ? [] : name.replace(/\.$/, "").split(".");
  for (const label of labels) {
    const bytes = new TextEncoder().encode(label);
    if (bytes.length === 0 || bytes.length > 63)
      throw new DnsFormatError(`label "${label}" of ${name} must be 1 to 63 bytes`);
    out.push(bytes.length, ...bytes);
  }
  out.push(0);
}

const u16 = (out: number[], v: number) => out.push((v >> 8) & 0xff, v & 0xff);
const u32 = (out: number[], v: number) => out.push((v >>> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);

function encodeRecord(r: DnsRecord, out: number[]): void {
  encodeName(r.name, out);
  u16(out, r.type);
  u16(out, CLASS_IN);
  u32(out, r.ttl);
  const data: number[] = [];
  switch (r.type) {
    case 1: {
      const parts = r.address.split(".").map(Number);
      if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255))
        throw new DnsFormatError(`${r.address} is not an IPv4 address`);
      data.push(...parts);
      break;
    }
    case 12:
      encodeName(r.target, data);
      break;
    case 16:
      for (const s of r.strings) {
        const bytes = new TextEncoder().encode(s);
        if (bytes.length > 255) throw new DnsFormatError(`TXT string "${s.slice(0, 20)}…" is longer than 255 bytes`);
        data.push(bytes.length, ...bytes);
      }
      if (!r.strings.length) data.push(0);
      break;
    case 33:
      u16(data, r.priority);
      u16(data, r.weight);
      u16(data, r.port);
      encodeName(r.target, data);
      break;
  }
  u16(out, data.length);
  out.push(...data);
}

export function encodeMessage(m: Partial<DnsMessage> & { questions?: Question[] }): Uint8Array {
  const out: number[] = [];
  u16(out, m.id ?? 0);
  // A response is authoritative (mDNS answers always are).
  u16(out, m.response ? 0x8400 : 0);
  u16(out, m.questions?.length ?? 0);
  u16(out, m.answers?.length ?? 0);
  u16(out, 0);
  u16(out, m.additionals?.length ?? 0);
  for (const q of m.questions ?? []) {
    encodeName(q.name, out);
    u16(out, q.type);
    u16(out, CLASS_IN);
  }
  for (const r of m.answers ?? []) encodeRecord(r, out);
  for (const r of m.additionals ?? []) encodeRecord(r, out);
  if (out.length > MAX_MESSAGE)
    throw new DnsFormatError(`the message would be ${out.length} bytes, over ${MAX_MESSAGE}`);
  return Uint8Array.from(out);
}

// ---- decoding ----

class Reader {
  constructor(
    readonly buf: Uint8Array,
    public pos = 0,
  ) {}
  need(n: number, what: string) {
    if (this.pos + n > this.buf.length) throw new DnsFormatError(`truncated ${what} at byte ${this.pos}`);
  }
  u8(what: string) {
    this.need(1, what);
    return this.buf[this.pos++]!;
  }
  u16(what: string) {
    this.need(2, what);
    const v = (this.buf[this.pos]! << 8) | this.buf[this.pos + 1]!;
    this.pos += 2;
    return v;
  }
  u32(what: string) {
    this.need(4, what);
    const v =
      ((this.buf[this.pos]! << 24) >>> 0) +
      (this.buf[this.pos + 1]! << 16) +
      (this.buf[this.pos + 2]! << 8) +
      this.buf[this.pos + 3]!;
    this.pos += 4;
    return v;
  }
  /** A name, following compression pointers (at most MAX_JUMPS, each strictly backwards). */
  name(): string {
    const labels: string[] = [];
    let pos = this.pos;
    let jumps = 0;
    let end: number | undefined;
    let length = 0;
    for (;;) {
      if (pos >= this.buf.length) throw new DnsFormatError(`truncated name at byte ${pos}`);
      const len = this.buf[pos]!;
      if ((len & 0xc0) === 0xc0) {
        if (pos + 1 >= this.buf.length) throw new DnsFormatError(`truncated compression pointer at byte ${pos}`);
        const target = ((len & 0x3f) << 8) | this.buf[pos + 1]!;
        if (++jumps > MAX_JUMPS) throw new DnsFormatError("too many compression pointers in a name");
        if (target >= pos) throw new DnsFormatError(`compression pointer at byte ${pos} does not point backwards`);
        end ??= pos + 2;
        pos = target;
        continue;
      }
      if (len & 0xc0) throw new DnsFormatError(`unknown label type 0x${len.toString(16)} at byte ${pos}`);
      if (len === 0) {
        end ??= pos + 1;
        break;
      }
      if (pos + 1 + len > this.buf.length) throw new DnsFormatError(`truncated label at byte ${pos}`);
      length += len + 1;
      if (length > 255) throw new DnsFormatError("a name longer than 255 bytes");
      labels.push(new TextDecoder("utf-8", { fatal: false }).decode(this.buf.subarray(pos + 1, pos + 1 + len)));
      pos += 1 + len;
    }
    this.pos = end;
    return labels.join(".");
  }
}

function decodeRecord(r: Reader): DnsRecord | undefined {
  const name = r.name();
  const type = r.u16("record type");
  r.u16("record class");
  const ttl = r.u32("record TTL");
  const length = r.u16("record length");
  r.need(length, "record data");
  const end = r.pos + length;
  let rec: DnsRecord | undefined;
  switch (type) {
    case 1:
      if (length !== 4) throw new DnsFormatError(`A record of ${name} has ${length} bytes, not 4`);
      rec = { name, type: 1, ttl, address: Array.from(r.buf.subarray(r.pos, r.pos + 4)).join(".") };
      break;
    case 12:
      rec = { name, type: 12, ttl, target: r.name() };
      break;
    case 16: {
      const strings: string[] = [];
      let p = r.pos;
      while (p < end) {
        const n = r.buf[p]!;
        if (p + 1 + n > end) throw new DnsFormatError(`TXT record of ${name} overruns its length`);
        if (n > 0) strings.push(new TextDecoder().decode(r.buf.subarray(p + 1, p + 1 + n)));
        p += 1 + n;
      }
      rec = { name, type: 16, ttl, strings };
      break;
    }
    case 33: {
      const priority = r.u16("SRV priority");
      const weight = r.u16("SRV weight");
      const port = r.u16("SRV port");
      rec = { name, type: 33, ttl, priority, weight, port, target: r.name() };
      break;
    }
  }
  if (rec && r.pos > end) throw new DnsFormatError(`record of ${name} overruns its length`);
  // Other types (AAAA, NSEC, ...) are skipped.
  r.pos = end;
  return rec;
}

export function decodeMessage(buf: Uint8Array): DnsMessage {
  if (buf.length > MAX_MESSAGE) throw new DnsFormatError(`message of ${buf.length} bytes, over ${MAX_MESSAGE}`);
  if (buf.length < 12) throw new DnsFormatError(`message of ${buf.length} bytes is shorter than a DNS header`);
  const r = new Reader(buf);
  const id = r.u16("id");
  const flags = r.u16("flags");
  const counts = [r.u16("qdcount"), r.u16("ancount"), r.u16("nscount"), r.u16("arcount")] as const;
  if (counts.reduce((a, b) => a + b, 0) > MAX_RECORDS)
    throw new DnsFormatError(`message claims ${counts.reduce((a, b) => a + b, 0)} entries, over ${MAX_RECORDS}`);
  const questions: Question[] = [];
  for (let i = 0; i < counts[0]; i++) {
    const name = r.name();
    const type = r.u16("question type");
    r.u16("question class");
    questions.push({ name, type });
  }
  const section = (n: number) => {
    const out: DnsRecord[] = [];
    for (let i = 0; i < n; i++) {
      const rec = decodeRecord(r);
      if (rec) out.push(rec);
    }
    return out;
  };
  const answers = section(counts[1]);
  section(counts[2]); // authority: not used
  const additionals = section(counts[3]);
  return { id, response: (flags & 0x8000) !== 0, questions, answers, additionals };
}
