// Where an offloaded pod's start goes: watches on both clusters stamp (host clock, ms) the moments
// each pod passes — created, scheduled on the virtual node, its ShadowPod in the provider, the remote
// pod, scheduled there, Ready there, Ready in the consumer — and `phases` turns the stamps into
// per-step durations. The API server's own timestamps are whole seconds; these are not.
import type { KubeClient } from "../../core/kube/client.ts";
import type { KubeObject, ResourceRef } from "../../core/kube/resources.ts";

/** The moments one pod passed, in ms since the epoch, each the first event that showed it. */
export interface Marks {
  created?: number;
  scheduled?: number;
  shadow?: number;
  remoteCreated?: number;
  remoteScheduled?: number;
  remoteReady?: number;
  ready?: number;
}

type Stamp = keyof Marks;
type PodLike = KubeObject & {
  spec?: { nodeName?: string };
  status?: { conditions?: { type: string; status: string }[] };
};

/** The steps, in order, each from one mark to the next; a local pod has only the consumer's. */
export const OFFLOADED_STEPS: [string, Stamp, Stamp][] = [
  ["created → scheduled on the virtual node", "created", "scheduled"],
  ["scheduled → ShadowPod in the provider", "scheduled", "shadow"],
  ["ShadowPod → remote pod", "shadow", "remoteCreated"],
  ["remote pod → scheduled in the provider", "remoteCreated", "remoteScheduled"],
  ["scheduled → Ready in the provider", "remoteScheduled", "remoteReady"],
  ["Ready in the provider → Ready in the consumer", "remoteReady", "ready"],
];
export const LOCAL_STEPS: [string, Stamp, Stamp][] = [
  ["created → scheduled", "created", "scheduled"],
  ["scheduled → Ready", "scheduled", "ready"],
];

/** Each step's durations in ms over the pods that have both its marks (a missing mark drops the pod from that step only). */
export function phases(marks: Iterable<Marks>, steps: [string, Stamp, Stamp][]): { step: string; ms: number[] }[] {
  const all = [...marks];
  return steps.map(([step, from, to]) => ({
    step,
    ms: all.flatMap((m) => (m[from] !== undefined && m[to] !== undefined ? [m[to]! - m[from]!] : [])),
  }));
}

/** Stamps what a pod event shows: `created` on first sight, then scheduled and Ready. */
export function stampPod(m: Marks, o: PodLike, at: number, names: { created: Stamp; scheduled: Stamp; ready: Stamp }) {
  m[names.created] ??= at;
  if (o.spec?.nodeName) m[names.scheduled] ??= at;
  if (o.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) m[names.ready] ??= at;
}

export interface TimelineSource {
  client: KubeClient;
  res: ResourceRef;
  namespace?: string;
  stamp: (m: Marks, o: PodLike, at: number) => void;
}

/**
 * Watches every source until `stop`, stamping the pods whose names start with `prefix-`. It lists
 * first and watches from the list's resourceVersion, so nothing created once it has returned is
 * missed; a watch the server closes is opened again from the last version seen (listed anew on 410).
 */
export async function recordTimeline(prefix: string, sources: TimelineSource[]) {
  const marks = new Map<string, Marks>();
  const abort = new AbortController();
  const listed = await Promise.all(
    sources.map(async (s) => (await s.client.list(s.res, { namespace: s.namespace })).metadata.resourceVersion),
  );
  const loops = sources.map(async (s, i) => {
    let resourceVersion = listed[i];
    while (!abort.signal.aborted) {
      try {
        for await (const ev of s.client.watch<PodLike>(s.res, {
          namespace: s.namespace,
          resourceVersion,
          allowWatchBookmarks: true,
          signal: abort.signal,
        })) {
          if (ev.type === "ERROR") throw new Error(JSON.stringify(ev.object).slice(0, 200));
          resourceVersion = ev.object.metadata?.resourceVersion ?? resourceVersion;
          const name = ev.object.metadata?.name;
          if (ev.type !== "ADDED" && ev.type !== "MODIFIED") continue;
          if (!name?.startsWith(`${prefix}-`)) continue;
          const m = marks.get(name) ?? {};
          marks.set(name, m);
          s.stamp(m, ev.object, Date.now());
        }
      } catch (err) {
        if (abort.signal.aborted) break;
        console.error(`[bench] timeline watch of ${s.res.plural} re-opened: ${(err as Error).message}`);
        resourceVersion = (await s.client.list(s.res, { namespace: s.namespace })).metadata.resourceVersion;
      }
    }
  });
  return {
    marks,
    async stop() {
      abort.abort();
      await Promise.allSettled(loops);
    },
  };
}
