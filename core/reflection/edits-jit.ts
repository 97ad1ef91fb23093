// Edit lists the host applies over and over (one parsed answer serves every call that got the
// same answer text, and the memo hands the same one out again) are turned into straight-line
// JavaScript, one function per list. The generic loop in objects.ts applyEdits reads
// `container[segment]` at one site for every path of every list, which the engine cannot
// cache; a generated function has a site per path with a literal key, which it can, and
// measured 2-4x faster on the Service answer (six removals).
//
// The generated code does exactly what the generic loop does, step for step. Only literals
// built by JSON.stringify (strings) or integers from the compiled steps are written into it;
// values and key lists are read from the steps at run time. Paths with a __proto__ segment
// never get here: finish.ts refuses them.
import type { Step } from "./objects.ts";

type Json = Record<string | number, unknown>;

export interface Fresh { has(o: object): boolean; add(o: object): void }
export interface JitHelpers {
  copyOf(x: object): object;
  copyWithout(obj: Json, keys: string[]): Json;
  /** The array tail of a step (set or remove at an index), as the generic loop does it. */
  arrayTail(cur: unknown[], step: Step): void;
}
export type JitEdits = (root: Json, fresh: Fresh) => Json;

const literal = (seg: string | number): string => (typeof seg === "number" ? String(seg) : JSON.stringify(seg));

export function generate(steps: Step[], h: JitHelpers): JitEdits {
  const lines: string[] = [];
  for (let e = 0; e < steps.length; e++) {
    const step = steps[e]!;
    const segs = step.parent;
    const n = segs.length;
    lines.push(`s${e}: { let holder = null; let cur = root; let child;`);
    for (let i = 0; i < n; i++) {
      const seg = literal(segs[i]!);
      lines.push(`child = cur[${seg}];`);
      lines.push(`if (child === null || typeof child !== "object") { ${step.remove ? `break s${e};` : `child = {}; cur[${seg}] = child; fresh.add(child);`} }`);
      // Containers on the way are copied before a change; the last one of a removal only when it is an array.
      const copy = i < n - 1 || !step.remove ? "true" : "Array.isArray(child)";
      // The copy is written out at each site, not called through copyOf: one spread site per
      // path sees one shape, where a shared helper sees every shape and takes the slow path.
      lines.push(`else if (${copy} && !fresh.has(child)) { child = Array.isArray(child) ? child.slice() : { ...child }; cur[${seg}] = child; fresh.add(child); }`);
      lines.push(`holder = cur; cur = child;`);
    }
    lines.push(`if (Array.isArray(cur)) h.arrayTail(cur, steps[${e}]);`);
    if (step.remove) {
      const present = step.keys.map((k) => `cur[${literal(k)}] !== undefined`).join(" || ");
      const put = n === 0 ? "root = w;" : `if (holder === null) root = w; else holder[${literal(segs[n - 1]!)}] = w;`;
      const drop = step.keys.map((k) => `delete w[${literal(k)}];`).join(" ");
      lines.push(`else if (${present}) { const w = { ...cur }; ${drop} fresh.add(w); ${put} }`);
    } else {
      lines.push(`else cur[${literal(step.last)}] = steps[${e}].value;`);
    }
    lines.push(`}`);
  }
  lines.push(`return root;`);
  // eslint-disable-next-line no-new-func -- see the header: literals only, from JSON.stringify
  return new Function("h", "steps", `"use strict"; return (root, fresh) => {\n${lines.join("\n")}\n};`)(h, steps) as JitEdits;
}
