import { baseRemote } from "../../core/reflection/objects.ts";
import { forwardGuards, without, type Twin } from "../twin-helpers.ts";

type Endpoint = { addresses?: string[]; nodeName?: string; [k: string]: unknown };

export const remoteEndpointSlice: Twin = (local, remote, ctx, translateIp = (ip) => ip) => {
  const guard = forwardGuards(local, remote, ctx);
  if (guard) return guard;
  const out = baseRemote(local!, ctx);
  out.metadata!.labels!["endpointslice.kubernetes.io/managed-by"] = "endpointslice.reflection.liqo.io";
  const endpoints = ((local!.endpoints as Endpoint[] | undefined) ?? [])
    .filter(
      (ep) =>
        ep !== null &&
        typeof ep === "object" &&
        !Array.isArray(ep) &&
        !(ctx.virtualNodeName && ep.nodeName === ctx.virtualNodeName),
    )
    .map((ep) => ({ ...without(ep, ["nodeName", "targetRef"]), addresses: (ep.addresses ?? []).map(translateIp) }));
  return { decision: "apply", reason: "", object: { ...out, endpoints } };
};
