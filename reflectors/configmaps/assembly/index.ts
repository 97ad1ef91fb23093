// ConfigMaps: verbatim. kube-root-ca.crt is the exception: every cluster's controller
// manages its own, so ours would conflict (offloaded pods get the origin CA from the
// reflected service-account token secret instead).
import { reflector, Target, Input, Result, Value, forwardGuards, ptr } from "@liqo-bun/plugin-sdk";
export * from "@liqo-bun/plugin-sdk/exports";

const MANIFEST = `{"abiVersion":1,"name":"configmaps","version":"1.0.0",
    "resources":[{"group":"","version":"v1","kind":"ConfigMap","direction":"forward","fields":[]}],
    "hostFunctions":[]}`;

function remoteConfigMap(input: Input): Result {
  // Before the guards: the peer always has its own kube-root-ca.crt, which is not a conflict to report.
  if (input.local.get("metadata").get("name").is("kube-root-ca.crt")) {
    return Result.skip("kube-root-ca.crt is managed by each cluster and never reflected");
  }
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  return Result.apply();
}

reflector(MANIFEST, remoteConfigMap);
