// Storage: a claim of the virtual storage class (`liqo`) that the scheduler placed on this
// virtual node goes to the provider verbatim, with the storage class negotiated at peering (a
// peering without one fails the claim: its virtual node does not offer storage). Nothing else is reflected: other claims in the namespace, and
// claims of the class bound elsewhere, are skipped. The local PersistentVolume that binds the
// claim is the consumer's storage provisioner's (core/storage), pinned to this cluster; the
// provider's volume never comes back, so the peer identity needs no access to PersistentVolumes.
// A claim's class is immutable: a copy already in the provider keeps its class when the offered
// class changes (the context's storageClass then applies to new claims only).
// Each copy names the claim it was made for (its UID, in an annotation): a copy of an earlier
// claim of the same name, deleted and made again (liqoctl move volume does), is deleted first and
// made again once gone, never reused: its volume, and the data in it, belong to the earlier claim.
import { reflector, Input, Result, Target, Value, forwardGuards, annotation, ptr } from "@liqo-bun/plugin-sdk";
export * from "@liqo-bun/plugin-sdk/exports";

const MANIFEST = `{"abiVersion":1,"name":"storage","version":"2.2.0",
    "resources":[
      {"group":"","version":"v1","kind":"PersistentVolumeClaim","direction":"forward","fields":["/spec/storageClassName","/metadata/uid"],
       "targetFields":["/spec/storageClassName"]}],
    "hostFunctions":[]}`;

const SELECTED_NODE = "volume.kubernetes.io/selected-node";
/** On a copy: the UID of the local claim it was made for (core/apis/labels.ts ORIGIN_CLAIM_UID_ANNOTATION). */
const ORIGIN_CLAIM_UID = "storage.liqo.io/origin-claim-uid";
const ORIGIN_CLAIM_UID_PATH = "/metadata/annotations/" + ptr(ORIGIN_CLAIM_UID);

/** Annotations the local binding controller and scheduler wrote; they name local objects. */
const LOCAL_BINDING_ANNOTATIONS = [
  "pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
  "volume.beta.kubernetes.io/storage-provisioner", "volume.kubernetes.io/storage-provisioner",
  SELECTED_NODE,
].map<string>((a: string): string => "/metadata/annotations/" + ptr(a)); // paths built once by the start function

function remotePvc(input: Input): Result {
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  const virtualClass = input.ctx.get("virtualStorageClass").str();
  const cls = input.local.get("spec").get("storageClassName");
  if (!cls.is(virtualClass.length > 0 ? virtualClass : "liqo")) return Result.skip("not a claim of the virtual storage class");
  const node = annotation(input.local, SELECTED_NODE);
  if (!node.is(input.ctx.virtualNodeName)) {
    // Placed elsewhere: a copy of ours here belongs to an earlier claim of that name (deleted and
    // made again, as liqoctl move volume does); the scheduler never moves a placed claim.
    if (node.isString() && input.target == Target.Owned) return Result.delete("the claim is placed on another node");
    return Result.skip("not bound to this virtual node");
  }
  const uid = input.local.get("metadata").get("uid");
  if (input.target == Target.Owned) {
    // A copy without the annotation was made before copies carried it: adopted (it is in use).
    const madeFor = annotation(input.remote, ORIGIN_CLAIM_UID);
    if (madeFor.isString() && uid.isString() && !madeFor.is(uid.str()))
      return Result.delete("the copy belongs to an earlier claim of that name; a new one follows once it is gone");
  }
  const kept = input.target == Target.Owned ? input.remote.get("spec").get("storageClassName") : Value.null();
  const sc = kept.isString() ? kept.str() : input.ctx.storageClass;
  if (sc.length == 0) return Result.fail("the context has no storageClass: the peering has not negotiated one");
  const r = Result.apply().set("/spec/storageClassName", Value.str(sc)).remove("/spec/volumeName");
  if (uid.isString()) r.set(ORIGIN_CLAIM_UID_PATH, uid);
  for (let i = 0; i < LOCAL_BINDING_ANNOTATIONS.length; i++) r.remove(LOCAL_BINDING_ANNOTATIONS[i]);
  return r;
}

reflector(MANIFEST, remotePvc);
