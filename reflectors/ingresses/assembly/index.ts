// Ingresses: verbatim, except the ingress class, which may not exist in the remote cluster;
// leaving it empty selects the remote default class.
import { reflector, Target, Input, Result, Value, forwardGuards, ptr } from "@liqo-bun/plugin-sdk";
export * from "@liqo-bun/plugin-sdk/exports";

const MANIFEST = `{"abiVersion":1,"name":"ingresses","version":"1.0.0",
    "resources":[{"group":"networking.k8s.io","version":"v1","kind":"Ingress","direction":"forward","fields":[]}],
    "hostFunctions":[]}`;

function remoteIngress(input: Input): Result {
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  return Result.apply().remove("/spec/ingressClassName");
}

reflector(MANIFEST, remoteIngress);
