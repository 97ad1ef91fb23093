// Services: reflected verbatim except the fields the remote cluster must choose itself
// (cluster IPs, load-balancer IP, node ports), which would likely conflict there.
import { reflector, Input, Result, forwardGuards, annotation } from "@liqo-bun/plugin-sdk";
export * from "@liqo-bun/plugin-sdk/exports";

const FORCE_NODE_PORT = "liqo.io/force-remote-node-port";
// "/spec/ports/<i>/nodePort" for the first ports, built once by the start function (kept below
// the per-call arena) instead of concatenated on every call.
const NODE_PORT_PATHS = new Array<string>(16);
for (let i = 0; i < NODE_PORT_PATHS.length; i++) NODE_PORT_PATHS[i] = "/spec/ports/" + i.toString() + "/nodePort";


function remoteService(input: Input): Result {
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  // Removing an absent field is a no-op for the host, so these need no projection.
  const r = Result.apply().remove("/spec/clusterIP").remove("/spec/clusterIPs").remove("/spec/loadBalancerIP");
  if (annotation(input.local, FORCE_NODE_PORT).is("true")) return r;
  r.remove("/spec/healthCheckNodePort");
  const ports = input.local.get("spec").get("ports");
  for (let i = 0; i < ports.length; i++) {
    if (ports.at(i).has("nodePort")) r.remove(i < NODE_PORT_PATHS.length ? unchecked(NODE_PORT_PATHS[i]) : "/spec/ports/" + i.toString() + "/nodePort");
  }
  return r;
}

reflector(`{"abiVersion":1,"name":"services","version":"1.0.0",
  "resources":[{"group":"","version":"v1","kind":"Service","direction":"forward","fields":["/spec/ports"]}],
  "hostFunctions":[]}`, remoteService);
