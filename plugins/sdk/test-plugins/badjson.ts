// Test fixture: answers bytes that are not JSON, to exercise invalid-output quarantine.
import { reflector, Input, Result } from "../assembly";
export * from "../assembly/exports";


// The decision string carries a quote that is not escaped, so the answer is not JSON.
function forward(input: Input): Result { return Result.skip("x").withDecision("apply\", !!"); }

reflector(`{"abiVersion":1,"name":"badjson","version":"0.0.1",
  "resources":[{"group":"","version":"v1","kind":"ConfigMap","direction":"forward"}],"hostFunctions":[]}`, forward);
