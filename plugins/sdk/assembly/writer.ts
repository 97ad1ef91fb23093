// Growable UTF-8 output buffer living in plugin memory: the host reads the answer straight
// out of it (liqo_output_len tells how much).

export class Writer {
  ptr: usize;
  len: i32 = 0;
  cap: i32;
  constructor(cap: i32) { this.cap = max(cap, 16); this.ptr = heap.alloc(<usize>this.cap); }

  @inline private room(n: i32): void {
    if (this.len + n > this.cap) this.growTo(this.len + n);
  }
  private growTo(need: i32): void {
    let cap = this.cap << 1;
    while (cap < need) cap <<= 1;
    this.ptr = heap.realloc(this.ptr, <usize>cap);
    this.cap = cap;
  }
  byte(b: u8): void { this.room(1); store<u8>(this.ptr + this.len, b); this.len++; }
  /** Copies raw bytes (an untouched slice of the input) in one go. */
  bytes(src: usize, n: i32): void { this.room(n); memory.copy(this.ptr + this.len, src, <usize>n); this.len += n; }
  /** Writes ASCII text as-is (punctuation, numbers, literals). */
  raw(s: string): void {
    const n = s.length; this.room(n);
    const p = this.ptr + this.len;
    const src = changetype<usize>(s);
    // Read the UTF-16 units directly: charCodeAt's bounds check per character dominated small
    // answers; with SIMD, eight units are narrowed to bytes at once.
    let i = 0;
    if (ASC_FEATURE_SIMD) {
      for (; i + 8 <= n; i += 8) {
        const v = v128.load(src + (<usize>i << 1));
        store<i64>(p + <usize>i, i64x2.extract_lane(i8x16.narrow_i16x8_u(v, v), 0));
      }
    }
    for (; i < n; i++) store<u8>(p + <usize>i, <u8>load<u16>(src + (<usize>i << 1)));
    this.len += n;
  }
  codePoint(cp: u32): void {
    this.room(4);
    let p = this.ptr + this.len;
    if (cp < 0x80) store<u8>(p++, <u8>cp);
    else if (cp < 0x800) { store<u8>(p++, <u8>(0xc0 | (cp >> 6))); store<u8>(p++, <u8>(0x80 | (cp & 0x3f))); }
    else if (cp < 0x10000) {
      store<u8>(p++, <u8>(0xe0 | (cp >> 12))); store<u8>(p++, <u8>(0x80 | ((cp >> 6) & 0x3f))); store<u8>(p++, <u8>(0x80 | (cp & 0x3f)));
    } else {
      store<u8>(p++, <u8>(0xf0 | (cp >> 18))); store<u8>(p++, <u8>(0x80 | ((cp >> 12) & 0x3f)));
      store<u8>(p++, <u8>(0x80 | ((cp >> 6) & 0x3f))); store<u8>(p++, <u8>(0x80 | (cp & 0x3f)));
    }
    this.len = <i32>(p - this.ptr);
  }
  /** Writes a string's UTF-8 bytes without JSON quoting (the manifest text). */
  rawUtf8(s: string): void {
    const buf = String.UTF8.encode(s);
    this.bytes(changetype<usize>(buf), buf.byteLength);
  }
  /** A JSON string literal: quotes, escapes, UTF-16 to UTF-8. */
  str(s: string): void {
    const n = s.length;
    this.room(n * 3 + 2);
    const src = changetype<usize>(s);
    let p = this.ptr + <usize>this.len;
    store<u8>(p++, 0x22);
    // Fast path: plain ASCII (paths, names, IPs) is copied without escaping; with SIMD, eight
    // UTF-16 units are checked and narrowed to bytes at once.
    let i = 0;
    if (ASC_FEATURE_SIMD) {
      const space = i16x8.splat(0x20);
      const del = i16x8.splat(0x7f);
      const quote = i16x8.splat(0x22);
      const slash = i16x8.splat(0x5c);
      for (; i + 8 <= n; i += 8) {
        const v = v128.load(src + (<usize>i << 1));
        const bad = v128.or(v128.or(i16x8.lt_u(v, space), i16x8.gt_u(v, del)), v128.or(i16x8.eq(v, quote), i16x8.eq(v, slash)));
        if (v128.any_true(bad)) break;
        store<i64>(p, i64x2.extract_lane(i8x16.narrow_i16x8_u(v, v), 0));
        p += 8;
      }
    }
    for (; i < n; i++) {
      const c = <u32>load<u16>(src + (<usize>i << 1));
      if (c < 0x20 || c >= 0x80 || c == 0x22 || c == 0x5c) break;
      store<u8>(p++, <u8>c);
    }
    this.len = <i32>(p - this.ptr);
    for (; i < n; i++) {
      let c = <u32>load<u16>(src + (<usize>i << 1));
      if (c >= 0x20 && c < 0x80 && c != 0x22 && c != 0x5c) { store<u8>(this.ptr + this.len, <u8>c); this.len++; continue; }
      if (c < 0x80) { this.escape(c); continue; }
      if (c >= 0xd800 && c < 0xdc00 && i + 1 < n) { // surrogate pair → one 4-byte sequence
        const lo = <u32>load<u16>(src + (<usize>(i + 1) << 1));
        if (lo >= 0xdc00 && lo < 0xe000) { i++; c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00); }
      }
      this.codePoint(c);
    }
    this.byte(0x22);
  }
  private escape(c: u32): void {
    this.room(6);
    const q = this.ptr + this.len;
    store<u8>(q, 0x5c);
    if (c == 0x22 || c == 0x5c) { store<u8>(q + 1, <u8>c); this.len += 2; return; }
    if (c == 0x0a) { store<u8>(q + 1, 0x6e); this.len += 2; return; }
    if (c == 0x0d) { store<u8>(q + 1, 0x72); this.len += 2; return; }
    if (c == 0x09) { store<u8>(q + 1, 0x74); this.len += 2; return; }
    const hex = "0123456789abcdef";
    store<u8>(q + 1, 0x75); store<u8>(q + 2, 0x30); store<u8>(q + 3, 0x30);
    store<u8>(q + 4, <u8>hex.charCodeAt((c >> 4) & 0xf)); store<u8>(q + 5, <u8>hex.charCodeAt(c & 0xf));
    this.len += 6;
  }
  toString(): string { return String.UTF8.decodeUnsafe(this.ptr, <usize>this.len); }
}
