// Where one wasm reflector call spends its time, stage by stage, with the same pieces the host
// uses (core/reflection): the input projection and its JSON, the call into the instance (bulk
// copy in, the plugin's own work including host functions, the answer read out), the host's
// checks and edits, and the JSON body the engine sends. Printed by reflector-calls.ts.
import type { KubeObject, ReflectionContext } from "../../core/reflection/abi.ts";
import { finishAnswer, isOwnedBy, parseAnswer, type CallFacts } from "../../core/reflection/finish.ts";
import { InstanceRunner } from "../../core/reflection/instance.ts";
import { readManifest } from "../../core/reflection/manifest.ts";
import { project } from "../../core/reflection/objects.ts";
import { builtinWasm, type BuiltinName } from "../../reflectors/index.ts";

interface Case { label: string; plugin: BuiltinName; direction: "forward" | "backward"; source: KubeObject; target: KubeObject | null }
type Lookup = (req: { kind: string; name: string }) => KubeObject | null;

function p50(f: () => unknown, n: number): number {
  for (let i = 0; i < 300; i++) f();
  const t: number[] = new Array(n);
  for (let i = 0; i < n; i++) { const t0 = performance.now(); f(); t[i] = performance.now() - t0; }
  t.sort((a, b) => a - b);
  return t[n >> 1]! * 1000;
}

export async function breakdown(cases: Case[], ctx: ReflectionContext, lookup: Lookup, iterations: number): Promise<void> {
  console.log(`\nbreakdown of the cold wasm path, p50 µs per stage (stages timed separately; they do not add up exactly)`);
  // parse: JSON.parse of the answer (the host parses each distinct answer text once, so runs of
  // equal answers skip it); finish: the checks, the base copy and the edits.
  console.log(`${"case".padEnd(28)} ${"project".padStart(8)} ${"stringify".padStart(9)} ${"wasm call".padStart(9)} ${"parse".padStart(8)} ${"finish".padStart(8)} ${"body".padStart(8)}   in/out bytes`);
  for (const c of cases) {
    let encoded: Uint8Array | undefined;
    const module = await WebAssembly.compile((await builtinWasm(c.plugin)) as Uint8Array<ArrayBuffer>);
    const { manifest, name } = await readManifest(module, c.plugin);
    const resource = manifest.resources.find((r) => r.kind === c.source.kind)!;
    const fields = c.direction === "forward" ? resource.fields : resource.backwardFields;
    const inst = await InstanceRunner.create(module, {
      log() {}, abort() {}, translateIp: (ip) => ip, identityIp: true, // as the host configures the identity translator
      // The host caches a looked-up object's JSON per resourceVersion: encoded once here too.
      lookup: (req) => { const found = lookup(JSON.parse(req)); return found ? (encoded ??= new TextEncoder().encode(JSON.stringify(found))) : null; },
    }, { recycleAfterCalls: Number.MAX_SAFE_INTEGER });
    const fn = c.direction === "forward" ? "liqo_forward" : "liqo_backward";
    const origin = c.direction === "forward" ? ctx.localClusterId : ctx.remoteClusterId;
    const state = c.target === null ? 0 : isOwnedBy(c.target, origin) ? 1 : 2;
    const ctxJson = JSON.stringify(ctx);
    const input = JSON.stringify(project(c.source, fields));
    const out = inst.call(fn, ctxJson, input, null, state);
    const facts: CallFacts = { plugin: name, direction: c.direction, resource, source: c.source, target: c.target, ctx };
    const parsed = parseAnswer(out, facts);
    const decision = finishAnswer(parsed, facts);
    const n = Math.max(1000, iterations);
    const row = [
      p50(() => project(c.source, fields), n),
      p50(() => JSON.stringify(project(c.source, fields)), n),
      p50(() => inst.call(fn, ctxJson, input, null, state), n),
      p50(() => parseAnswer(out, facts), n),
      p50(() => finishAnswer(parsed, facts), n),
      p50(() => JSON.stringify(decision.decision === "apply" ? decision.object : null), n),
    ];
    console.log(`${c.label.padEnd(28)} ${row.map((x) => x.toFixed(2).padStart(8)).join(" ")}   ${input.length}/${out.length}`);
    await inst.close();
  }
}
