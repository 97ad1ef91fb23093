// EndpointSlices: every endpoint the destination does not already have, with addresses
// translated for the destination. Endpoints on the virtual node are pods offloaded to that
// very cluster, whose own control plane already lists them: they are not duplicated.
import { reflector, Target, Input, Result, Value, forwardGuards, ptr } from "@liqo-bun/plugin-sdk";
export * from "@liqo-bun/plugin-sdk/exports";
import { translateIp, translateIpValue } from "@liqo-bun/plugin-sdk";

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
  // Edits on the host's copy of the slice, last endpoint first so that removing one does not
  // move those still to edit. Untouched endpoints and unchanged addresses cost no edit.
  const endpoints = input.local.get("endpoints");
  if (!endpoints.isArray()) return r.set("/endpoints", Value.arr());
  const virtualNode = input.ctx.virtualNodeName;
  for (let i = endpoints.length - 1; i >= 0; i--) {
    const ep = endpoints.at(i);
    const at = "/endpoints/" + i.toString();
    // Not an endpoint, or a pod offloaded to the destination, whose own control plane lists it.
    if (!ep.isObject() || (virtualNode.length > 0 && ep.get("nodeName").is(virtualNode))) { r.remove(at); continue; }
    // Node and pod references name objects of the origin cluster only.
    r.remove(at + "/nodeName").remove(at + "/targetRef");
    const addresses = ep.get("addresses");
    if (!addresses.isArray()) { r.set(at + "/addresses", Value.arr()); continue; }
    for (let j = 0; j < addresses.length; j++) {
      const a = addresses.at(j);
      const out = a.isString() ? translateIpValue(a) : Value.str(translateIp(a.str()));
      if (changetype<usize>(out) != changetype<usize>(a)) r.set(at + "/addresses/" + j.toString(), out);
    }
  }
  return r;
}

reflector(MANIFEST, remoteEndpointSlice);
