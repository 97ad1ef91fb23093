// Test fixture: claims ABI version 99, which the host must refuse before calling anything else.
import { reflector, Input, Result } from "../assembly";
export { liqo_context, liqo_begin, liqo_alloc, liqo_output_len, liqo_manifest, liqo_forward, liqo_backward } from "../assembly/exports";

export function liqo_abi_version(): i32 { return 99; }


function forward(input: Input): Result { return Result.skip("never called"); }

reflector(`{"abiVersion":99,"name":"wrongabi","version":"0.0.1",
  "resources":[{"group":"","version":"v1","kind":"ConfigMap","direction":"forward"}],"hostFunctions":[]}`, forward);
