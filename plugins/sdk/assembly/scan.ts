// Byte scanning over JSON text in plugin memory, for the lazy values of json.ts: skipping
// values (trusted input), checking the grammar (untrusted input), the tape that records where
// every string and container ends, key comparison and string decoding. Positions are
// absolute addresses; a scan never leaves [i, end), and 0 means malformed.
import { Writer } from "./writer";

export enum Kind { Null, Bool, Number, String, Array, Object }

const MAX_DEPTH: i32 = 512;
const depthStack = memory.data(MAX_DEPTH * 4);

/**
 * The tape of [s, end): for each byte that opens a string, object or array, the position
 * just past its end, as a u32 at tape + 4*position (the returned tape is biased by -4*s so
 * positions need no subtraction). 0 when the bytes do not nest properly or nest too deep:
 * readers then fall back to scanning.
 *
 * A byte-at-a-time scan cost ~2.5 ns a byte in the engines we run on, the largest single
 * cost of a call; built with SIMD (ASC_FEATURE_SIMD, `--enable simd`), 16 bytes are
 * classified at once and only the structural ones (quote, backslash, brackets) are
 * visited, through the bits of a mask. Without SIMD the same state machine runs on a mask
 * built byte by byte.
 */
export function buildTape(s: usize, end: usize): usize {
  const table = heap.alloc((end - s) << 2);
  const tape = table - (s << 2);
  const st = new TapeState();
  let block = s;
  if (ASC_FEATURE_SIMD) {
    const quote = i8x16.splat(0x22);
    const slash = i8x16.splat(0x5c);
    const lower = i8x16.splat(0x20);
    // '[' | 0x20 == '{' and ']' | 0x20 == '}': two compares find all four brackets.
    const open = i8x16.splat(0x7b);
    const close = i8x16.splat(0x7d);
    while (block + 16 <= end) {
      const v = v128.load(block);
      const folded = v128.or(v, lower);
      const hits = v128.or(v128.or(i8x16.eq(v, quote), i8x16.eq(v, slash)), v128.or(i8x16.eq(folded, open), i8x16.eq(folded, close)));
      const mask = <u32>i8x16.bitmask(hits);
      if (mask != 0 && !st.visit(block, mask, tape)) return 0;
      block += 16;
    }
  }
  while (block < end) {
    const n = min<usize>(32, end - block);
    let mask: u32 = 0;
    for (let k: usize = 0; k < n; k++) {
      const c = load<u8>(block + k);
      if (c == 0x22 || c == 0x5c || (c | 0x20) == 0x7b || (c | 0x20) == 0x7d) mask |= <u32>1 << <u32>k;
    }
    if (mask != 0 && !st.visit(block, mask, tape)) return 0;
    block += n;
  }
  return st.depth == 0 && !st.inString ? tape : 0;
}

/** The scan state of buildTape, carried from one block's mask to the next. */
class TapeState {
  depth: i32 = 0;
  inString: bool = false;
  stringStart: usize = 0;
  /** A backslash in a string hides the next byte (an escaped quote or backslash). */
  skipTo: usize = 0;

  /** Visits the structural bytes of a block (bit k of mask = byte block + k); false when malformed. */
  @inline visit(block: usize, mask: u32, tape: usize): bool {
    while (mask != 0) {
      const p = block + <usize>ctz<u32>(mask);
      mask &= mask - 1;
      if (p < this.skipTo) continue;
      const c = load<u8>(p);
      if (this.inString) {
        if (c == 0x5c) this.skipTo = p + 2;
        else if (c == 0x22) { store<u32>(tape + (this.stringStart << 2), <u32>(p + 1)); this.inString = false; }
      } else if (c == 0x22) { this.inString = true; this.stringStart = p; }
      else if (c == 0x7b || c == 0x5b) {
        if (this.depth == MAX_DEPTH) return false;
        store<u32>(depthStack + (<usize>this.depth << 2), <u32>p);
        this.depth++;
      } else if (c == 0x7d || c == 0x5d) {
        if (this.depth == 0) return false;
        this.depth--;
        store<u32>(tape + (<usize>load<u32>(depthStack + (<usize>this.depth << 2)) << 2), <u32>(p + 1));
      }
    }
    return true;
  }
}

@inline export function skipTaped(i: usize, end: usize, tape: usize): usize {
  const c = load<u8>(i);
  return c == 0x22 || c == 0x7b || c == 0x5b ? <usize>load<u32>(tape + (i << 2)) : skipScalar(i, end);
}

@inline export function isWs(c: u8): bool { return c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09; }

// --- byte scanning over [i, end); 0 means malformed ---

/** Where the last failed scan stopped (validate() reports it). */
export let failedAt: usize = 0;

@inline function fail(i: usize): usize { failedAt = i; return 0; }

export function skipWs(i: usize, end: usize): usize {
  while (i < end) {
    const c = load<u8>(i);
    if (c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09) i++; else break;
  }
  return i;
}

export function kindAt(i: usize): Kind {
  const c = load<u8>(i);
  if (c == 0x7b) return Kind.Object;
  if (c == 0x5b) return Kind.Array;
  if (c == 0x22) return Kind.String;
  if (c == 0x74 || c == 0x66) return Kind.Bool;
  if (c == 0x6e) return Kind.Null;
  return Kind.Number;
}

export function skipString(i: usize, end: usize): usize {
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
export function skipValue(i: usize, end: usize): usize {
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

export function skipScalar(i: usize, end: usize): usize {
  const s = i;
  while (i < end) {
    const d = load<u8>(i);
    if (d == 0x2c || d == 0x7d || d == 0x5d || d == 0x20 || d == 0x0a || d == 0x0d || d == 0x09 || d == 0x3a) break;
    i++;
  }
  return i > s ? i : fail(i);
}

/** Skips one value checking the grammar (validate()). */
export function checkValue(i: usize, end: usize): usize {
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
export function keyEquals(ks: usize, ke: usize, key: string): bool {
  const n = <i32>(ke - ks - 2);
  const m = key.length;
  const kp = changetype<usize>(key);
  // Most keys compared are not the one looked for: a plain ASCII first byte is the decoded
  // key's first character, so a mismatch there settles it without looking at the rest.
  if (n > 0 && m > 0) {
    const b0 = <u32>load<u8>(ks + 1);
    if (b0 < 0x80 && b0 != 0x5c && b0 != <u32>load<u16>(kp)) return false;
  }
  if (n == m) {
    for (let j = 0; j < n; j++) {
      const b = <u32>load<u8>(ks + 1 + <usize>j);
      if (b >= 0x80 || b == 0x5c) return decodeString(ks, ke) == key; // escapes or UTF-8: compare decoded
      if (b != <u32>load<u16>(kp + (<usize>j << 1))) return false;
    }
    return true;
  }
  if (n < m) return false; // escapes and UTF-8 only make the raw form longer
  // Longer raw form: equal only through escapes or multi-byte characters.
  for (let j = 0; j < n; j++) {
    const b = load<u8>(ks + 1 + <usize>j);
    if (b >= 0x80 || b == 0x5c) return decodeString(ks, ke) == key;
  }
  return false;
}

/** Decodes a raw JSON string (quotes included) into a String. */
export function decodeString(s: usize, e: usize): string {
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
