// Secrets: verbatim, including service-account token secrets, which offloaded pods mount
// to reach the origin API server. The remote token controller would delete (or refuse) a
// kubernetes.io/service-account-token secret for a service account it does not have, so
// those are reflected as Opaque, keeping the token, ca.crt and namespace keys.
import { reflector, Target, Input, Result, Value, forwardGuards, ptr } from "@liqo-bun/plugin-sdk";
export * from "@liqo-bun/plugin-sdk/exports";

const SA_TOKEN = "kubernetes.io/service-account-token";
// Built once by the start function (kept below the per-call arena), not escaped on every call.
const UID_ANNOTATION = "/metadata/annotations/" + ptr("kubernetes.io/service-account.uid");

const MANIFEST = `{"abiVersion":1,"name":"secrets","version":"1.0.0",
    "resources":[{"group":"","version":"v1","kind":"Secret","direction":"forward","fields":["/type"]}],
    "hostFunctions":[]}`;

function remoteSecret(input: Input): Result {
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  const r = Result.apply();
  if (input.local.get("type").is(SA_TOKEN)) {
    r.set("/type", Value.str("Opaque"));
    // The uid names an object of the origin cluster; the remote one would mistake it for its own.
    r.remove(UID_ANNOTATION);
  }
  return r;
}

reflector(MANIFEST, remoteSecret);
