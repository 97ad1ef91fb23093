// Whether a virtual node's Ready condition told the truth, judged sample by sample against what
// the test itself saw of the remote cluster (the same GET /version the node's own probe sends).
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";

/** How long the remote may stay unanswered before a Ready node is untrue: the node's probe (every 5 s, 3 failures) plus a period. */
export const NOTICE_MS = 25_000;
/** How long after the remote's last failed answer a NotReady node may still be catching up: a probe period and a status write. */
export const CATCH_UP_MS = 10_000;

export interface Truth {
  samples: number;
  notReady: number;
  /** NotReady although the remote answered every probe of the last NOTICE_MS + CATCH_UP_MS. */
  falseNotReady: number;
  /** Ready although the remote had answered no probe for more than NOTICE_MS. */
  falseReady: number;
  longestOutageS: number;
}

export class TruthCounter {
  readonly t: Truth = { samples: 0, notReady: 0, falseNotReady: 0, falseReady: 0, longestOutageS: 0 };
  private lastFailure = Number.NEGATIVE_INFINITY;
  private unansweredSince: number | undefined;

  /**
   * One sample: `at` when the remote was probed, whether it answered, and the node's Ready status
   * read at the same time (undefined when the local API server could not say: not counted).
   */
  observe(at: number, remoteAnswered: boolean, ready: string | undefined): void {
    if (remoteAnswered) this.unansweredSince = undefined;
    else {
      this.lastFailure = at;
      this.unansweredSince ??= at;
      this.t.longestOutageS = Math.max(this.t.longestOutageS, (at - this.unansweredSince) / 1000);
    }
    if (ready === undefined) return;
    this.t.samples++;
    if (ready !== "True") {
      this.t.notReady++;
      if (at - this.lastFailure > NOTICE_MS + CATCH_UP_MS) this.t.falseNotReady++;
    } else if (this.unansweredSince !== undefined && at - this.unansweredSince > NOTICE_MS) this.t.falseReady++;
  }
}

export const untrue = (t: Truth) => t.falseNotReady + t.falseReady;

export const truthCell = (t: Truth) =>
  `${t.notReady}/${t.samples} NotReady, ${untrue(t)} untrue; milan unanswered up to ${t.longestOutageS.toFixed(0)} s`;

/**
 * Samples, once a second until stopped, the Ready condition of virtual node `node` in the local
 * cluster and whether the remote API server answers; returns the counts when stopped.
 */
export function watchTruth(local: KubeClient, node: string, remote: KubeClient): { stop(): Promise<Truth> } {
  let running = true;
  const counter = new TruthCounter();
  const loop = (async () => {
    while (running) {
      const at = Date.now();
      const [answered, ready] = await Promise.all([
        remote.request("GET", "/version", { timeoutMs: 2000 }).then(
          () => true,
          () => false,
        ),
        local
          .find<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(Resources.nodes, node)
          .then(
            (n) => n?.status?.conditions?.find((c) => c.type === "Ready")?.status ?? "absent",
            () => undefined,
          ),
      ]);
      counter.observe(at, answered, ready);
      await Bun.sleep(Math.max(0, 1000 - (Date.now() - at)));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return counter.t;
    },
  };
}
