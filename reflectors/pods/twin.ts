import type { KubeObject } from "../../core/reflection/abi.ts";
import { baseRemote } from "../../core/reflection/objects.ts";
import { VIRTUAL_NODE_TAINT } from "../../core/apis/labels.ts";
import { forwardGuards, without, type Twin } from "../twin-helpers.ts";

const DROPPED_SPEC = [
  "affinity",
  "nodeSelector",
  "nodeName",
  "schedulerName",
  "priority",
  "priorityClassName",
  "preemptionPolicy",
  "serviceAccountName",
  "serviceAccount",
];
type Toleration = { key?: string };
type Volume = { name: string; projected?: { sources?: Array<Record<string, unknown>> } };
// biome-ignore lint/suspicious/noExplicitAny: the twin copies a remote pod status through, as the wasm plugin does, reading and writing its fields as found
type Status = Record<string, any>;

/** `lookup` returns the local ServiceAccount by name (the host's cache look-up). */
export function remotePodWith(lookup: (sa: string) => KubeObject | null): Twin {
  return (local, remote, ctx) => {
    const guard = forwardGuards(local, remote, ctx);
    if (guard) return guard;
    const lspec = local!.spec as Record<string, unknown>;
    const spec: Record<string, unknown> = {
      ...without(lspec, DROPPED_SPEC),
      hostNetwork: false,
      hostIPC: false,
      hostPID: false,
      automountServiceAccountToken: false,
    };
    // liqo's own toleration for virtual nodes stays home: the provider never chains the pod.
    const tolerations = (lspec.tolerations as Toleration[] | undefined) ?? [];
    const kept = tolerations.filter((t) => t.key !== VIRTUAL_NODE_TAINT.key);
    if (kept.length < tolerations.length) {
      if (kept.length) spec.tolerations = kept;
      else delete spec.tolerations;
    }
    const volumes = (lspec.volumes as Volume[] | undefined) ?? [];
    const idx = volumes.findLastIndex((v) => v.projected?.sources?.some((s) => "serviceAccountToken" in s));
    if (idx >= 0) {
      const sa = (lspec.serviceAccountName as string | undefined) || "default";
      const secret = (lookup(sa) as { secrets?: Array<{ name?: string }> } | null)?.secrets?.[0]?.name ?? "";
      if (!secret) return { decision: "skip", reason: `waiting for the token secret of service account ${sa}` };
      spec.volumes = volumes.map((v, i) => (i === idx ? { name: v.name, secret: { secretName: secret } } : v));
    }
    return { decision: "apply", reason: "", object: { ...baseRemote(local!, ctx), spec } };
  };
}

export const localPodStatus: Twin = (remote, local, ctx, translateIp = (ip) => ip) => {
  if (!remote) return { decision: "skip", reason: "remote pod absent; its ShadowPod re-creates it" };
  if (!local) return { decision: "skip", reason: "local pod deleted" };
  const rs = (remote.status ?? {}) as Status;
  const status: Status = { ...rs };
  if (rs.podIP) status.podIP = translateIp(rs.podIP);
  if (Array.isArray(rs.podIPs))
    status.podIPs = rs.podIPs.map((p: { ip?: unknown }) =>
      typeof p?.ip === "string" ? { ...p, ip: translateIp(p.ip) } : p,
    );
  if (ctx.virtualKubeletIp) {
    status.hostIP = ctx.virtualKubeletIp;
    if (rs.hostIPs) status.hostIPs = [{ ip: ctx.virtualKubeletIp }];
  }
  const extra = ctx.remoteRestarts ?? 0;
  const bump = (list: Status[] | undefined) =>
    list?.map((c) => ({ ...c, restartCount: (c.restartCount ?? 0) + extra }));
  if (extra > 0) {
    if (rs.containerStatuses) status.containerStatuses = bump(rs.containerStatuses);
    if (rs.initContainerStatuses) status.initContainerStatuses = bump(rs.initContainerStatuses);
  }
  // Only the status is written (the status subresource of the local pod): no copy of the rest.
  return {
    decision: "apply",
    reason: "",
    object: {
      apiVersion: remote.apiVersion,
      kind: remote.kind,
      metadata: { name: remote.metadata!.name, namespace: ctx.localNamespace },
      status,
    },
  };
};
