// Test fixture: exercises the SDK's lazy JSON paths the built-ins do not all reach, chosen by
// ctx.mode (core/reflection/sdk-paths.test.ts): a change deep inside an object that was
// only read (the untouched parts must still be copied byte for byte, the change included),
// keys with escapes and multi-byte characters, and context fields read on every call.
import { reflector, Input, Result, Value, forwardGuards } from "../assembly";
export * from "../assembly/exports";

const MANIFEST = `{"abiVersion":1,"name":"sdkprobe","version":"0.0.1",
    "resources":[{"group":"","version":"v1","kind":"ConfigMap","direction":"forward"}],"hostFunctions":[]}`;

function forward(input: Input): Result {
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  const mode = input.ctx.get("mode").str();
  const local = input.local;
  if (mode == "deep-edit") {
    // Read first (indexes the raw object), then change a grandchild: the whole object is answered.
    const data = local.get("data");
    const keep = data.get("keep").str();
    local.get("metadata").set("namespace", Value.str(input.ctx.remoteNamespace));
    data.set("seen", Value.str(keep + "|" + input.ctx.get("tag").str()));
    return Result.apply().withObject(local);
  }
  if (mode == "keys") {
    const data = local.get("data");
    return Result.apply()
      .set("/data/escaped", data.get("quote\"back\\slash"))
      .set("/data/unicode", data.get("clé-ключ"))
      .set("/data/longer", Value.bool(data.has("k")))
      .set("/data/count", Value.num(<i64>data.length));
  }
  return Result.apply().set("/data/tag", Value.str(input.ctx.get("tag").str()));
}

reflector(MANIFEST, forward);
