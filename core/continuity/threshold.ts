// Service continuity (Liqo 1.x's ShadowEndpointSlice semantics): endpoints in a peer that has been
// unreachable longer than a threshold are marked not ready, and ready again once it answers. The
// threshold and the one decision both sides make from it, kept pure so they are tested alone.

/**
 * 15 s: the virtual node turns NotReady after 3 failed probes 5 s apart (10–15 s after the link
 * goes dark), so endpoints follow the node a few seconds later rather than before it; and it is
 * well under kube's own 40 s node grace period, so traffic leaves a dark peer long before pods
 * are evicted. A blip of one or two probes never flips an endpoint.
 */
export const DEFAULT_CONTINUITY_THRESHOLD_MS = 15_000;

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration as the flag and the chart value take it: "15s", "500ms", "1m", "1m30s", or a bare
 * number of seconds. Throws an Error naming `what` and the expected form for anything else, and
 * for zero or less (a threshold of zero would mark endpoints at the first failed probe).
 */
export function parseThreshold(text: string, what: string): number {
  const t = text.trim();
  let ms: number | undefined;
  if (/^\d+(\.\d+)?$/.test(t)) ms = Number(t) * 1000;
  else if (/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(t)) {
    ms = 0;
    for (const m of t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) ms += Number(m[1]) * UNITS[m[2]!]!;
  }
  if (ms === undefined || !Number.isFinite(ms))
    throw new Error(`${what} "${text}" is not a duration; write it like 15s, 500ms or 1m`);
  if (ms < 1000) throw new Error(`${what} "${text}" is shorter than 1s; endpoints would flap on every lost probe`);
  return Math.round(ms);
}

/** Whether a peer unreachable since `since` (ms, undefined: reachable) is past the threshold at `now`. */
export function pastThreshold(since: number | undefined, now: number, thresholdMs: number): boolean {
  return since !== undefined && now - since >= thresholdMs;
}

/** When to look again: the moment a peer unreachable since `since` crosses the threshold, if it has not yet. */
export function crossesAt(since: number | undefined, now: number, thresholdMs: number): number | undefined {
  if (since === undefined || pastThreshold(since, now, thresholdMs)) return undefined;
  return since + thresholdMs;
}
