// Test fixture (not a reflector): misbehaves on purpose, chosen by ctx.mode, so the host's
// quarantine paths can be exercised (core/reflection/quarantine.test.ts). Built by
// reflectors/build.ts like every plugin.
import { reflector, Target, Input, Result, Value, forwardGuards } from "../assembly";
export * from "../assembly/exports";


const MANIFEST = `{"abiVersion":1,"name":"misbehave","version":"0.0.1",
    "resources":[{"group":"","version":"v1","kind":"ConfigMap","direction":"forward"}],"hostFunctions":[]}`;


function forward(input: Input): Result {
  const mode = input.ctx.get("mode").str();
  if (mode == "trap") throw new Error("fixture trap");
  if (mode == "loop") { let x: i64 = 1; while (x != 0) { x = x * 3 + 1; } return Result.skip(x.toString()); }
  if (mode == "wrong-namespace") return Result.apply().set("/metadata/namespace", Value.str("kube-system"));
  if (mode == "wrong-cluster") return Result.apply().set("/metadata/labels/liqo.io~1origin-cluster-id", Value.str("someone-else"));
  if (mode == "overwrite") return Result.apply();
  if (mode == "bad-decision") return Result.apply().withObject(Value.str("not an object"));
  const guard = forwardGuards(input);
  return guard != null ? guard : Result.apply();
}

reflector(MANIFEST, forward);
