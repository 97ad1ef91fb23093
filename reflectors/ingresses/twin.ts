import { baseRemote } from "../../core/reflection/objects.ts";
import { forwardGuards, without, type Twin } from "../twin-helpers.ts";

export const remoteIngress: Twin = (local, remote, ctx) => {
  const guard = forwardGuards(local, remote, ctx);
  if (guard) return guard;
  const out = baseRemote(local!, ctx);
  return {
    decision: "apply",
    reason: "",
    object: { ...out, spec: without(local!.spec as Record<string, unknown>, ["ingressClassName"]) },
  };
};
