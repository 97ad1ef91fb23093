import type { KubeObject } from "../../core/reflection/abi.ts";
import { isOwnedBy } from "../../core/reflection/finish.ts";
import { baseLocal, baseRemote } from "../../core/reflection/objects.ts";
import { forwardGuards, without, type Twin } from "../twin-helpers.ts";

const LOCAL_BINDING_ANNOTATIONS = ["pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
  "volume.beta.kubernetes.io/storage-provisioner", "volume.kubernetes.io/storage-provisioner", "volume.kubernetes.io/selected-node"];

export const remotePvc: Twin = (local, remote, ctx) => {
  const guard = forwardGuards(local, remote, ctx);
  if (guard) return guard;
  if (!ctx.storageClass) throw new Error("the context has no storageClass: the peering has not negotiated one");
  const out = baseRemote(local!, ctx);
  if (out.metadata!.annotations) out.metadata!.annotations = without(out.metadata!.annotations, LOCAL_BINDING_ANNOTATIONS);
  const spec = { ...without(local!.spec as Record<string, unknown>, ["volumeName"]), storageClassName: ctx.storageClass };
  return { decision: "apply", reason: "", object: { ...out, spec } };
};

export const localPv: Twin = (remote, local, ctx) => {
  if (local && !isOwnedBy(local, ctx.remoteClusterId)) return { decision: "skip", reason: "conflict: a local PersistentVolume with this name exists and is not managed by liqo reflection" };
  if (!remote) return { decision: "delete", reason: "remote PersistentVolume deleted" };
  const out = baseLocal(remote, ctx, false);
  const rspec = remote.spec as Record<string, unknown>;
  const claim = rspec.claimRef as { name?: string } | undefined;
  const spec: Record<string, unknown> = {
    ...rspec,
    nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: "liqo.io/remote-cluster-id", operator: "In", values: [ctx.remoteClusterId] }] }] } },
    storageClassName: (ctx.localStorageClass as string | undefined) || "liqo",
  };
  if (claim) spec.claimRef = { apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: ctx.localNamespace, name: claim.name };
  return { decision: "apply", reason: "", object: { ...out, spec } as KubeObject };
};
