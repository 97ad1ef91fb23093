// What a pod shows while its image cannot be pulled: the first container waiting in ErrImagePull or
// ImagePullBackOff, whose message names the image and the registry asked.
import type { Pod } from "../../core/kube/types.ts";

export type PullError = { reason?: string; message?: string };

/** The pod's pull error, if its first container waits on one (and its message contains `naming`). */
export function pullError(pod: Pod | undefined, naming = ""): PullError | undefined {
  const w = pod?.status?.containerStatuses?.[0]?.state?.waiting;
  return w && /ErrImagePull|ImagePullBackOff/.test(w.reason ?? "") && (w.message ?? "").includes(naming)
    ? w
    : undefined;
}
