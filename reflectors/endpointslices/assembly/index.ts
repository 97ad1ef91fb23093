// EndpointSlices: every endpoint the destination does not already have, with addresses
// translated for the destination. Endpoints on the virtual node are pods offloaded to that
// very cluster, whose own control plane already lists them: they are not duplicated.
import { reflector, Target, Input, Result, Value, forwardGuards, ptr } from "../../../plugins/sdk/assembly";
export * from "../../../plugins/sdk/assembly/exports";
import { translateIp, translateIpValue } from "../../../plugins/sdk/assembly";

const MANAGED_BY = "endpointslice.kubernetes.io/managed-by";
const REFLECTION_CONTROLLER = "endpointslice.reflection.liqo.io";
const MANAGED_BY_PATH = "/metadata/labels/" + ptr(MANAGED_BY); // built once by the start function

const MANIFEST = `{"abiVersion":1,"name":"endpointslices","version":"1.0.0",
    "resources":[{"group":"discovery.k8s.io","version":"v1","kind":"EndpointSlice","direction":"forward","fields":["/endpoints"]}],
    "hostFunctions":["translateIp"]}`;

function remoteEndpointSlice(input: Input): Result {
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  const r = Result.apply()
    // The remote endpointslice controller must not adopt (and garbage-collect) our copy.
    .set(MANAGED_BY_PATH, Value.str(REFLECTION_CONTROLLER));
  return r.set("/endpoints", remoteEndpoints(input.local.get("endpoints"), input.ctx.virtualNodeName));
}

function remoteEndpoints(endpoints: Value, virtualNode: string): Value {
  const out = Value.arr();
  for (let i = 0; i < endpoints.length; i++) {
    const ep = endpoints.at(i);
    if (!ep.isObject()) continue; // not an endpoint: nothing to reflect
    if (virtualNode.length > 0 && ep.get("nodeName").str() == virtualNode) continue;
    const copy = ep.shallow();
    // Node and pod references name objects of the origin cluster only.
    copy.remove("nodeName").remove("targetRef");
    copy.set("addresses", translated(ep.get("addresses")));
    out.push(copy);
  }
  return out;
}

function translated(addresses: Value): Value {
  const out = Value.arr();
  for (let i = 0; i < addresses.length; i++) {
    // An unchanged address is the input value itself, written back by a raw copy.
    const a = addresses.at(i);
    out.push(a.isString() ? translateIpValue(a) : Value.str(translateIp(a.str())));
  }
  return out;
}

reflector(MANIFEST, remoteEndpointSlice);
