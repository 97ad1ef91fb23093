// Storage: PersistentVolumeClaims go forward verbatim with the storage class negotiated at
// peering; the PersistentVolume the remote cluster provisions comes back as a local PV
// pinned to the virtual node (by its liqo.io/remote-cluster-id label), so later pods
// mounting it are scheduled, and offloaded, to the same cluster.
import { reflector, Target, Input, Result, Value, forwardGuards, ptr } from "../../../plugins/sdk/assembly";
export * from "../../../plugins/sdk/assembly/exports";

const MANIFEST = `{"abiVersion":1,"name":"storage","version":"1.0.0",
    "resources":[
      {"group":"","version":"v1","kind":"PersistentVolumeClaim","direction":"forward","fields":[]},
      {"group":"","version":"v1","kind":"PersistentVolume","direction":"backward","namespaced":false,"backwardFields":["/spec/claimRef"]}],
    "hostFunctions":[]}`;

/** Annotations the local binding controller and scheduler wrote; they name local objects. */
const LOCAL_BINDING_ANNOTATIONS = [
  "pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
  "volume.beta.kubernetes.io/storage-provisioner", "volume.kubernetes.io/storage-provisioner",
  "volume.kubernetes.io/selected-node",
].map<string>((a: string): string => "/metadata/annotations/" + ptr(a)); // paths built once by the start function

function remotePvc(input: Input): Result {
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  const sc = input.ctx.storageClass;
  if (sc.length == 0) return Result.fail("the context has no storageClass: the peering has not negotiated one");
  const r = Result.apply().set("/spec/storageClassName", Value.str(sc)).remove("/spec/volumeName");
  for (let i = 0; i < LOCAL_BINDING_ANNOTATIONS.length; i++) r.remove(LOCAL_BINDING_ANNOTATIONS[i]);
  return r;
}

function localPv(input: Input): Result {
  const ctx = input.ctx;
  if (input.target == Target.Foreign) {
    return Result.skip("conflict: a local PersistentVolume with this name exists and is not managed by liqo reflection");
  }
  if (input.remote.isNull()) return Result.delete("remote PersistentVolume deleted");
  const term = Value.obj().set("matchExpressions", Value.arr().push(Value.obj()
    .set("key", Value.str("liqo.io/remote-cluster-id")).set("operator", Value.str("In"))
    .set("values", Value.arr().push(Value.str(ctx.remoteClusterId)))));
  const affinity = Value.obj().set("required", Value.obj().set("nodeSelectorTerms", Value.arr().push(term)));
  const r = Result.apply().set("/spec/nodeAffinity", affinity);
  const local = ctx.get("localStorageClass").str();
  r.set("/spec/storageClassName", Value.str(local.length > 0 ? local : "liqo"));
  // Bind to the local claim the remote one mirrors (same name, local namespace).
  const claim = input.remote.get("spec").get("claimRef");
  if (claim.isObject()) {
    r.set("/spec/claimRef", Value.obj().set("apiVersion", Value.str("v1")).set("kind", Value.str("PersistentVolumeClaim"))
      .set("namespace", Value.str(ctx.localNamespace)).set("name", claim.get("name")));
  }
  return r;
}

reflector(MANIFEST, remotePvc, localPv);
