// Where one live reflector call spends its time, stage by stage, with the same pieces the host
// uses (core/reflection): the projection of the declared fields, its JSON (the decision memo's
// key), the plugin run over the live wire (reads by handle, the answer out), the answer's
// JSON.parse, the host's checks and edits, and the JSON body the engine sends. Printed by
// reflector-calls.ts.
import type { KubeObject, ReflectionContext } from "../../core/reflection/abi.ts";
import { finishPlan, planOfText, targetState, type CallFacts } from "../../core/reflection/finish.ts";
import { InstanceRunner } from "../../core/reflection/instance.ts";
import { readManifest } from "../../core/reflection/manifest.ts";
import { project } from "../../core/reflection/objects.ts";
import { builtinWasm, type BuiltinName } from "../../reflectors/index.ts";

interface Case {
  label: string;
  plugin: BuiltinName;
  direction: "forward" | "backward";
  source: KubeObject;
  target: KubeObject | null;
}
type Lookup = (req: { kind: string; name: string }) => KubeObject | null;

function p50(f: () => unknown, n: number): number {
  for (let i = 0; i < 300; i++) f();
  const t: number[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    f();
    t[i] = performance.now() - t0;
  }
  t.sort((a, b) => a - b);
  return t[n >> 1]! * 1000;
}

export async function breakdown(
  cases: Case[],
  ctx: ReflectionContext,
  lookup: Lookup,
  iterations: number,
): Promise<void> {
  console.log(`\nbreakdown of a live call, p50 µs per stage (stages timed separately; they do not add up exactly)`);
  // json: the projection's JSON (the memo's key); run: the plugin over the live wire;
  // parse: JSON.parse of the answer; finish: checks, base copy, edits.
  console.log(
    `${"case".padEnd(28)} ${"project".padStart(8)} ${"json".padStart(8)} ${"run".padStart(8)} ${"parse".padStart(8)} ${"finish".padStart(8)} ${"body".padStart(8)}   answer bytes`,
  );
  for (const c of cases) {
    const module = await WebAssembly.compile((await builtinWasm(c.plugin)) as Uint8Array<ArrayBuffer>);
    const { manifest, name } = await readManifest(module, c.plugin);
    const resource = manifest.resources.find((r) => r.kind === c.source.kind)!;
    const fields = c.direction === "forward" ? resource.fields : resource.backwardFields;
    const bindings = {
      log() {},
      abort() {},
      translateIp: (ip: string) => ip,
      identityIp: true, // as the host configures the identity translator
      lookup: () => null,
      lookupObject: (req: string) => lookup(JSON.parse(req)),
    };
    const runner = await InstanceRunner.create(module, bindings, { recycleAfterCalls: Number.MAX_SAFE_INTEGER });
    const backward = c.direction === "backward";
    const origin = backward ? ctx.remoteClusterId : ctx.localClusterId;
    const state = targetState(c.target, origin);
    const ctxJson = JSON.stringify(ctx);
    const shown = project(c.source, fields);
    const out = runner.callLive(backward, ctxJson, shown, null, state);
    const facts: CallFacts = {
      plugin: name,
      direction: c.direction,
      resource,
      source: c.source,
      target: c.target,
      ctx,
    };
    const plan = planOfText(out);
    const decision = finishPlan(plan, facts);
    const n = Math.max(1000, iterations);
    const row = [
      p50(() => project(c.source, fields), n),
      p50(() => JSON.stringify(shown), n),
      p50(() => runner.callLive(backward, ctxJson, shown, null, state), n),
      p50(() => JSON.parse(out), n),
      p50(() => finishPlan(plan, facts), n),
      p50(() => JSON.stringify(decision.decision === "apply" ? decision.object : null), n),
    ];
    console.log(`${c.label.padEnd(28)} ${row.map((x) => x.toFixed(2).padStart(8)).join(" ")}   ${out.length} B`);
    await runner.close();
  }
}
