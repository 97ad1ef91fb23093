import { baseRemote } from "../../core/reflection/objects.ts";
import { forwardGuards, type Twin } from "../twin-helpers.ts";

export const remoteConfigMap: Twin = (local, remote, ctx) => {
  // Before the guards: the peer always has its own kube-root-ca.crt, which is not a conflict to report.
  if (local?.metadata?.name === "kube-root-ca.crt")
    return { decision: "skip", reason: "kube-root-ca.crt is managed by each cluster and never reflected" };
  const guard = forwardGuards(local, remote, ctx);
  if (guard) return guard;
  return { decision: "apply", reason: "", object: baseRemote(local!, ctx) };
};
