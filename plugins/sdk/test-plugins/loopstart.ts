// Test fixture: its start function (AssemblyScript's top-level code) never returns, so merely
// instantiating it hangs the thread that does. The host must read its manifest in a worker it
// can terminate; validation must refuse it in bounded time and leave the main thread free.
import { reflector, Input, Result } from "../assembly";
export * from "../assembly/exports";

function forward(input: Input): Result { return Result.skip("never called"); }

// A counter that stays non-negative, so the optimizer cannot prove the loop ends.
let spins: i32 = 1;
while (spins > 0) spins = (spins + 1) & 0x3fffffff | 1;

reflector(`{"abiVersion":1,"name":"loopstart","version":"0.0.1",
  "resources":[{"group":"networking.k8s.io","version":"v1","kind":"NetworkPolicy","direction":"forward"}],"hostFunctions":[]}`, forward);
