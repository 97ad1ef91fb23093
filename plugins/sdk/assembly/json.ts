// A lazy JSON tree for reflector plugins. Parsing the host's payload into a full tree cost
// more than the whole transform in TypeScript (every key and value allocated), so a parsed
// Value is only a slice of the input bytes: get()/at() scan the bytes on demand, strings are
// decoded when read, and an untouched subtree is written back by one memory.copy. Values a
// plugin builds or edits (set/remove/push) become ordinary containers.
// Numbers keep their source text so ports and quantities round-trip exactly.
import { Writer } from "./writer";
export { Writer } from "./writer";

export enum Kind { Null, Bool, Number, String, Array, Object }

export class Value {
  kind: Kind = Kind.Null;
  bool: bool = false;
  /** Raw slice [start, end) of the input, 0/0 for built values and once materialized. */
  start: usize = 0;
  end: usize = 0;
  private decoded: bool = false;
  private textValue: string = "";
  private itemList: Array<Value> | null = null;
  private keyList: Array<string> | null = null;
  // The last member found in a raw object: plugins read metadata, spec... more than once.
  private lastKey: string | null = null;
  private lastFound: Value | null = null;

  static null(): Value { return new Value(); }
  static bool(b: bool): Value { const v = new Value(); v.kind = Kind.Bool; v.bool = b; return v; }
  static str(s: string): Value { const v = new Value(); v.kind = Kind.String; v.textValue = s; v.decoded = true; return v; }
  static num(n: i64): Value { const v = new Value(); v.kind = Kind.Number; v.textValue = n.toString(); v.decoded = true; return v; }
  static arr(): Value { const v = new Value(); v.kind = Kind.Array; v.itemList = []; return v; }
  static obj(): Value { const v = new Value(); v.kind = Kind.Object; v.itemList = []; v.keyList = []; return v; }
  static raw(kind: Kind, start: usize, end: usize): Value {
    const v = new Value(); v.kind = kind; v.start = start; v.end = end;
    if (kind == Kind.Bool) v.bool = load<u8>(start) == 0x74;
    return v;
  }

  isNull(): bool { return this.kind == Kind.Null; }
  isObject(): bool { return this.kind == Kind.Object; }
  isArray(): bool { return this.kind == Kind.Array; }
  isString(): bool { return this.kind == Kind.String; }
  @inline private isRaw(): bool { return this.end != 0; }

  /** Member of an object; a Null value when absent or when this is not an object. */
  get(key: string): Value {
    if (this.kind != Kind.Object) return new Value();
    if (this.isRaw()) return this.find(key);
    const keys = this.keyList!;
    for (let i = 0; i < keys.length; i++) if (keys[i] == key) return this.itemList![i];
    return new Value();
  }

  /** Scans a raw object for a member: a raw value (end != 0) when found, else an empty Null. */
  private find(key: string): Value {
    const lastKey = this.lastKey;
    if (lastKey != null && lastKey == key) return this.lastFound!;
    const found = this.scan(key);
    this.lastKey = key;
    this.lastFound = found;
    return found;
  }

  private scan(key: string): Value {
    if (this.kind == Kind.Object && this.isRaw()) {
      let i = this.start + 1;
      const end = this.end;
      i = skipWs(i, end);
      if (load<u8>(i) == 0x7d) return new Value();
      while (i < end) {
        const ks = i;
        const ke = skipString(i, end);
        if (ke == 0) return new Value();
        i = skipWs(ke, end) + 1; // ':'
        i = skipWs(i, end);
        const vs = i;
        const ve = skipValue(i, end);
        if (ve == 0) return new Value();
        if (keyEquals(ks, ke, key)) return Value.raw(kindAt(vs), vs, ve);
        i = skipWs(ve, end);
        if (load<u8>(i) != 0x2c) break;
        i = skipWs(i + 1, end);
      }
    }
    return new Value();
  }
  /** True when the member exists, even with a null value. */
  has(key: string): bool { return this.find(key).end != 0 || (!this.isRaw() && this.kind == Kind.Object && this.keyList!.indexOf(key) >= 0); }
  /** Follows a dotted path of object keys: path("metadata.labels"). */
  path(dotted: string): Value {
    const parts = dotted.split(".");
    let cur: Value = this;
    for (let i = 0; i < parts.length; i++) cur = cur.get(parts[i]);
    return cur;
  }
  set(key: string, value: Value): Value {
    this.materialize();
    const keys = this.keyList!;
    const i = keys.indexOf(key);
    if (i >= 0) this.itemList![i] = value;
    else { keys.push(key); this.itemList!.push(value); }
    return this;
  }
  remove(key: string): Value {
    this.materialize();
    const i = this.keyList!.indexOf(key);
    if (i >= 0) { this.keyList!.splice(i, 1); this.itemList!.splice(i, 1); }
    return this;
  }
  push(value: Value): Value { this.materialize(); this.itemList!.push(value); return this; }
  at(i: i32): Value {
    if (this.kind != Kind.Array) return new Value();
    this.materialize();
    const items = this.itemList!;
    return i >= 0 && i < items.length ? items[i] : new Value();
  }
  get length(): i32 {
    if (this.kind != Kind.Array && this.kind != Kind.Object) return 0;
    this.materialize();
    return this.itemList!.length;
  }

  /** String content, or "" for any other kind: plugins read fields without crashing on odd input. */
  str(): string { return this.kind == Kind.String ? this.text() : ""; }
  int(): i64 { return this.kind == Kind.Number ? I64.parseInt(this.text()) : 0; }
  isTrue(): bool { return this.kind == Kind.Bool && this.bool; }
  private text(): string {
    if (!this.decoded) {
      this.textValue = this.kind == Kind.String ? decodeString(this.start, this.end) : String.UTF8.decodeUnsafe(this.start, this.end - this.start);
      this.decoded = true;
    }
    return this.textValue;
  }

  /** A shallow copy: a new container holding the same children. */
  shallow(): Value {
    this.materialize();
    const v = new Value();
    v.kind = this.kind; v.bool = this.bool; v.decoded = this.decoded; v.textValue = this.textValue;
    v.start = this.start; v.end = this.end;
    if (this.itemList != null) v.itemList = this.itemList!.slice(0);
    if (this.keyList != null) v.keyList = this.keyList!.slice(0);
    return v;
  }

  /** Turns a raw container into a built one whose children are raw slices. */
  private materialize(): void {
    if (this.kind != Kind.Array && this.kind != Kind.Object) return;
    if (!this.isRaw()) return;
    const items: Array<Value> = [];
    const isObj = this.kind == Kind.Object;
    const keys: Array<string> = [];
    const end = this.end;
    let i = skipWs(this.start + 1, end);
    const close: u8 = isObj ? 0x7d : 0x5d;
    while (i < end && load<u8>(i) != close) {
      if (isObj) {
        const ke = skipString(i, end);
        keys.push(decodeString(i, ke));
        i = skipWs(skipWs(ke, end) + 1, end);
      }
      const ve = skipValue(i, end);
      items.push(Value.raw(kindAt(i), i, ve));
      i = skipWs(ve, end);
      if (load<u8>(i) == 0x2c) i = skipWs(i + 1, end);
    }
    this.itemList = items;
    if (isObj) this.keyList = keys;
    this.start = 0; this.end = 0;
  }

  write(w: Writer): void {
    if (this.isRaw()) { w.bytes(this.start, <i32>(this.end - this.start)); return; }
    switch (this.kind) {
      case Kind.Null: w.raw("null"); break;
      case Kind.Bool: w.raw(this.bool ? "true" : "false"); break;
      case Kind.Number: w.raw(this.textValue); break;
      case Kind.String: w.str(this.textValue); break;
      case Kind.Array: {
        const items = this.itemList!;
        w.byte(0x5b);
        for (let i = 0; i < items.length; i++) { if (i > 0) w.byte(0x2c); items[i].write(w); }
        w.byte(0x5d); break;
      }
      default: {
        const items = this.itemList!;
        const keys = this.keyList!;
        w.byte(0x7b);
        for (let i = 0; i < items.length; i++) {
          if (i > 0) w.byte(0x2c);
          w.str(keys[i]); w.byte(0x3a); items[i].write(w);
        }
        w.byte(0x7d);
      }
    }
  }
  toString(): string { const w = new Writer(256); this.write(w); return w.toString(); }
}

/** Parse failure: the position lets a plugin author find the bad byte in the input. */
export class ParseResult {
  value: Value = new Value();
  error: string = "";
}

/**
 * Wraps a document in a lazy root value. The host's payload comes from JSON.stringify, so
 * it is not re-validated here (that scan alone cost as much as a transform); every later scan
 * stays within [ptr, ptr+len) whatever the bytes are. Use validate() for untrusted text.
 */
export function parse(ptr: usize, len: i32): ParseResult {
  const out = new ParseResult();
  let end = ptr + <usize>len;
  const s = skipWs(ptr, end);
  while (end > s && isWs(load<u8>(end - 1))) end--;
  if (s >= end) { out.error = "empty document"; return out; }
  out.value = Value.raw(kindAt(s), s, end);
  return out;
}

/** Full grammar check: for text that did not come from the host. */
export function validate(ptr: usize, len: i32): string {
  const end = ptr + <usize>len;
  const s = skipWs(ptr, end);
  const e = s < end ? checkValue(s, end) : 0;
  if (e == 0) return "invalid JSON near byte " + (failedAt > ptr ? failedAt - ptr : 0).toString();
  if (skipWs(e, end) != end) return "trailing bytes at byte " + (e - ptr).toString();
  return "";
}

@inline function isWs(c: u8): bool { return c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09; }

/** Parses text a plugin got elsewhere (a look-up answer): validated first, since not from JSON.stringify. */
export function parseString(s: string): ParseResult {
  const buf = String.UTF8.encode(s);
  const err = validate(changetype<usize>(buf), buf.byteLength);
  if (err.length > 0) { const r = new ParseResult(); r.error = err; return r; }
  return parse(changetype<usize>(buf), buf.byteLength);
}

// --- byte scanning over [i, end); 0 means malformed ---

let failedAt: usize = 0;

@inline function fail(i: usize): usize { failedAt = i; return 0; }

function skipWs(i: usize, end: usize): usize {
  while (i < end) {
    const c = load<u8>(i);
    if (c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09) i++; else break;
  }
  return i;
}

function kindAt(i: usize): Kind {
  const c = load<u8>(i);
  if (c == 0x7b) return Kind.Object;
  if (c == 0x5b) return Kind.Array;
  if (c == 0x22) return Kind.String;
  if (c == 0x74 || c == 0x66) return Kind.Bool;
  if (c == 0x6e) return Kind.Null;
  return Kind.Number;
}

function skipString(i: usize, end: usize): usize {
  if (i >= end || load<u8>(i) != 0x22) return fail(i);
  i++;
  while (i < end) {
    const c = load<u8>(i);
    if (c == 0x22) return i + 1;
    i += c == 0x5c ? 2 : 1;
  }
  return fail(i);
}

function skipLiteral(i: usize, end: usize, word: string): usize {
  const n = <usize>word.length;
  if (i + n > end) return fail(i);
  for (let k: usize = 0; k < n; k++) if (load<u8>(i + k) != <u8>word.charCodeAt(<i32>k)) return fail(i);
  return i + n;
}

/**
 * Skips one value of trusted input (the host's JSON.stringify output): containers by bracket
 * depth and strings by their closing quote, without checking the grammar in between. This
 * is what lazy get()/at() spend their time in, so it is kept tight.
 */
function skipValue(i: usize, end: usize): usize {
  if (i >= end) return fail(i);
  const c = load<u8>(i);
  if (c == 0x22) return skipString(i, end);
  if (c != 0x7b && c != 0x5b) return skipScalar(i, end);
  let depth = 0;
  while (i < end) {
    const d = load<u8>(i);
    if (d == 0x22) {
      i++;
      while (i < end) {
        const e = load<u8>(i);
        if (e == 0x22) break;
        i += e == 0x5c ? 2 : 1;
      }
    } else if (d == 0x7b || d == 0x5b) depth++;
    else if (d == 0x7d || d == 0x5d) { if (--depth == 0) return i + 1; }
    i++;
  }
  return fail(i);
}

function skipScalar(i: usize, end: usize): usize {
  const s = i;
  while (i < end) {
    const d = load<u8>(i);
    if (d == 0x2c || d == 0x7d || d == 0x5d || d == 0x20 || d == 0x0a || d == 0x0d || d == 0x09 || d == 0x3a) break;
    i++;
  }
  return i > s ? i : fail(i);
}

/** Skips one value checking the grammar (validate()). */
function checkValue(i: usize, end: usize): usize {
  if (i >= end) return fail(i);
  const c = load<u8>(i);
  if (c == 0x22) return skipString(i, end);
  if (c == 0x7b || c == 0x5b) return checkContainer(i, end);
  if (c == 0x74) return skipLiteral(i, end, "true");
  if (c == 0x66) return skipLiteral(i, end, "false");
  if (c == 0x6e) return skipLiteral(i, end, "null");
  const s = i;
  while (i < end) {
    const d = load<u8>(i);
    if ((d >= 0x30 && d <= 0x39) || d == 0x2d || d == 0x2b || d == 0x2e || d == 0x65 || d == 0x45) i++; else break;
  }
  return i > s ? i : fail(i);
}

/** Skips a container checking its grammar. */
function checkContainer(i: usize, end: usize): usize {
  const isObj = load<u8>(i) == 0x7b;
  const close: u8 = isObj ? 0x7d : 0x5d;
  i = skipWs(i + 1, end);
  if (i < end && load<u8>(i) == close) return i + 1;
  while (i < end) {
    if (isObj) {
      i = skipString(i, end);
      if (i == 0) return 0;
      i = skipWs(i, end);
      if (i >= end || load<u8>(i) != 0x3a) return fail(i);
      i = skipWs(i + 1, end);
    }
    i = checkValue(i, end);
    if (i == 0) return 0;
    i = skipWs(i, end);
    if (i >= end) return fail(i);
    const c = load<u8>(i);
    if (c == close) return i + 1;
    if (c != 0x2c) return fail(i);
    i = skipWs(i + 1, end);
  }
  return fail(i);
}

/** Compares a raw key (quotes included) with an ASCII or UTF-16 key without allocating. */
function keyEquals(ks: usize, ke: usize, key: string): bool {
  const n = <i32>(ke - ks - 2);
  if (n == key.length) {
    let plain = true;
    for (let j = 0; j < n; j++) {
      const b = <u32>load<u8>(ks + 1 + j);
      if (b >= 0x80 || b == 0x5c) { plain = false; break; }
      if (b != <u32>key.charCodeAt(j)) return false;
    }
    if (plain) return true;
  } else if (n < key.length) return false; // escapes/UTF-8 only make the raw form longer
  return decodeString(ks, ke) == key;
}

/** Decodes a raw JSON string (quotes included) into a String. */
function decodeString(s: usize, e: usize): string {
  const a = s + 1;
  const b = e - 1;
  let escaped = false;
  for (let i = a; i < b; i++) if (load<u8>(i) == 0x5c) { escaped = true; break; }
  if (!escaped) return String.UTF8.decodeUnsafe(a, b - a);
  const w = new Writer(<i32>(b - a));
  let k = a;
  while (k < b) {
    const c = load<u8>(k);
    if (c != 0x5c) { w.byte(c); k++; continue; }
    const x = load<u8>(k + 1);
    k += 2;
    if (x == 0x6e) w.byte(0x0a); else if (x == 0x74) w.byte(0x09); else if (x == 0x72) w.byte(0x0d);
    else if (x == 0x62) w.byte(0x08); else if (x == 0x66) w.byte(0x0c);
    else if (x == 0x75) {
      let cp = hex4(k); k += 4;
      if (cp >= 0xd800 && cp < 0xdc00 && k + 6 <= b && load<u8>(k) == 0x5c) {
        const lo = hex4(k + 2);
        if (lo >= 0xdc00 && lo < 0xe000) { cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00); k += 6; }
      }
      w.codePoint(cp);
    } else w.byte(x);
  }
  return w.toString();
}

function hex4(at: usize): u32 {
  let v: u32 = 0;
  for (let j: usize = 0; j < 4; j++) {
    const c = <u32>load<u8>(at + j);
    const d = c >= 0x61 ? c - 0x57 : c >= 0x41 ? c - 0x37 : c - 0x30;
    v = (v << 4) | (d & 0xf);
  }
  return v;
}
