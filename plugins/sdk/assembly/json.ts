// A lazy JSON tree for reflector plugins. Parsing the host's payload into a full tree cost
// more than the whole transform in TypeScript (every key and value allocated), so a parsed
// Value is only a slice of the input bytes: get()/at() scan the bytes on demand, strings are
// decoded when read, and an untouched subtree is written back by one memory.copy. Values a
// plugin builds or edits (set/remove/push) become ordinary containers.
// Numbers keep their source text so ports and quantities round-trip exactly.
import { Writer } from "./writer";
import { objGet, objAt, objLen, objEq, objText, objKey, objJson, isFixed, CODE_ABSENT, CODE_NULL, CODE_FALSE, CODE_TRUE, CODE_NUMBER, CODE_STRING, CODE_ARRAY } from "./live";
import { Kind, buildTape, checkValue, decodeString, failedAt, isWs, keyEquals, kindAt, skipScalar, skipString, skipTaped, skipValue, skipWs } from "./scan";
export { Writer } from "./writer";
export { Kind } from "./scan";

export class Value {
  kind: Kind = Kind.Null;
  bool: bool = false;
  /** Raw slice [start, end) of the input, 0/0 for built values and once materialized. */
  start: usize = 0;
  end: usize = 0;
  private decoded: bool = false;
  private textValue: string = "";
  /** Children: of a built container, or of an indexed raw one (then still written by one copy). */
  private itemList: Array<Value> | null = null;
  private keyList: Array<string> | null = null;
  /** Key slices of an indexed raw object, (start << 32 | end): compared in place, never decoded. */
  private rawKeys: Array<u64> | null = null;
  /** The document's tape (see buildTape), biased so the entry for byte i is at tape + 4*i; 0 = none. */
  private tape: usize = 0;
  /** Members of a raw, not yet indexed object handed out by get(): a list through nextFound,
   *  each with its key slice, so a second get() or a change to one of them is not lost. */
  private firstFound: Value | null = null;
  private nextFound: Value | null = null;
  private keyPos: u64 = 0;
  /** The key string this member was last found by (its address; see findRaw). */
  private keyRef: usize = 0;
  /** A live value (see live.ts): the host's handle for it, read through host calls; 0 = not live. */
  handle: i32 = 0;
  /** The key a live member was found by (findLive compares it when the address differs). */
  private liveKey: string = "";

  static null(): Value { return new Value(); }
  static bool(b: bool): Value { const v = new Value(); v.kind = Kind.Bool; v.bool = b; return v; }
  static str(s: string): Value { const v = new Value(); v.kind = Kind.String; v.textValue = s; v.decoded = true; return v; }
  static num(n: i64): Value { const v = new Value(); v.kind = Kind.Number; v.textValue = n.toString(); v.decoded = true; return v; }
  static arr(): Value { const v = new Value(); v.kind = Kind.Array; v.itemList = []; return v; }
  static obj(): Value { const v = new Value(); v.kind = Kind.Object; v.itemList = []; v.keyList = []; return v; }
  static raw(kind: Kind, start: usize, end: usize, tape: usize = 0): Value {
    const v = new Value(); v.kind = kind; v.start = start; v.end = end; v.tape = tape;
    if (kind == Kind.Bool) v.bool = load<u8>(start) == 0x74;
    return v;
  }

  /** A value of the host's live input, from the packed answer of a liqo:obj call. */
  static live(packed: i32): Value {
    const v = new Value();
    const code = packed & 7;
    if (code == CODE_ABSENT || code == CODE_NULL) return v;
    if (code == CODE_FALSE || code == CODE_TRUE) { v.kind = Kind.Bool; v.bool = code == CODE_TRUE; return v; }
    v.kind = code == CODE_NUMBER ? Kind.Number : code == CODE_STRING ? Kind.String : code == CODE_ARRAY ? Kind.Array : Kind.Object;
    v.handle = packed >>> 3;
    return v;
  }

  isNull(): bool { return this.kind == Kind.Null; }
  isObject(): bool { return this.kind == Kind.Object; }
  isArray(): bool { return this.kind == Kind.Array; }
  isString(): bool { return this.kind == Kind.String; }
  @inline private isRaw(): bool { return this.end != 0; }

  /** Member of an object; a Null value when absent or when this is not an object. */
  get(key: string): Value {
    if (this.kind == Kind.Object && this.itemList == null && this.handle != 0) {
      const v = this.findLive(key);
      return v != null ? v : new Value();
    }
    if (this.kind == Kind.Object && this.itemList == null && this.isRaw()) {
      const v = this.findRaw(key);
      return v != null ? v : new Value();
    }
    const i = this.indexOf(key);
    return i >= 0 ? this.itemList![i] : new Value();
  }

  /**
   * A member of a raw object, without indexing it: the members before it are skipped (by
   * tape jumps when the document has one, else by scanning), and only the one found is
   * allocated, then remembered.
   */
  private findRaw(key: string): Value | null {
    const keyRef = changetype<usize>(key);
    for (let f: Value | null = this.firstFound; f != null; f = f!.nextFound) {
      // Plugins look members up by string literals, which are static: the same literal is the
      // same pointer, so a repeated look-up is recognized without comparing bytes.
      if (f.keyRef == keyRef) return f;
      const k = f.keyPos;
      if (keyEquals(<usize>(k >>> 32), <usize>(k & 0xffffffff), key)) { f.keyRef = keyRef; return f; }
    }
    const end = this.end;
    const tape = this.tape;
    let i = skipWs(this.start + 1, end);
    while (i < end && load<u8>(i) == 0x22) {
      const ke = tape != 0 ? <usize>load<u32>(tape + (i << 2)) : skipString(i, end);
      if (ke <= i || ke > end) return null;
      const vs = skipWs(skipWs(ke, end) + 1, end);
      if (keyEquals(i, ke, key)) {
        const ve = tape != 0 ? skipTaped(vs, end, tape) : skipValue(vs, end);
        if (ve <= vs || ve > end) return null;
        const v = Value.raw(kindAt(vs), vs, ve, tape);
        v.keyPos = (<u64>i << 32) | <u64>ke;
        v.keyRef = keyRef;
        v.nextFound = this.firstFound;
        this.firstFound = v;
        return v;
      }
      const ve = tape != 0 ? skipTaped(vs, end, tape) : skipValue(vs, end);
      if (ve <= vs || ve > end) return null;
      i = skipWs(ve, end);
      if (load<u8>(i) == 0x2c) i = skipWs(i + 1, end);
    }
    return null;
  }

  /** A member of a live object, asked of the host once and then remembered (like findRaw). */
  private findLive(key: string): Value | null {
    const keyRef = changetype<usize>(key);
    for (let f: Value | null = this.firstFound; f != null; f = f!.nextFound) {
      if (f.keyRef == keyRef || f.liveKey == key) { f.keyRef = keyRef; return f; }
    }
    const packed = objGet(this.handle, keyRef, isFixed(key));
    if (packed == CODE_ABSENT) return null;
    const v = Value.live(packed);
    v.keyRef = keyRef;
    v.liveKey = key;
    v.nextFound = this.firstFound;
    this.firstFound = v;
    return v;
  }

  /** Lists the members of a live container (keys decoded: a live object is small and read by key). */
  private indexLive(): void {
    const h = this.handle;
    const n = objLen(h);
    const isObj = this.kind == Kind.Object;
    const items = new Array<Value>(n);
    const keys = new Array<string>(isObj ? n : 0);
    for (let i = 0; i < n; i++) {
      if (!isObj) { unchecked(items[i] = Value.live(objAt(h, i))); continue; }
      const key = answerText(objKey(h, i));
      let child: Value | null = null;
      for (let f: Value | null = this.firstFound; f != null; f = f!.nextFound) if (f.liveKey == key) { child = f; break; }
      unchecked(items[i] = child != null ? child : Value.live(objAt(h, i)));
      unchecked(keys[i] = key);
    }
    this.itemList = items;
    if (isObj) this.keyList = keys;
  }

  /**
   * Position of a member, -1 when absent. A raw object is indexed on first use, in one pass
   * (children as raw slices, keys as byte ranges): later look-ups compare keys in place and
   * return the same child, so a subtree read twice is scanned once.
   */
  private indexOf(key: string): i32 {
    if (this.kind != Kind.Object) return -1;
    this.index();
    const raw = this.rawKeys;
    if (raw != null) {
      for (let i = 0, n = raw.length; i < n; i++) {
        const k = unchecked(raw[i]);
        if (keyEquals(<usize>(k >>> 32), <usize>(k & 0xffffffff), key)) return i;
      }
      return -1;
    }
    const keys = this.keyList!;
    for (let i = 0, n = keys.length; i < n; i++) if (unchecked(keys[i]) == key) return i;
    return -1;
  }

  /** True when the member exists, even with a null value. */
  has(key: string): bool {
    if (this.kind == Kind.Object && this.itemList == null) {
      if (this.handle != 0) return this.findLive(key) != null;
      if (this.isRaw()) return this.findRaw(key) != null;
    }
    return this.indexOf(key) >= 0;
  }
  /** Follows a dotted path of object keys: path("metadata.labels"). */
  path(dotted: string): Value {
    const parts = dotted.split(".");
    let cur: Value = this;
    for (let i = 0; i < parts.length; i++) cur = cur.get(parts[i]);
    return cur;
  }
  /** Sets a member of an object; on any other kind it does nothing (input can have any shape). */
  set(key: string, value: Value): Value {
    if (this.kind != Kind.Object) return this;
    this.materialize();
    const keys = this.keyList!;
    const i = keys.indexOf(key);
    if (i >= 0) this.itemList![i] = value;
    else { keys.push(key); this.itemList!.push(value); }
    return this;
  }
  remove(key: string): Value {
    if (this.kind != Kind.Object) return this;
    this.materialize();
    const i = this.keyList!.indexOf(key);
    if (i >= 0) { this.keyList!.splice(i, 1); this.itemList!.splice(i, 1); }
    return this;
  }
  push(value: Value): Value {
    if (this.kind != Kind.Array) return this;
    this.materialize();
    this.itemList!.push(value);
    return this;
  }
  at(i: i32): Value {
    if (this.kind != Kind.Array) return new Value();
    this.index();
    const items = this.itemList!;
    return i >= 0 && i < items.length ? items[i] : new Value();
  }
  get length(): i32 {
    if (this.kind != Kind.Array && this.kind != Kind.Object) return 0;
    if (this.itemList == null && this.handle != 0) return objLen(this.handle);
    this.index();
    return this.itemList!.length;
  }

  /** True when this is the string `s`; a string read from the input is compared in place, not decoded. */
  is(s: string): bool {
    if (this.kind != Kind.String) return false;
    if (this.handle != 0) return objEq(this.handle, changetype<usize>(s), isFixed(s)) != 0;
    return this.end != 0 ? keyEquals(this.start, this.end, s) : this.textValue == s;
  }
  /** A non-empty string, checked without decoding it. */
  hasText(): bool {
    if (this.kind != Kind.String) return false;
    if (this.handle != 0) return objLen(this.handle) > 0;
    return this.end != 0 ? this.end - this.start > 2 : this.textValue.length > 0;
  }
  /** String content, or "" for any other kind: plugins read fields without crashing on odd input. */
  str(): string { return this.kind == Kind.String ? this.text() : ""; }
  int(): i64 { return this.kind == Kind.Number ? I64.parseInt(this.text()) : 0; }
  isTrue(): bool { return this.kind == Kind.Bool && this.bool; }
  private text(): string {
    if (!this.decoded && this.handle != 0) {
      this.textValue = answerText(objText(this.handle));
      this.decoded = true;
    }
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
    v.start = this.start; v.end = this.end; v.handle = this.handle;
    if (this.itemList != null) v.itemList = this.itemList!.slice(0);
    if (this.keyList != null) v.keyList = this.keyList!.slice(0);
    return v;
  }

  /** Indexes every container and decodes every scalar below this value: reading it afterwards allocates nothing. */
  prepareAll(): void {
    if (this.kind == Kind.String || this.kind == Kind.Number) { this.text(); return; }
    if (this.kind != Kind.Array && this.kind != Kind.Object) return;
    this.index();
    const items = this.itemList!;
    for (let i = 0; i < items.length; i++) items[i].prepareAll();
  }

  /** Lists the children of a raw container as raw slices; the container stays raw. */
  private index(): void {
    if (this.itemList != null) return;
    if (this.handle != 0) { this.indexLive(); return; }
    if (!this.isRaw()) return;
    const isObj = this.kind == Kind.Object;
    const tape = this.tape;
    // With a tape, a first pass counts the members (jumps only) so the lists are allocated
    // once at their size: growing them by doubling cost more than the jumps.
    const n = tape != 0 ? this.members(isObj, tape) : 0;
    const items = new Array<Value>(n);
    const keys = new Array<u64>(isObj ? n : 0);
    let k = 0;
    const end = this.end;
    let i = skipWs(this.start + 1, end);
    const close: u8 = isObj ? 0x7d : 0x5d;
    while (i < end && load<u8>(i) != close) {
      let key: u64 = 0;
      if (isObj) {
        const ke = tape != 0 && load<u8>(i) == 0x22 ? <usize>load<u32>(tape + (i << 2)) : skipString(i, end);
        if (ke <= i || ke > end) break; // 0 (malformed) or a tape entry that does not fit: stop here
        key = (<u64>i << 32) | <u64>ke;
        i = skipWs(skipWs(ke, end) + 1, end);
      }
      const ve = tape != 0 ? skipTaped(i, end, tape) : skipValue(i, end);
      if (ve <= i || ve > end) break;
      const known = isObj && this.firstFound != null ? this.foundAt(key) : null;
      const child = known != null ? known : Value.raw(kindAt(i), i, ve, tape);
      if (k < n) { unchecked(items[k] = child); if (isObj) unchecked(keys[k] = key); }
      else { items.push(child); if (isObj) keys.push(key); }
      k++;
      i = skipWs(ve, end);
      if (load<u8>(i) == 0x2c) i = skipWs(i + 1, end);
    }
    if (k < n) { items.length = k; if (isObj) keys.length = k; } // malformed input stopped early
    this.itemList = items;
    if (isObj) this.rawKeys = keys;
  }

  /** A member get() already handed out, by its key slice (index() keeps it: it may have been changed since). */
  private foundAt(key: u64): Value | null {
    for (let f: Value | null = this.firstFound; f != null; f = f!.nextFound) if (f.keyPos == key) return f;
    return null;
  }

  /** Number of members of a raw container, by tape jumps (no allocation). */
  private members(isObj: bool, tape: usize): i32 {
    const end = this.end;
    const close: u8 = isObj ? 0x7d : 0x5d;
    let i = skipWs(this.start + 1, end);
    let n = 0;
    while (i < end && load<u8>(i) != close) {
      if (isObj) {
        if (load<u8>(i) != 0x22) return n;
        const ke = <usize>load<u32>(tape + (i << 2));
        if (ke <= i || ke > end) return n;
        i = skipWs(skipWs(ke, end) + 1, end);
      }
      const ve = skipTaped(i, end, tape);
      if (ve <= i || ve > end) return n;
      n++;
      i = skipWs(ve, end);
      if (load<u8>(i) == 0x2c) i = skipWs(i + 1, end);
    }
    return n;
  }

  /** Turns a raw container into a built one (its children stay raw slices), before a change. */
  private materialize(): void {
    if (this.kind != Kind.Array && this.kind != Kind.Object) return;
    if (!this.isRaw() && this.handle == 0) return;
    this.index();
    const raw = this.rawKeys;
    if (raw != null) {
      const keys = new Array<string>(raw.length);
      for (let i = 0; i < raw.length; i++) keys[i] = decodeString(<usize>(raw[i] >>> 32), <usize>(raw[i] & 0xffffffff));
      this.keyList = keys;
      this.rawKeys = null;
    }
    this.start = 0; this.end = 0; this.handle = 0;
  }

  /** A raw value none of whose indexed descendants was changed: its input bytes are its text. */
  private clean(): bool {
    if (!this.isRaw() && this.handle == 0) return false;
    const items = this.itemList;
    if (items == null) {
      for (let f: Value | null = this.firstFound; f != null; f = f!.nextFound) if (!f.clean()) return false;
      return true;
    }
    for (let i = 0, n = items.length; i < n; i++) if (!unchecked(items[i]).clean()) return false;
    return true;
  }

  write(w: Writer): void {
    if (this.handle != 0) {
      if (this.clean()) { const p = objJson(this.handle); w.bytes(p + 4, <i32>load<u32>(p)); return; }
      this.index(); // a member was changed: write member by member
    } else if (this.isRaw()) {
      if (this.clean()) { w.bytes(this.start, <i32>(this.end - this.start)); return; }
      this.index(); // a member was changed: write member by member (index() keeps the changed ones)
    }
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
        const raw = this.rawKeys;
        w.byte(0x7b);
        for (let i = 0; i < items.length; i++) {
          if (i > 0) w.byte(0x2c);
          if (raw != null) { const k = raw[i]; const ks = <usize>(k >>> 32); w.bytes(ks, <i32>(<usize>(k & 0xffffffff) - ks)); }
          else w.str(this.keyList![i]);
          w.byte(0x3a); items[i].write(w);
        }
        w.byte(0x7d);
      }
    }
  }
  toString(): string { const w = new Writer(256); this.write(w); return w.toString(); }
}

/** A host answer: length-prefixed UTF-8 in our memory. */
function answerText(ptr: usize): string { return String.UTF8.decodeUnsafe(ptr + 4, <usize>load<u32>(ptr)); }

/** Parse failure: the position lets a plugin author find the bad byte in the input. */
export class ParseResult {
  value: Value = new Value();
  error: string = "";
}

/**
 * Wraps a document in a lazy root value. The host's payload comes from JSON.stringify, so
 * it is not re-validated here (that scan alone cost as much as a transform); every later scan
 * stays within [ptr, ptr+len) whatever the bytes are. Use validate() for untrusted text.
 * One pass first records where every string and container ends (the tape), so that reading
 * a member n levels deep costs no rescans of the levels above it.
 */
export function parse(ptr: usize, len: i32): ParseResult {
  const out = new ParseResult();
  let end = ptr + <usize>len;
  const s = skipWs(ptr, end);
  while (end > s && isWs(load<u8>(end - 1))) end--;
  if (s >= end) { out.error = "empty document"; return out; }
  out.value = Value.raw(kindAt(s), s, end, buildTape(s, end));
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

/** Parses text a plugin got elsewhere (a look-up answer): validated first, since not from JSON.stringify. */
export function parseString(s: string): ParseResult {
  const buf = String.UTF8.encode(s);
  const err = validate(changetype<usize>(buf), buf.byteLength);
  if (err.length > 0) { const r = new ParseResult(); r.error = err; return r; }
  return parse(changetype<usize>(buf), buf.byteLength);
}
