// Host functions a reflector plugin may import, grouped by namespace (ABI v1).
// An import is linked only when a plugin calls the wrapper, and the manifest must list it
// in `hostFunctions`: the host refuses plugins whose imports and manifest disagree.
import { Value, Writer, parse } from "./json";
import { liveCall, objLookup, objTranslateIp } from "./live";

@external("liqo:log", "log")
declare function hostLog(level: i32, ptr: usize, len: i32): void;
@external("liqo:net", "translate_ip")
declare function hostTranslateIp(ptr: usize, len: i32): usize;
@external("liqo:cache", "lookup")
declare function hostLookup(ptr: usize, len: i32): usize;

export enum Level { Debug = 0, Info = 1, Warn = 2, Error = 3 }

export function log(level: Level, message: string): void {
  const buf = String.UTF8.encode(message);
  hostLog(<i32>level, changetype<usize>(buf), buf.byteLength);
}

/** Host answers are length-prefixed bytes the host wrote into our memory (0 = nothing). */
function readAnswer(ptr: usize): string | null {
  if (ptr == 0) return null;
  const len = load<u32>(ptr);
  return String.UTF8.decodeUnsafe(ptr + 4, <usize>len);
}

/**
 * Translates an IP address through the peering's IP translation (the IPAM remapping).
 * The host knows the direction of the current call: forward maps a local address to the
 * one the remote cluster must use, backward maps a remote address to its local view.
 */
export function translateIp(ip: string): string {
  const buf = String.UTF8.encode(ip);
  const out = readAnswer(hostTranslateIp(changetype<usize>(buf), buf.byteLength));
  return out == null ? ip : out;
}

/**
 * translateIp for an address read from the input: when the address is unchanged (always, in
 * a peering without overlapping CIDRs) the result is the input value itself, which is
 * written back by a raw copy. The address's input bytes go to the host as they are: no
 * string is decoded, re-encoded or built on that path.
 */
export function translateIpValue(v: Value): Value {
  if (!v.isString()) return v;
  if (v.handle != 0) {
    const out = objTranslateIp(v.handle);
    return out == 0 ? v : Value.live(out);
  }
  if (v.end != 0) {
    const s = v.start + 1;
    const n = v.end - 1 - s;
    let plain = true;
    for (let i: usize = 0; i < n; i++) if (load<u8>(s + i) == 0x5c) { plain = false; break; }
    if (plain) {
      const out = readAnswer(hostTranslateIp(s, <i32>n));
      return out == null ? v : Value.str(out!);
    }
  }
  const ip = v.str();
  const out = translateIp(ip);
  return out == ip ? v : Value.str(out);
}

/**
 * Read-only look-up in the host's caches. `cluster` is "local" or "remote"; the namespace
 * must be the call's local or remote namespace (or "" for cluster-scoped kinds).
 * Returns a Null value when the object is not cached.
 */
export function lookup(cluster: string, apiVersion: string, kind: string, namespace: string, name: string): Value {
  // Written straight as JSON text: no tree, no second encoding pass.
  const w = new Writer(64 + (cluster.length + apiVersion.length + kind.length + namespace.length + name.length) * 3);
  w.raw("{\"cluster\":"); w.str(cluster);
  w.raw(",\"apiVersion\":"); w.str(apiVersion);
  w.raw(",\"kind\":"); w.str(kind);
  w.raw(",\"namespace\":"); w.str(namespace);
  w.raw(",\"name\":"); w.str(name);
  w.byte(0x7d);
  if (liveCall) return Value.live(objLookup(w.ptr, w.len));
  const ptr = hostLookup(w.ptr, w.len);
  if (ptr == 0) return Value.null();
  const res = parse(ptr + 4, <i32>load<u32>(ptr));
  return res.error.length > 0 ? Value.null() : res.value;
}
