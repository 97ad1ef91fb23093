// Edit lists the host applies over and over (one parsed answer serves every call that got the
// same answer text, and the memo hands the same one out again) are turned into straight-line
// JavaScript, one function per list. The generic loop in objects.ts applyEdits reads
// `container[segment]` at one site for every path of every list, which the engine cannot
// cache; a generated function has a site per path with a literal key, which it can, and
// measured 2-4x faster on the Service answer (six removals). The same lines finish memo
// answers (finish-jit.ts), after a generated base copy.
//
// The generated code does what the generic loop does, step for step, except that which
// containers are the copy's own is known while the code is written (staticEditLines), not
// tracked at run time. Only literals built by JSON.stringify (strings) or integers from the
// compiled steps are written into it; values and key lists are read from the steps at run time.
// Paths with a __proto__ segment never get here: finish.ts refuses them.
import type { Step } from "./objects.ts";

type Json = Record<string | number, unknown>;

export interface JitHelpers {
  /** The array tail of a step (set or remove at an index), as the generic loop does it. */
  arrayTail(cur: unknown[], step: Step): void;
}
export type JitEdits = (root: Json) => Json;

const literal = (seg: string | number): string => (typeof seg === "number" ? String(seg) : JSON.stringify(seg));

/** The containers of a base copy (objects.ts baseCopy) that are its own: the root, metadata, its labels and annotations. */
export const BASE_COPY_OWN: ReadonlyArray<ReadonlyArray<string>> = [[], ["metadata"], ["metadata", "labels"], ["metadata", "annotations"]];

/** The edits as a function of a base copy, which it changes and returns (a new root when a top-level member is removed). */
export function generate(steps: Step[], h: JitHelpers): JitEdits {
  const lines = staticEditLines(steps, BASE_COPY_OWN);
  lines.push(`return root;`);
  // eslint-disable-next-line no-new-func -- see the header: literals only, from JSON.stringify
  return new Function("h", "steps", `"use strict"; return (base) => {\nlet root = base;\n${lines.join("\n")}\n};`)(h, steps) as JitEdits;
}

type Path = ReadonlyArray<string>;
const within = (p: Path, top: Path) => p.length >= top.length && top.every((s, i) => p[i] === s);

/**
 * The same edits as code that knows, while it is written, which containers are already the
 * copy's own: no Fresh set at run time. `mine` starts as the containers the base copy made (their
 * paths); it means "whatever object is at this path is the copy's own (or there is none)". A set
 * makes its path's containers the copy's own and puts a shared value at its target; a removal
 * can shift an array or replace its container, so what is under its container is copied again if
 * edited later. Copying a container that was already the copy's own is harmless, never copying a
 * shared one is the rule. The code works on a `let root`, reads `steps` and `h` (arrayTail).
 */
export function staticEditLines(steps: Step[], base: ReadonlyArray<Path>): string[] {
  let mine: Path[] = base.slice();
  const isMine = (p: Path) => mine.some((m) => m.length === p.length && within(p, m));
  const forget = (top: Path, self: boolean) => { mine = mine.filter((m) => !within(m, top) || (!self && m.length === top.length)); };
  const lines: string[] = [];
  for (let e = 0; e < steps.length; e++) {
    const step = steps[e]!;
    const segs = step.parent;
    const path = segs.map(String);
    const n = segs.length;
    lines.push(`s${e}: { let holder = null; let cur = root; let child;`);
    for (let i = 0; i < n; i++) {
      const seg = literal(segs[i]!);
      lines.push(`child = cur[${seg}];`);
      lines.push(`if (child === null || typeof child !== "object") { ${step.remove ? `break s${e};` : `child = {}; cur[${seg}] = child;`} }`);
      if (!isMine(path.slice(0, i + 1))) {
        // The last container of a removal is copied here only when it is an array (an object is copied without the members below).
        if (i < n - 1 || !step.remove) lines.push(`else { child = Array.isArray(child) ? child.slice() : { ...child }; cur[${seg}] = child; }`);
        else lines.push(`else if (Array.isArray(child)) { child = child.slice(); cur[${seg}] = child; }`);
      }
      lines.push(`holder = cur; cur = child;`);
    }
    lines.push(`if (Array.isArray(cur)) h.arrayTail(cur, steps[${e}]);`);
    for (let i = 0; i < (step.remove ? n - 1 : n); i++) if (!isMine(path.slice(0, i + 1))) mine.push(path.slice(0, i + 1));
    if (step.remove) {
      const present = step.keys.map((k) => `cur[${literal(k)}] !== undefined`).join(" || ");
      const put = n === 0 ? "root = w;" : `if (holder === null) root = w; else holder[${literal(segs[n - 1]!)}] = w;`;
      const drop = step.keys.map((k) => `delete w[${literal(k)}];`).join(" ");
      lines.push(`else if (${present}) { const w = { ...cur }; ${drop} ${put} }`);
      forget(path, false); // removed members, or an array's shifted elements
    } else {
      lines.push(`else cur[${literal(step.last)}] = steps[${e}].value;`);
      if (step.last === "-") forget(path, false); // appended at a place only known at run time
      else forget([...path, step.last], true); // a value of the answer, shared
    }
    lines.push(`}`);
  }
  return lines;
}
