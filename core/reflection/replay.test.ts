// The decision memo (memo.ts), on the engine's path (built-ins over the live wire): a call equal
// to an earlier one in everything the plugin is shown gets the earlier answer, finished against
// its own objects. It must answer exactly what running the plugin answers. Differential: every
// built-in, its sample and a few hundred variants of it, each asked twice, against the same
// plugin with the memo off.
import { afterAll, describe, expect, test } from "bun:test";
import { ensureBuilt } from "../../reflectors/build.ts";
import { loadBuiltin, type BuiltinName } from "../../reflectors/index.ts";
import * as s from "../../reflectors/samples.ts";
import type { KubeObject, ReflectionContext } from "./abi.ts";
import type { ReflectorPlugin } from "./host.ts";

await ensureBuilt(["pods", "services", "endpointslices", "ingresses", "storage", "configmaps", "secrets"]);

const ctx: ReflectionContext = { ...s.ctx, remoteRestarts: 2 };
const lookup = (req: { kind: string; name: string }) =>
  req.kind === "ServiceAccount" && req.name === "builder" ? s.serviceAccount : null;
const open: ReflectorPlugin[] = [];
afterAll(async () => {
  for (const p of open) await p.close();
});
const remap = (ip: string) => ip.replace(/^10\.250\./, "10.99.");
const load = async (name: BuiltinName, memo: boolean, identity = false) => {
  // The identity translation (no network fabric) is the host's own: the plugin's address reads answer "unchanged".
  const p = await loadBuiltin(name, {
    lookup,
    ...(identity ? {} : { translateIp: remap }),
    memoEntries: memo ? 8192 : 0,
  });
  open.push(p);
  return p;
};

// Deterministic variants: the same ones every run, so a failure can be replayed.
let seed = 11;
const rand = (n: number) => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return (seed >>> 16) % n;
};
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));
/** Changes every plugin reads one way or another: the guards' annotations and labels, the name. */
const targeted: Array<(o: KubeObject) => void> = [
  (o) => {
    o.metadata!.annotations = {
      ...o.metadata!.annotations,
      "liqo.io/skip-reflection": ["true", "false", ""][rand(3)]!,
    };
  },
  (o) => {
    o.metadata!.annotations = {
      ...o.metadata!.annotations,
      "liqo.io/force-remote-node-port": ["true", "false"][rand(2)]!,
    };
  },
  (o) => {
    delete o.metadata!.annotations;
  },
  (o) => {
    o.metadata!.labels = { ...o.metadata!.labels, "liqo.io/managed-by": "reflection" };
  },
  (o) => {
    o.metadata!.name = ["kube-root-ca.crt", "other", "x".repeat(300)][rand(3)]!;
  },
  (o) => {
    otherAddress(o);
  },
];

/** Every IPv4 address in the object replaced by another of the same length (its last digit changed). */
function otherAddress(o: unknown): void {
  if (o === null || typeof o !== "object") return;
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === "string" && /^\d+\.\d+\.\d+\.\d+$/.test(v))
      (o as Record<string, unknown>)[k] = v.slice(0, -1) + String((Number(v.at(-1)) + 1 + rand(8)) % 10);
    else otherAddress(v);
  }
}

/** One change somewhere in the object: a value replaced, a member dropped or added, an element dropped. */
function mutate(obj: KubeObject): KubeObject {
  const out = clone(obj) as Record<string, unknown>;
  const m = out.metadata;
  if (rand(3) === 0 && m !== null && typeof m === "object" && !Array.isArray(m)) {
    targeted[rand(targeted.length)]!(out as KubeObject);
    return out as KubeObject;
  }
  let cur: Record<string, unknown> | unknown[] = out;
  for (let depth = 0; depth < 6; depth++) {
    const keys = Object.keys(cur);
    if (keys.length === 0) break;
    const k = keys[rand(keys.length)]!;
    const v = (cur as Record<string, unknown>)[k];
    const stop = rand(3) === 0 || v === null || typeof v !== "object";
    if (!stop) {
      cur = v as Record<string, unknown>;
      continue;
    }
    const choice = rand(5);
    if (Array.isArray(cur)) {
      if (choice < 2) cur.splice(Number(k), 1);
      else cur[Number(k)] = typeof v === "string" ? `${v}x` : 7;
    } else if (choice === 0) delete cur[k];
    else if (choice === 1) cur[`${k}-extra`] = "added";
    else if (choice === 2) cur[k] = typeof v === "number" ? v + 1 : typeof v === "string" ? `${v}-changed` : "text";
    else if (choice === 3) cur[k] = "true";
    else cur[k] = v === null || typeof v !== "object" ? { nested: v ?? null } : [];
    break;
  }
  return out as KubeObject;
}

const cases: Array<[BuiltinName, "forward" | "backward", KubeObject, KubeObject | null]> = [
  ["pods", "forward", s.pod, null],
  ["pods", "backward", s.remotePod, s.pod],
  ["services", "forward", s.service, null],
  ["endpointslices", "forward", s.endpointSlice, null],
  ["ingresses", "forward", s.ingress, null],
  ["storage", "forward", s.pvc, null],
  ["configmaps", "forward", s.configMap, null],
  ["secrets", "forward", s.saSecret, null],
];

const answer = (p: ReflectorPlugin, dir: "forward" | "backward", src: KubeObject, tgt: KubeObject | null): unknown => {
  try {
    return dir === "forward" ? p.forwardSync(src, tgt, ctx) : p.backwardSync(src, tgt, ctx);
  } catch (err) {
    return { error: (err as Error).message };
  }
};

describe("decision memo: a remembered answer is what the plugin answers", () => {
  const runs = [
    ...cases.map((c) => [...c, false] as const),
    ...cases
      .filter(([n, d]) => (n === "pods" && d === "backward") || n === "endpointslices")
      .map((c) => [...c, true] as const),
  ];
  for (const [name, dir, sample, target, identity] of runs) {
    test(`${name} ${dir}${identity ? " (identity translation)" : ""}: 300 variants, each asked twice`, async () => {
      const memo = await load(name, true, identity);
      const plain = await load(name, false, identity);
      // Changes the plugin is not shown (a new resourceVersion): answered by the memo.
      for (let i = 0; i < 20; i++) {
        const obj = { ...sample, metadata: { ...sample.metadata, resourceVersion: `rv-${i}` } };
        expect(answer(memo, dir, obj, target)).toEqual(answer(plain, dir, obj, target));
      }
      const warm = memo.stats().memoHits;
      expect(warm).toBeGreaterThanOrEqual(19);
      let variants = 0;
      for (let i = 0; i < 300; i++) {
        // Alternate changed objects with the sample: both the recorded calls and new ones keep being hit.
        const obj = i % 3 === 2 ? sample : mutate(i % 2 === 0 ? sample : mutate(sample));
        const ownedTarget =
          target === null && rand(4) === 0
            ? { ...obj, metadata: { ...obj.metadata, labels: { ...obj.metadata?.labels, ...s.ownedLabels } } }
            : target;
        const want = answer(plain, dir, obj, ownedTarget);
        expect(answer(memo, dir, obj, ownedTarget)).toEqual(want);
        expect(answer(memo, dir, obj, ownedTarget)).toEqual(want); // asked again: from the memo
        variants++;
      }
      expect(variants).toBe(300);
      // Both ways were taken: some variants ran the plugin, many were answered by the memo.
      expect(memo.stats().memoHits).toBeGreaterThan(warm + 50);
      expect(memo.stats().calls).toBeGreaterThanOrEqual(3);
      // Odd objects are their own problem: neither handle was quarantined by any variant.
      expect([memo.state, plain.state]).toEqual(["ready", "ready"]);
    });
  }
});
