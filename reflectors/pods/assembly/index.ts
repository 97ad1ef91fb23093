// Pods: the spec travels verbatim except scheduling constraints (they refer to the origin
// cluster; liqo's own toleration for virtual nodes goes too, so a provider never chains the pod
// onto its own virtual nodes: the provider also forbids it, see core/shadowpod), host namespaces (forced off: invasive on a cluster we do not own) and the
// service account, which is rewired so the pod keeps talking to the origin API server.
// Status comes back with IPs remapped, the virtual kubelet as host and restart counts
// that include the remote re-creations.
import { reflector, Target, Input, Result, Value, forwardGuards, translateIpValue, lookup } from "@liqo-bun/plugin-sdk";
export * from "@liqo-bun/plugin-sdk/exports";

const MANIFEST = `{"abiVersion":1,"name":"pods","version":"1.0.0",
    "resources":[{"group":"","version":"v1","kind":"Pod","direction":"both",
      "fields":["/spec/volumes","/spec/serviceAccountName","/spec/automountServiceAccountToken","/spec/tolerations"],
      "backwardFields":["/status"]}],
    "hostFunctions":["translateIp","lookup"]}`;

// Paths built once by the start function (kept below the per-call arena), not on every call.
const DROPPED_SPEC = ["affinity", "nodeSelector", "nodeName", "schedulerName", "priority", "priorityClassName", "preemptionPolicy", "serviceAccountName", "serviceAccount"]
  .map<string>((f: string): string => "/spec/" + f);
/** The taint of virtual nodes (liqo.io's), whose toleration the consumer's webhook added. */
const VIRTUAL_NODE_TAINT_KEY = "virtual-node.liqo.io/not-allowed";

function remotePod(input: Input): Result {
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  const spec = input.local.get("spec");
  const r = Result.apply();
  for (let i = 0; i < DROPPED_SPEC.length; i++) r.remove(DROPPED_SPEC[i]);
  r.set("/spec/hostNetwork", Value.bool(false)).set("/spec/hostIPC", Value.bool(false)).set("/spec/hostPID", Value.bool(false));
  // The remote cluster must not mount its own token: the pod would reach the wrong API server.
  r.set("/spec/automountServiceAccountToken", Value.bool(false));
  dropVirtualNodeTolerations(r, spec.get("tolerations"));
  const volumes = spec.get("volumes");
  let tokenVolume = -1;
  for (let i = 0; i < volumes.length; i++) if (isTokenVolume(volumes.at(i))) tokenVolume = i;
  if (tokenVolume < 0) return r;
  const sa = spec.get("serviceAccountName").str();
  const secret = tokenSecretOf(sa.length > 0 ? sa : "default", input.ctx.localNamespace);
  if (secret.length == 0) return Result.skip("waiting for the token secret of service account " + (sa.length > 0 ? sa : "default"));
  // Same volume name, so every container's volumeMounts stay valid; the secret is reflected too.
  const vol = Value.obj().set("name", volumes.at(tokenVolume).get("name"))
    .set("secret", Value.obj().set("secretName", Value.str(secret)));
  return r.set("/spec/volumes/" + tokenVolume.toString(), vol);
}

/** The tolerations without liqo's for virtual nodes: an edit only when the pod has one. */
function dropVirtualNodeTolerations(r: Result, tolerations: Value): void {
  let ours = 0;
  for (let i = 0; i < tolerations.length; i++) if (tolerations.at(i).get("key").is(VIRTUAL_NODE_TAINT_KEY)) ours++;
  if (ours == 0) return;
  if (ours == tolerations.length) {
    r.remove("/spec/tolerations");
    return;
  }
  const kept = Value.arr();
  for (let i = 0; i < tolerations.length; i++) {
    const t = tolerations.at(i);
    if (!t.get("key").is(VIRTUAL_NODE_TAINT_KEY)) kept.push(t);
  }
  r.set("/spec/tolerations", kept);
}

/** The projected volume the service-account admission plugin adds (kube-api-access-*). */
function isTokenVolume(v: Value): bool {
  const sources = v.get("projected").get("sources");
  for (let i = 0; i < sources.length; i++) if (sources.at(i).has("serviceAccountToken")) return true;
  return false;
}

function tokenSecretOf(serviceAccount: string, namespace: string): string {
  const sa = lookup("local", "v1", "ServiceAccount", namespace, serviceAccount);
  return sa.get("secrets").at(0).get("name").str();
}

function localPodStatus(input: Input): Result {
  if (input.remote.isNull()) return Result.skip("remote pod absent; its ShadowPod re-creates it");
  if (input.target == Target.Absent) return Result.skip("local pod deleted");
  // The host starts from the remote status (the base copy keeps it): only what differs is an edit.
  const status = input.remote.get("status");
  const r = Result.apply();
  const podIP = status.get("podIP");
  if (podIP.hasText()) setIfTranslated(r, "/status/podIP", podIP);
  const ips = status.get("podIPs");
  for (let i = 0; i < ips.length && ips.isArray(); i++) {
    const ip = ips.at(i).get("ip");
    if (ip.isString()) setIfTranslated(r, i < POD_IPS.length ? unchecked(POD_IPS[i]) : "/status/podIPs/" + i.toString() + "/ip", ip);
  }
  const vk = input.ctx.virtualKubeletIp;
  if (vk.length > 0) {
    r.set("/status/hostIP", Value.str(vk));
    if (status.has("hostIPs")) r.set("/status/hostIPs", Value.arr().push(Value.obj().set("ip", Value.str(vk))));
  }
  const extra = input.ctx.remoteRestarts;
  if (extra > 0) {
    bumpRestarts(r, status.get("containerStatuses"), CONTAINER_RESTARTS, "/status/containerStatuses/", extra);
    bumpRestarts(r, status.get("initContainerStatuses"), INIT_CONTAINER_RESTARTS, "/status/initContainerStatuses/", extra);
  }
  return r;
}

/** An edit only when the translation changes the address (never, without overlapping CIDRs). */
function setIfTranslated(r: Result, path: string, ip: Value): void {
  const out = translateIpValue(ip);
  if (changetype<usize>(out) != changetype<usize>(ip)) r.set(path, out);
}

// "/status/containerStatuses/<i>/restartCount" for the first containers, built once by the start function.
const CONTAINER_RESTARTS = restartPaths("/status/containerStatuses/");
const INIT_CONTAINER_RESTARTS = restartPaths("/status/initContainerStatuses/");
const POD_IPS = indexPaths("/status/podIPs/", "/ip");
function restartPaths(base: string): string[] { return indexPaths(base, "/restartCount"); }
function indexPaths(base: string, tail: string): string[] {
  const out = new Array<string>(16);
  for (let i = 0; i < 16; i++) out[i] = base + i.toString() + tail;
  return out;
}

function bumpRestarts(r: Result, statuses: Value, paths: string[], base: string, extra: i64): void {
  for (let i = 0; i < statuses.length; i++) {
    const path = i < paths.length ? unchecked(paths[i]) : base + i.toString() + "/restartCount";
    r.set(path, Value.num(statuses.at(i).get("restartCount").int() + extra));
  }
}

reflector(MANIFEST, remotePod, localPodStatus);
