// Health of the remote cluster as the virtual node reports it: a cheap GET against the remote API
// server every interval; K consecutive failures make it unhealthy, one success makes it healthy.
// A single failed probe never flips the node: API servers restart and networks blip.
import type { KubeClient } from "../../kube/client.ts";
import type { RemoteHealth } from "./forge.ts";

export interface RemoteHealthOptions {
  remote: KubeClient;
  /** Consecutive failures before the remote is declared unhealthy (K). */
  failureThreshold: number;
  /** Per-probe timeout; a hung API server counts as a failure. */
  timeoutMs: number;
}

export interface RemoteHealthProbe {
  /** Probes once and returns the new state; `changed` says whether `healthy` flipped. */
  probe(): Promise<RemoteHealth & { changed: boolean }>;
  current(): RemoteHealth;
}

export function createRemoteHealthProbe(options: RemoteHealthOptions): RemoteHealthProbe {
  if (!Number.isInteger(options.failureThreshold) || options.failureThreshold < 1) {
    throw new Error(`failureThreshold must be a positive integer, got ${options.failureThreshold}`);
  }
  let state: RemoteHealth = { healthy: true, consecutiveFailures: 0 };
  return {
    current: () => ({ ...state }),
    async probe() {
      const before = state.healthy;
      const started = Date.now();
      try {
        // /version is served to every authenticated identity (system:public-info-viewer) and is
        // answered from memory, so it measures reachability, not load.
        await options.remote.request("GET", "/version", { timeoutMs: options.timeoutMs });
        state = { healthy: true, consecutiveFailures: 0 };
      } catch (err) {
        const failures = state.consecutiveFailures + 1;
        state = {
          healthy: failures < options.failureThreshold ? before : false,
          consecutiveFailures: failures,
          detail: (err as Error).message,
          failingSince: state.failingSince ?? started,
        };
      }
      return { ...state, changed: state.healthy !== before };
    },
  };
}
