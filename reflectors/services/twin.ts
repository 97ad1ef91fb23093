import type { KubeObject } from "../../core/reflection/abi.ts";
import { baseRemote } from "../../core/reflection/objects.ts";
import { forwardGuards, without, type Twin } from "../twin-helpers.ts";

export const remoteService: Twin = (local, remote, ctx) => {
  const guard = forwardGuards(local, remote, ctx);
  if (guard) return guard;
  const out = baseRemote(local!, ctx);
  const spec = without(local!.spec as Record<string, unknown>, ["clusterIP", "clusterIPs", "loadBalancerIP"])!;
  if (local!.metadata?.annotations?.["liqo.io/force-remote-node-port"] !== "true") {
    delete spec.healthCheckNodePort;
    if (Array.isArray(spec.ports)) spec.ports = spec.ports.map((p) => without(p, ["nodePort"]));
  }
  return { decision: "apply", reason: "", object: { ...out, spec } as KubeObject };
};
