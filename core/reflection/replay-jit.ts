// A recorded live call whose replay keeps answering (instance.ts memoAnswer) is turned into a
// JavaScript predicate: the same checks as the interpreted replay, in a straight line, one
// local per handle and each member read with its key written as a literal. The interpreter
// reads `value[key]` at one site for every key of every object, which the engine cannot cache;
// the generated reads can be. The log itself (its strings: looked-up requests, texts, JSON) is
// passed in and read by index; only integers and JSON.stringify'd keys are written as code.
//
// It must do exactly what instance.ts #replay does: the same answer for every object, and the
// same handle numbering (a value gets the next handle when its code is 4 or more, and an IP
// translation that changed the address hands out the new one).
//
// Given the view trees (views.ts), the replay reads the cached objects themselves instead of
// their projections, so a hit makes no projection at all: a read of a container the projection
// makes is answered from the tree (a leaf is the object's member, a node is there when a leaf
// under it is, anything else is absent). A recorded call that read such a container as a whole
// (its length, keys, text, JSON) gets no raw replay: its replays keep reading projections.
import type { ViewNode } from "./views.ts";

/** The packed kind code of a value, as instance.ts #pack computes it (0 = undefined). */
export function codeOf(v: unknown): number {
  switch (typeof v) {
    case "undefined": return 0;
    case "boolean": return v ? 3 : 2;
    case "number": return 4;
    case "string": return 5;
    case "object": return v === null ? 1 : Array.isArray(v) ? 6 : 7;
    default: return 1;
  }
}

export interface ReplayHelpers {
  /** A member as instance.ts #get sees it: undefined when absent or inherited. */
  member(o: Record<string, unknown>, k: string): unknown;
  /** The i-th member value of a non-array (instance.ts #at). */
  at(o: unknown, i: number): unknown;
  len(o: unknown): number;
  text(o: unknown): string;
  /** The translated address, null when unchanged (instance.ts #translated). */
  translated(o: unknown): string | null;
  /** The translation is the identity: translated() answers null for everything. */
  identity?: boolean;
  /** The looked-up object, null when none. */
  lookup(request: string): unknown;
}

export type Replay = (source: unknown, target: unknown) => boolean;

const decoder = new TextDecoder();

/** The reads over the host's bindings (instance.ts HostBindings): what the live host calls and every replay answer. */
export function replayReaders(b: {
  identityIp?: boolean; translateIp(ip: string): string;
  lookupObject?(requestJson: string): object | null; lookup(requestJson: string): string | Uint8Array | null;
}): ReplayHelpers {
  return {
    identity: b.identityIp === true,
    member: (o, k) => {
      if (o === null || typeof o !== "object") return undefined; // a handle that is no object (a plugin not built with the SDK)
      const v = o[k];
      // Inherited members are not members: constructor, toString, __proto__...
      return v === undefined || typeof v === "function" || (k === "__proto__" && !Object.hasOwn(o, k)) ? undefined : v;
    },
    at: (o, i) => {
      const keys = Object.keys(o as object);
      return i >= 0 && i < keys.length ? (o as Record<string, unknown>)[keys[i]!] : undefined;
    },
    len: (o) => (typeof o === "string" || Array.isArray(o) ? o.length : typeof o === "object" && o !== null ? Object.keys(o).length : 0),
    // String(n) is a finite number's JSON text, without the serializer's set-up.
    text: (o) => (typeof o === "string" ? o : typeof o === "number" && Number.isFinite(o) ? String(o) : JSON.stringify(o)),
    translated: (o) => {
      if (b.identityIp || typeof o !== "string") return null;
      const out = b.translateIp(o);
      return out === o ? null : out;
    },
    lookup: (req) => {
      if (b.lookupObject) return b.lookupObject(req);
      const t = b.lookup(req);
      return t === null ? null : JSON.parse(typeof t === "string" ? t : decoder.decode(t));
    },
  };
}

const OP_GET = 1, OP_AT = 2, OP_LEN = 3, OP_EQ = 4, OP_TEXT = 5, OP_KEY = 6, OP_JSON = 7, OP_IP = 8, OP_LOOKUP = 9, OP_SCALAR = 10;
/** Keys longer than this are read through the log, not written into the code. */
const MAX_LITERAL = 128;

/** Code that is true when a member at `path` under `expr` is defined, read as objects.ts project walks. */
function defined(expr: string, path: readonly string[], tmp: string): string {
  const steps = path.map((seg) => `(${tmp} = ${tmp} !== null && typeof ${tmp} === "object" ? ${tmp}[${JSON.stringify(seg)}] : undefined)`);
  return `(${tmp} = ${expr}, ${steps.join(", ")}, ${tmp} !== undefined)`;
}

/**
 * The predicate for `log` (instance.ts's recording format), or null for an op it does not know.
 * With `views`, the predicate takes the objects themselves (null for a target the plugin is not
 * shown) and reads them through the trees; null also when the log reads a made container whole.
 */
export function generateReplay(log: unknown[], h: ReplayHelpers, views?: { source: ViewNode | null; target: ViewNode | null }): Replay | null {
  const lines: string[] = [];
  let next = 1;
  /** The view node of each handle: a container the projection makes, or null (the object's own value). */
  const nodes: Array<ViewNode | null> = [null];
  /** The kind code of each handle's value (number, string, array, object), checked before it was handed out. */
  const codes: number[] = [0];
  const handOut = (expr: string, code: number, node: ViewNode | null = null) => { if (code >= 4) { lines.push(`const v${next++} = ${expr};`); nodes.push(node); codes.push(code); } };
  lines.push(`if (codeOf(source ?? undefined) !== ${log[0]}) return false;`);
  handOut("source", log[0] as number, views?.source ?? null);
  lines.push(`if (codeOf(target ?? undefined) !== ${log[1]}) return false;`);
  handOut("target", log[1] as number, views?.target ?? null);
  lines.push("let w;");
  for (let i = 2; i < log.length; i += 4) {
    const hv = log[i + 1] as number;
    if (!Number.isInteger(hv) || hv < 0 || hv >= next) return null;
    const v = `v${hv}`;
    const res = log[i + 3];
    const t = `t${i}`;
    const made = nodes[hv];
    if (made) {
      // A container the projection makes (an object, whatever the cached object holds there).
      switch (log[i]) {
        case OP_GET: {
          const k = log[i + 2] as string;
          const kid = made.kids.get(k);
          if (kid === undefined) { if (res !== 0) return null; break; } // absent from the projection
          if (kid === null) { // a leaf: the object's own member
            lines.push(`let ${t} = ${v}[${JSON.stringify(k)}]; if (typeof ${t} === "function") ${t} = undefined;`);
            lines.push(`if (codeOf(${t}) !== ${res}) return false;`);
            handOut(t, res as number);
            break;
          }
          lines.push(`const ${t} = ${v}[${JSON.stringify(k)}];`);
          if (!kid.always) {
            const any = kid.leaves.map((p) => defined(t, p, "w")).join(" || ");
            if (res === 7) lines.push(`if (!(${any})) return false;`);
            else if (res === 0) lines.push(`if (${any}) return false;`);
            else return null;
          } else if (res !== 7) return null;
          // metadata: an object with a name, as the host checks before any call; a replay never throws on anything else.
          else lines.push(`if (${t} === null || typeof ${t} !== "object") return false;`);
          handOut(t, res as number, kid);
          break;
        }
        case OP_EQ: if (res !== 0) return null; break; // an object is never the literal
        case OP_IP: if (res !== null) return null; break; // nor an address
        default: return null; // read whole: its members' order and number are the projection's
      }
      continue;
    }
    switch (log[i]) {
      case OP_GET: {
        const k = log[i + 2] as string;
        const read = k === "__proto__" ? `h.member(${v}, L[${i + 2}])` : k.length > MAX_LITERAL ? `${v}[L[${i + 2}]]` : `${v}[${JSON.stringify(k)}]`;
        lines.push(`let ${t} = ${read}; if (typeof ${t} === "function") ${t} = undefined;`);
        lines.push(`if (codeOf(${t}) !== ${res}) return false;`);
        handOut(t, res as number);
        break;
      }
      case OP_AT: {
        const idx = log[i + 2] as number;
        // An array (known by its handle's kind) has no holes when it comes from JSON: past its end is undefined.
        if (codes[hv] === 6 && Number.isInteger(idx) && idx >= 0) lines.push(`const ${t} = ${v}[${idx}];`);
        else lines.push(`const ${t} = Array.isArray(${v}) ? (${idx} >= 0 && ${idx} < ${v}.length ? ${v}[${idx}] : undefined) : h.at(${v}, ${idx});`);
        lines.push(`if (codeOf(${t}) !== ${res}) return false;`);
        handOut(t, res as number);
        break;
      }
      case OP_LEN: {
        // A string's or an array's length is read in place (the handle's kind is known here).
        const code = codes[hv];
        lines.push(code === 5 || code === 6 ? `if (${v}.length !== ${res}) return false;` : `if (h.len(${v}) !== ${res}) return false;`);
        break;
      }
      case OP_EQ: lines.push(`if ((${v} === L[${i + 2}] ? 1 : 0) !== ${res}) return false;`); break;
      case OP_TEXT: {
        // The text of a number that was an integer is that integer: compared as a number, no string made.
        const text = log[i + 3] as string;
        if (codes[hv] === 4 && /^-?[1-9][0-9]{0,14}$|^0$/.test(text)) lines.push(`if (${v} !== ${text}) return false;`);
        else lines.push(`if (h.text(${v}) !== L[${i + 3}]) return false;`);
        break;
      }
      case OP_KEY: lines.push(`if ((Object.keys(${v})[${log[i + 2]}] ?? "") !== L[${i + 3}]) return false;`); break;
      case OP_JSON: lines.push(`if ((JSON.stringify(${v}) ?? "null") !== L[${i + 3}]) return false;`); break;
      case OP_SCALAR: lines.push(`if (${v} !== L[${i + 3}]) return false;`); break;
      case OP_IP:
        // Under the identity every address is unchanged (null): nothing to check, no call.
        if (h.identity === true) { if (res !== null) return null; break; }
        lines.push(`const ${t} = h.translated(${v}); if (${t} !== L[${i + 3}]) return false;`);
        if (res !== null) handOut(t, 5);
        break;
      case OP_LOOKUP:
        lines.push(`const ${t} = h.lookup(L[${i + 2}]); if ((${t} === null ? 0 : codeOf(${t})) !== ${res}) return false;`);
        handOut(t, res as number);
        break;
      default: return null;
    }
  }
  lines.push("return true;");
  // eslint-disable-next-line no-new-func -- integers and JSON.stringify'd keys only (see the header)
  return new Function("h", "L", "codeOf", `"use strict"; return (source, target) => {\n${lines.join("\n")}\n};`)(h, log, codeOf) as Replay;
}
