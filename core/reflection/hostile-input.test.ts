// What a user or a hostile peer can put in an object's field names and values (quotes,
// backslashes, template syntax, line and paragraph separators, __proto__) reaches the plugin
// host as data and leaves it as data: the reflected object carries it verbatim, nothing runs,
// no prototype changes. On every path a call can take: the live wire and the JSON wire, a
// plugin run and a decision-memo answer, a drop-in in its worker. And the host generates no
// code at run time (the hot path was cut down to plain code in issue 22): a change that brings
// generated code back fails here, and must come with a single literal helper and its own tests.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { ensureBuilt } from "../../reflectors/build.ts";
import { builtinWasm, loadBuiltin } from "../../reflectors/index.ts";
import { ctx } from "../../reflectors/samples.ts";
import type { KubeObject } from "./abi.ts";
import { type ReflectorPlugin, loadPlugin } from "./host.ts";

await ensureBuilt(["configmaps", "services", "secrets"]);

/** Names and values that break naive code generation or string building. */
const HOSTILE = [
  '"',
  "'",
  "\\",
  "\\u0022",
  "${globalThis.pwned = 1}",
  '"]; globalThis.pwned = 1; x["',
  "`); globalThis.pwned = 1; (`",
  "a\nb",
  "a\u2028b",
  "a\u2029b",
  "</script>",
  "__proto__",
  "constructor",
  "toString",
];

/**
 * Built as the API server's JSON is read (JSON.parse), so `__proto__` is an own member, as it is
 * in an informer's cache.
 */
function hostile(kind: "ConfigMap" | "Secret" | "Service", name: string): KubeObject {
  const map = Object.fromEntries(HOSTILE.map((h, i) => [h, `${h}|${i}`]));
  const labels = Object.fromEntries(HOSTILE.map((h, i) => [`x.io/${i}`, h.replace(/[^A-Za-z0-9]/g, "") || "v"]));
  const annotations = { ...map };
  const base = {
    apiVersion: "v1",
    kind,
    metadata: { name, namespace: ctx.localNamespace, resourceVersion: "1", labels, annotations },
  };
  const text =
    kind === "Service"
      ? JSON.stringify({ ...base, spec: { selector: map, ports: [{ name: "web", port: 80 }] } })
      : kind === "Secret"
        ? JSON.stringify({
            ...base,
            type: "Opaque",
            data: Object.fromEntries(HOSTILE.map((h) => [h, btoa(h.length > 0 ? "x" : "")])),
          })
        : JSON.stringify({ ...base, data: map });
  return JSON.parse(text);
}

/** The members of a record as [name, value] pairs, own members only (works for __proto__). */
const pairs = (o: unknown) => Object.entries((o ?? {}) as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));

const open: ReflectorPlugin[] = [];
afterAll(async () => {
  for (const p of open) await p.close();
});

const configs: Array<{
  label: string;
  load: (name: "configmaps" | "services" | "secrets") => Promise<ReflectorPlugin>;
}> = [
  { label: "live wire, memo", load: (n) => loadBuiltin(n, { memoEntries: 8192 }) },
  { label: "live wire, no memo", load: (n) => loadBuiltin(n, { memoEntries: 0 }) },
  { label: "JSON wire, memo", load: (n) => loadBuiltin(n, { live: false, memoEntries: 8192 }) },
  { label: "drop-in (worker)", load: async (n) => loadPlugin(await builtinWasm(n), { trust: "dropin" }) },
];

describe("hostile field names and values are data", () => {
  for (const { label, load } of configs) {
    test(`${label}: ConfigMaps, Secrets and Services carry them verbatim, twice (a run, then the memo)`, async () => {
      const cases: Array<["configmaps" | "services" | "secrets", "ConfigMap" | "Secret" | "Service", string]> = [
        ["configmaps", "ConfigMap", "data"],
        ["secrets", "Secret", "data"],
        ["services", "Service", "spec.selector"],
      ];
      for (const [plugin, kind, where] of cases) {
        const p = await load(plugin);
        open.push(p);
        const obj = hostile(kind, `h-${plugin}`);
        for (let round = 0; round < 2; round++) {
          const d = await p.forward(obj, null, ctx);
          expect(d.decision).toBe("apply");
          if (d.decision !== "apply") continue;
          const got = where === "data" ? d.object.data : (d.object.spec as Record<string, unknown>).selector;
          const want = where === "data" ? obj.data : (obj.spec as Record<string, unknown>).selector;
          expect(pairs(got)).toEqual(pairs(want));
          expect(pairs(d.object.metadata?.annotations)).toEqual(pairs(obj.metadata?.annotations));
          for (const [k, v] of pairs(obj.metadata?.labels)) expect(d.object.metadata?.labels?.[k]).toBe(v as string);
          // What the engine sends is the same data, escaped by JSON.stringify and read back equal.
          const body = JSON.parse(JSON.stringify(d.object));
          expect(Object.hasOwn(where === "data" ? body.data : body.spec.selector, "__proto__")).toBe(true);
        }
        expect(p.state).toBe("ready");
        if (label.endsWith(", memo")) expect(p.stats().memoHits).toBeGreaterThanOrEqual(1);
      }
      expect((globalThis as Record<string, unknown>).pwned).toBeUndefined();
      expect(Object.getPrototypeOf({})).toBe(Object.prototype);
      expect(({} as Record<string, unknown>)["|11"]).toBeUndefined();
    });
  }
});

describe("no run-time code generation in the plugin host", () => {
  test("core/reflection builds no functions from strings", () => {
    const dir = import.meta.dir;
    const sources: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const path = join(d, e.name);
        if (e.isDirectory()) walk(path);
        else if (e.name.endsWith(".ts") && !e.name.endsWith(".test.ts")) sources.push(path);
      }
    };
    walk(dir);
    expect(sources.length).toBeGreaterThan(10);
    const found = sources.filter((f) =>
      /\bnew Function\s*\(|\beval\s*\(|\bFunction\s*\(\s*["'`]/.test(readFileSync(f, "utf8")),
    );
    expect(found).toEqual([]);
  });
});
