// Example drop-in reflector: NetworkPolicies, with every ipBlock CIDR remapped through the
// host's IP translation so the policy still matches the same pods seen from the remote
// cluster. It answers a whole object (withObject) to show that style; built-ins answer
// edits, which are cheaper (the host never parses the object back).
// Build: bun run build:wasm networkpolicy   (output: plugins/examples/networkpolicy/networkpolicy.wasm)
import { reflector, Target, Input, Result, Value, forwardGuards, translateIp } from "@liqo-bun/plugin-sdk";
export * from "@liqo-bun/plugin-sdk/exports";

const MANIFEST = `{"abiVersion":1,"name":"networkpolicies","version":"0.1.0",
    "resources":[{"group":"networking.k8s.io","version":"v1","kind":"NetworkPolicy","direction":"forward"}],
    "hostFunctions":["translateIp"]}`;

function remoteNetworkPolicy(input: Input): Result {
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  const local = input.local;
  const meta = Value.obj().set("name", local.get("metadata").get("name"))
    .set("namespace", Value.str(input.ctx.remoteNamespace))
    .set("labels", local.get("metadata").get("labels").isObject() ? local.get("metadata").get("labels").shallow() : Value.obj())
    .set("annotations", local.get("metadata").get("annotations").isObject() ? local.get("metadata").get("annotations") : Value.obj());
  meta.get("labels").set("liqo.io/managed-by", Value.str("reflection")).set("liqo.io/origin-cluster-id", Value.str(input.ctx.localClusterId));
  const spec = local.get("spec").shallow();
  if (spec.has("ingress")) spec.set("ingress", translateRules(spec.get("ingress"), "from"));
  if (spec.has("egress")) spec.set("egress", translateRules(spec.get("egress"), "to"));
  const obj = Value.obj().set("apiVersion", local.get("apiVersion")).set("kind", local.get("kind"))
    .set("metadata", meta).set("spec", spec);
  return Result.apply().withObject(obj);
}

// Values read with get()/at() are views of the input: a changed copy is set back into a
// (shallow-copied) parent, level by level.
function translateRules(rules: Value, key: string): Value {
  const out = Value.arr();
  for (let i = 0; i < rules.length; i++) {
    const rule = rules.at(i);
    const peers = rule.get(key);
    if (!peers.isArray()) { out.push(rule); continue; }
    const newPeers = Value.arr();
    for (let j = 0; j < peers.length; j++) newPeers.push(translatePeer(peers.at(j)));
    out.push(rule.shallow().set(key, newPeers));
  }
  return out;
}

function translatePeer(peer: Value): Value {
  const block = peer.get("ipBlock");
  if (!block.isObject()) return peer;
  const newBlock = block.shallow().set("cidr", Value.str(translateCidr(block.get("cidr").str())));
  const except = block.get("except");
  if (except.isArray()) {
    const out = Value.arr();
    for (let k = 0; k < except.length; k++) out.push(Value.str(translateCidr(except.at(k).str())));
    newBlock.set("except", out);
  }
  return peer.shallow().set("ipBlock", newBlock);
}

/** The host translates addresses; the prefix length is kept. */
function translateCidr(cidr: string): string {
  const slash = cidr.indexOf("/");
  if (slash < 0) return translateIp(cidr);
  return translateIp(cidr.substring(0, slash)) + cidr.substring(slash);
}

reflector(MANIFEST, remoteNetworkPolicy);
