// Live inputs: on the host's main thread the objects of a call stay JavaScript objects and
// the plugin reads them through these host calls, by handle, instead of receiving their JSON.
// No byte of an object the plugin does not read is serialized, copied or scanned; what it
// reads costs one host call per step (a member, an element, a comparison).
//
// A handle names one value of the call in progress (0 = none); handles die when the call
// returns. Every answer about a value packs its handle and kind: (handle << 3) | code.
// Strings the plugin passes (member keys, literals to compare) are its own UTF-16 strings,
// passed by address; `fixed` tells the host the string is a literal of the data segment, whose
// text never changes at that address, so the host decodes it once.

@external("liqo:obj", "get")
export declare function objGet(handle: i32, key: usize, fixed: i32): i32;
@external("liqo:obj", "at")
export declare function objAt(handle: i32, index: i32): i32;
@external("liqo:obj", "len")
export declare function objLen(handle: i32): i32;
@external("liqo:obj", "eq")
export declare function objEq(handle: i32, s: usize, fixed: i32): i32;
/** Length-prefixed UTF-8 in plugin memory: a string's content, a number's JSON text. */
@external("liqo:obj", "text")
export declare function objText(handle: i32): usize;
/** Length-prefixed UTF-8 in plugin memory: the i-th member key of an object. */
@external("liqo:obj", "key")
export declare function objKey(handle: i32, index: i32): usize;
/** Length-prefixed UTF-8 in plugin memory: the value's JSON. */
@external("liqo:obj", "json")
export declare function objJson(handle: i32): usize;
/** translateIp of a live string: 0 when unchanged, else the packed translated string. */
@external("liqo:net", "translate_ip_value")
export declare function objTranslateIp(handle: i32): i32;
/** lookup answering with a live value: 0 when not found, else the packed object. */
@external("liqo:cache", "lookup_value")
export declare function objLookup(request: usize, len: i32): i32;

/** Codes of the packed answers; 0 is "no such member or element". */
export const CODE_ABSENT: i32 = 0;
export const CODE_NULL: i32 = 1;
export const CODE_FALSE: i32 = 2;
export const CODE_TRUE: i32 = 3;
export const CODE_NUMBER: i32 = 4;
export const CODE_STRING: i32 = 5;
export const CODE_ARRAY: i32 = 6;
export const CODE_OBJECT: i32 = 7;

/** True for a string literal of the plugin (the data segment lies below the heap). */
// @ts-ignore: decorator
@inline export function isFixed(s: string): i32 { return changetype<usize>(s) < __heap_base ? 1 : 0; }

/** Whether the call in progress is live (host functions answer with handles then). */
export let liveCall: bool = false;
export function setLive(on: bool): void { liveCall = on; }
