import { ORIGIN_CLAIM_UID_ANNOTATION } from "../../core/apis/labels.ts";
import { baseRemote } from "../../core/reflection/objects.ts";
import { forwardGuards, without, type Twin } from "../twin-helpers.ts";

const SELECTED_NODE = "volume.kubernetes.io/selected-node";
const LOCAL_BINDING_ANNOTATIONS = [
  "pv.kubernetes.io/bind-completed",
  "pv.kubernetes.io/bound-by-controller",
  "volume.beta.kubernetes.io/storage-provisioner",
  "volume.kubernetes.io/storage-provisioner",
  SELECTED_NODE,
];

export const remotePvc: Twin = (local, remote, ctx) => {
  const guard = forwardGuards(local, remote, ctx);
  if (guard) return guard;
  const spec = local!.spec as Record<string, unknown>;
  if (spec.storageClassName !== ((ctx.virtualStorageClass as string | undefined) || "liqo"))
    return { decision: "skip", reason: "not a claim of the virtual storage class" };
  const node = local!.metadata?.annotations?.[SELECTED_NODE];
  if (node !== ctx.virtualNodeName) {
    if (node !== undefined && remote) return { decision: "delete", reason: "the claim is placed on another node" };
    return { decision: "skip", reason: "not bound to this virtual node" };
  }
  const uid = local!.metadata?.uid;
  // A copy of an earlier claim of that name goes first (its volume is that claim's); an unmarked one is adopted.
  const madeFor = remote?.metadata?.annotations?.[ORIGIN_CLAIM_UID_ANNOTATION];
  if (remote && madeFor !== undefined && uid !== undefined && madeFor !== uid)
    return {
      decision: "delete",
      reason: "the copy belongs to an earlier claim of that name; a new one follows once it is gone",
    };
  // A claim's class is immutable: a copy keeps the class it was made with.
  const kept = (remote?.spec as { storageClassName?: unknown } | undefined)?.storageClassName;
  const storageClass = typeof kept === "string" ? kept : ctx.storageClass;
  if (!storageClass) throw new Error("the context has no storageClass: the peering has not negotiated one");
  const out = baseRemote(local!, ctx);
  if (out.metadata!.annotations)
    out.metadata!.annotations = without(out.metadata!.annotations, LOCAL_BINDING_ANNOTATIONS);
  if (uid !== undefined)
    out.metadata!.annotations = { ...out.metadata!.annotations, [ORIGIN_CLAIM_UID_ANNOTATION]: uid };
  return {
    decision: "apply",
    reason: "",
    object: { ...out, spec: { ...without(spec, ["volumeName"]), storageClassName: storageClass } },
  };
};
