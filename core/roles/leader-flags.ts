// Leader election flags of `liqo controller-manager`, named as controller-runtime's managers name
// them. With several replicas (liqoctl install --enable-ha) only the Lease holder runs the
// controllers; the others stand by and are ready, so a rolling update can complete.
import { CliError } from "../cli-errors.ts";
import type { KubeClient } from "../kube/client.ts";
import { createLeaderElector, defaultLeaderIdentity, type LeaderElector } from "../kube/leader.ts";
import type { Logger } from "../log.ts";

export const leaderElectionArgs = {
  "leader-elect": {
    type: "boolean",
    default: false,
    description: "elect a leader among replicas through a Lease; only the leader runs the controllers",
  },
  "leader-elect-lease-duration": {
    type: "string",
    default: "15s",
    description: "how long a standby waits after the last renewal before taking over (e.g. 15s)",
  },
  "leader-elect-renew-deadline": {
    type: "string",
    default: "10s",
    description: "how long the leader retries renewing before stepping down (< lease duration)",
  },
  "leader-elect-retry-period": {
    type: "string",
    default: "2s",
    description: "how often the leader renews and standbys retry (< renew deadline)",
  },
  "leader-elect-lease-name": {
    type: "string",
    default: "liqo-controller-manager",
    description: "the Lease's name (in --liqo-namespace)",
  },
} as const;

type Args = {
  "leader-elect"?: boolean;
  "leader-elect-lease-duration"?: string;
  "leader-elect-renew-deadline"?: string;
  "leader-elect-retry-period"?: string;
  "leader-elect-lease-name"?: string;
  "liqo-namespace"?: string;
};

const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Go-style duration ("15s", "1m30s", "500ms"); a bare number is seconds. */
export function parseDuration(value: string, flag: string): number {
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (!text || parts.map((p) => p[0]).join("") !== text) {
    throw new CliError(`--${flag} "${value}" is not a duration; use e.g. 15s, 1m30s or 500ms`);
  }
  return parts.reduce((ms, p) => ms + Number(p[1]) * units[p[2]!]!, 0);
}

export interface LeaderElectionConfig {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  namespace: string;
  name: string;
}

/** Validated before anything starts; undefined when --leader-elect is off. */
export function leaderElectionConfig(args: Args): LeaderElectionConfig | undefined {
  if (!args["leader-elect"]) return undefined;
  const config = {
    leaseDurationMs: parseDuration(args["leader-elect-lease-duration"] ?? "15s", "leader-elect-lease-duration"),
    renewDeadlineMs: parseDuration(args["leader-elect-renew-deadline"] ?? "10s", "leader-elect-renew-deadline"),
    retryPeriodMs: parseDuration(args["leader-elect-retry-period"] ?? "2s", "leader-elect-retry-period"),
    namespace: args["liqo-namespace"] ?? "liqo",
    name: args["leader-elect-lease-name"] ?? "liqo-controller-manager",
  };
  if (!(config.renewDeadlineMs < config.leaseDurationMs)) {
    throw new CliError(
      `--leader-elect-renew-deadline (${config.renewDeadlineMs} ms) must be shorter than --leader-elect-lease-duration (${config.leaseDurationMs} ms)`,
    );
  }
  if (!(config.retryPeriodMs > 0 && config.retryPeriodMs < config.renewDeadlineMs)) {
    throw new CliError(
      `--leader-elect-retry-period (${config.retryPeriodMs} ms) must be positive and shorter than --leader-elect-renew-deadline (${config.renewDeadlineMs} ms)`,
    );
  }
  return config;
}

export interface Leadership {
  elector: LeaderElector;
  /** Rejects when leadership is lost: the process must exit (controller-runtime does the same). */
  lost: Promise<never>;
}

/**
 * Runs `lead` when this replica becomes the leader (not awaited by the elector, so a slow cache
 * sync cannot delay renewals) and `stepDown` when it loses the Lease, then rejects `lost`.
 */
export function electLeader(
  config: LeaderElectionConfig,
  deps: { client: KubeClient; logger: Logger; lead(): Promise<void>; stepDown(): Promise<void> },
): Leadership {
  let shuttingDown = false;
  let reject!: (err: Error) => void;
  const lost = new Promise<never>((_, r) => {
    reject = r;
  });
  lost.catch(() => {}); // observed by the caller; never an unhandled rejection
  let leading: Promise<void> = Promise.resolve();
  const elector = createLeaderElector({
    client: deps.client,
    namespace: config.namespace,
    name: config.name,
    identity: defaultLeaderIdentity(),
    leaseDurationMs: config.leaseDurationMs,
    renewDeadlineMs: config.renewDeadlineMs,
    retryPeriodMs: config.retryPeriodMs,
    logger: deps.logger,
    onStartedLeading() {
      leading = deps
        .lead()
        .catch((err) => reject(new CliError(`controllers failed to start as leader: ${(err as Error).message}`)));
    },
    async onStoppedLeading() {
      await leading;
      await deps.stepDown();
      if (!shuttingDown)
        reject(
          new CliError(
            `leader election lost: Lease ${config.namespace}/${config.name} is held by another replica or could not be renewed; exiting so the controllers restart cleanly`,
          ),
        );
    },
  });
  const stop = elector.stop.bind(elector);
  elector.stop = async () => {
    shuttingDown = true;
    await stop();
  };
  return { elector, lost };
}
