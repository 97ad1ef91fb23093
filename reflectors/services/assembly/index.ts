// Services: reflected verbatim except the fields the remote cluster must choose itself
// (cluster IPs, load-balancer IP, node ports), which would likely conflict there.
import { reflector, Input, Result, forwardGuards, annotation } from "../../../plugins/sdk/assembly";
export * from "../../../plugins/sdk/assembly/exports";

const FORCE_NODE_PORT = "liqo.io/force-remote-node-port";


function remoteService(input: Input): Result {
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  // Removing an absent field is a no-op for the host, so these need no projection.
  const r = Result.apply().remove("/spec/clusterIP").remove("/spec/clusterIPs").remove("/spec/loadBalancerIP");
  if (annotation(input.local, FORCE_NODE_PORT).str() == "true") return r;
  r.remove("/spec/healthCheckNodePort");
  const ports = input.local.get("spec").get("ports");
  for (let i = 0; i < ports.length; i++) {
    if (ports.at(i).has("nodePort")) r.remove("/spec/ports/" + i.toString() + "/nodePort");
  }
  return r;
}

reflector(`{"abiVersion":1,"name":"services","version":"1.0.0",
  "resources":[{"group":"","version":"v1","kind":"Service","direction":"forward","fields":["/spec/ports"]}],
  "hostFunctions":[]}`, remoteService);
