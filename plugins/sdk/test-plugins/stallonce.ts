// Test fixture: a call the host's machine stalls, as a loaded node can. It loops while the host's
// lookup finds a ConfigMap named "stall" and answers normally once it does not, so a test decides
// which worker stalls: the first one is cut at the budget, the fresh one answers, and the plugin
// must not be quarantined for it (core/reflection/quarantine.test.ts).
import { reflector, Input, Result, forwardGuards, lookup } from "../assembly";
export * from "../assembly/exports";

function forward(input: Input): Result {
  const stall = lookup("local", "v1", "ConfigMap", input.ctx.get("localNamespace").str(), "stall");
  if (!stall.isNull()) {
    // A counter that stays non-negative, so the optimizer cannot prove the loop ends.
    let spins: i32 = 1;
    while (spins > 0) spins = (spins + 1) & 0x3fffffff | 1;
  }
  const guard = forwardGuards(input);
  return guard != null ? guard : Result.apply();
}

reflector(`{"abiVersion":1,"name":"stallonce","version":"0.0.1",
  "resources":[{"group":"","version":"v1","kind":"ConfigMap","direction":"forward"}],"hostFunctions":["lookup"]}`, forward);
