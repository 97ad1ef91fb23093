// While Helm waits for liqo's pods, an image the nodes cannot pull would hold the install until
// --timeout (10 minutes by default) and end in a rollback with Helm's "context deadline exceeded".
// liqoctl watches the pods instead and stops the install once a pull has failed for a while,
// naming the pod, the image, the runtime's message and the fix.
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources } from "../../core/kube/resources.ts";
import type { Pod } from "../../core/kube/types.ts";

const PULL_FAILURES = new Set(["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"]);

export interface PullFailure {
  pod: string;
  image: string;
  reason: string;
  message: string;
}

/** The containers of these pods that wait on an image they cannot pull. */
export function pullFailures(pods: Pod[]): PullFailure[] {
  const out: PullFailure[] = [];
  for (const p of pods)
    for (const c of [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])]) {
      const waiting = c.state?.waiting;
      if (waiting?.reason && PULL_FAILURES.has(waiting.reason))
        out.push({
          pod: p.metadata.name!,
          image: String(c.image ?? ""),
          reason: waiting.reason,
          message: waiting.message ?? "",
        });
    }
  return out;
}

/** What liqoctl says when it stops an install on a pull failure. */
export function pullFailureMessage(f: PullFailure, namespace: string): string {
  return [
    `pod ${namespace}/${f.pod} cannot pull image ${f.image} (${f.reason}${f.message ? `: ${f.message}` : ""})`,
    "  fix: make that image pullable by the nodes (push it to a registry they reach, or import it into each node), or",
    "  install another with --set image.repository=<registry>/<path>/liqo (and --version <tag>); docs/byo-cluster.md, step 2",
  ].join("\n");
}

/**
 * Polls the namespace's pods until `signal` aborts; calls `onFailure` once, when one pod's pull has
 * kept failing for `graceMs` (a first ErrImagePull may be a registry's blip).
 */
export async function watchPulls(
  client: KubeClient,
  namespace: string,
  o: { graceMs: number; intervalMs: number; signal: AbortSignal; onFailure: (f: PullFailure) => void },
): Promise<void> {
  const since = new Map<string, number>();
  while (!o.signal.aborted) {
    const pods = await client
      .list<Pod>(Resources.pods, { namespace })
      .then((l) => l.items)
      .catch(() => [] as Pod[]);
    const now = Date.now();
    const failing = pullFailures(pods);
    const keys = new Set(failing.map((f) => `${f.pod}/${f.image}`));
    for (const k of [...since.keys()]) if (!keys.has(k)) since.delete(k);
    for (const f of failing) {
      const k = `${f.pod}/${f.image}`;
      const first = since.get(k) ?? now;
      since.set(k, first);
      if (now - first >= o.graceMs) {
        o.onFailure(f);
        return;
      }
    }
    await Bun.sleep(o.intervalMs);
  }
}
