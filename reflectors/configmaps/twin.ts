import { baseRemote } from "../../core/reflection/objects.ts";
import { forwardGuards, type Twin } from "../twin-helpers.ts";

export const remoteConfigMap: Twin = (local, remote, ctx) => {
  const guard = forwardGuards(local, remote, ctx);
  if (guard) return guard;
  if (local!.metadata?.name === "kube-root-ca.crt") return { decision: "skip", reason: "kube-root-ca.crt is managed by each cluster and never reflected" };
  return { decision: "apply", reason: "", object: baseRemote(local!, ctx) };
};
