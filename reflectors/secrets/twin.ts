import { baseRemote } from "../../core/reflection/objects.ts";
import { forwardGuards, without, type Twin } from "../twin-helpers.ts";

export const remoteSecret: Twin = (local, remote, ctx) => {
  const guard = forwardGuards(local, remote, ctx);
  if (guard) return guard;
  const out = baseRemote(local!, ctx);
  if (local!.type === "kubernetes.io/service-account-token") {
    out.type = "Opaque";
    out.metadata!.annotations = without(out.metadata!.annotations, ["kubernetes.io/service-account.uid"]);
  }
  return { decision: "apply", reason: "", object: out };
};
