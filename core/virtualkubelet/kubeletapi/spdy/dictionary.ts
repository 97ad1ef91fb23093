// The zlib dictionary SPDY/3 header blocks are compressed with (SPDY protocol draft 3, section
// 2.6.10.1). It is a protocol constant: length-prefixed common header names and values, then a
// run of common status codes, dates and media types. Built from its definition rather than
// spelled out as 1423 bytes; a test pins its Adler-32 against the one peers use.
const words = [
  "options",
  "head",
  "post",
  "put",
  "delete",
  "trace",
  "accept",
  "accept-charset",
  "accept-encoding",
  "accept-language",
  "accept-ranges",
  "age",
  "allow",
  "authorization",
  "cache-control",
  "connection",
  "content-base",
  "content-encoding",
  "content-language",
  "content-length",
  "content-location",
  "content-md5",
  "content-range",
  "content-type",
  "date",
  "etag",
  "expect",
  "expires",
  "from",
  "host",
  "if-match",
  "if-modified-since",
  "if-none-match",
  "if-range",
  "if-unmodified-since",
  "last-modified",
  "location",
  "max-forwards",
  "pragma",
  "proxy-authenticate",
  "proxy-authorization",
  "range",
  "referer",
  "retry-after",
  "server",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "user-agent",
  "vary",
  "via",
  "warning",
  "www-authenticate",
  "method",
  "get",
  "status",
  "200 OK",
  "version",
  "HTTP/1.1",
  "url",
  "public",
  "set-cookie",
  "keep-alive",
  "origin",
];

const tail =
  "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505" +
  "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized" +
  "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable" +
  "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT" +
  "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain," +
  "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";

function build(): Uint8Array {
  const enc = new TextEncoder();
  const parts: number[] = [];
  for (const w of words) {
    const b = enc.encode(w);
    parts.push((b.length >>> 24) & 0xff, (b.length >>> 16) & 0xff, (b.length >>> 8) & 0xff, b.length & 0xff, ...b);
  }
  parts.push(...enc.encode(tail));
  return Uint8Array.from(parts);
}

export const SPDY3_DICTIONARY: Uint8Array = build();
