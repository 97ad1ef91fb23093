// Active/standby among replicas (the gateway, the controller manager) through a
// coordination.k8s.io Lease, with client-go's rules:
// a record is expired when it has not changed for leaseDuration *as observed locally* (so clock
// skew between replicas does not matter), the holder renews every retryPeriod and steps down when
// it could not renew for renewDeadline (< leaseDuration), so it has torn its configuration down
// before any standby may take the Lease over.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { KubeClient } from "./client.ts";
import { KubeApiError } from "./errors.ts";
import { keyOf, Resources, type KubeObject } from "./resources.ts";
import type { Pod } from "./types.ts";
import { silentLogger, type Logger } from "../log.ts";

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}
type Lease = KubeObject & { spec?: LeaseSpec };

export interface LeaderElectorOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /**
   * How long a replica that just started watches a released Lease before taking it (default two
   * retry periods), so a standby already running takes over rather than racing it. 0 where no
   * other replica can be standing by (a Deployment of one), which saves that wait on every restart.
   */
  standbyWaitMs?: number;
  logger?: Logger;
  /** Called when this replica becomes the holder; the returned promise is awaited before renewing. */
  onStartedLeading(): Promise<void> | void;
  /** Called when this replica stops being the holder (renew failed, Lease taken, stop()). */
  onStoppedLeading(): Promise<void> | void;
  /**
   * Whether another holder is certainly dead (e.g. its container is no longer running). A standby
   * asks it only once the holder's renewal is overdue (no change for 1.5 retry periods); true takes
   * the Lease over at once instead of waiting for it to expire. A SIGKILLed holder cannot release
   * its Lease, so without it a standby waits for the whole lease duration.
   */
  holderGone?(holder: string): Promise<boolean>;
}

export interface LeaderStatus {
  identity: string;
  leader: boolean;
  holder?: string;
  leaseDurationSeconds: number;
  renewTime?: string;
  transitions: number;
  lastError?: string;
}

export interface LeaderElector {
  start(): void;
  /** Releases the Lease if held (so a standby takes over at once) and stops. */
  stop(): Promise<void>;
  status(): LeaderStatus;
  isLeader(): boolean;
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export function createLeaderElector(options: LeaderElectorOptions): LeaderElector {
  const leaseDurationMs = options.leaseDurationMs ?? 15_000;
  const renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
  const retryPeriodMs = options.retryPeriodMs ?? 2_000;
  const standbyWaitMs = options.standbyWaitMs ?? 2 * retryPeriodMs;
  if (!(renewDeadlineMs < leaseDurationMs))
    throw new TypeError(
      `renew deadline (${renewDeadlineMs} ms) must be shorter than the lease duration (${leaseDurationMs} ms)`,
    );
  if (!(retryPeriodMs < renewDeadlineMs))
    throw new TypeError(
      `retry period (${retryPeriodMs} ms) must be shorter than the renew deadline (${renewDeadlineMs} ms)`,
    );
  const { client, namespace, name, identity } = options;
  const log = (options.logger ?? silentLogger).child({ component: "leader-election", lease: keyOf(namespace, name) });
  let leader = false;
  let lastRenew = 0;
  let observed: { record: string; at: number; spec: LeaseSpec } | undefined;
  let lastError: string | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();

  /** When this replica first read the Lease since start(): how long it has been standing by. */
  let firstSeen: number | undefined;

  function observe(lease: Lease | undefined) {
    const spec = lease?.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseDurationSeconds]);
    firstSeen ??= Date.now();
    if (!observed || observed.record !== record) observed = { record, at: Date.now(), spec };
  }

  function desired(prev: LeaseSpec | undefined): LeaseSpec {
    const now = microTime(Date.now());
    const taking = prev?.holderIdentity !== identity;
    return {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: taking ? now : (prev?.acquireTime ?? now),
      renewTime: now,
      leaseTransitions: (prev?.leaseTransitions ?? 0) + (taking && prev?.holderIdentity ? 1 : 0),
    };
  }

  /** One attempt; true when we hold the Lease afterwards. */
  async function tryAcquireOrRenew(): Promise<boolean> {
    let lease: Lease | undefined;
    try {
      lease = await client.get<Lease>(Resources.leases, name, namespace);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) throw err;
    }
    if (!lease) {
      const created = await client.create<Lease>(Resources.leases, {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name, namespace },
        spec: desired(undefined),
      });
      observe(created);
      return true;
    }
    observe(lease);
    const holder = lease.spec?.holderIdentity;
    // A released Lease (no holder) goes at once to a replica that has watched the Lease for
    // standbyWaitMs (two retry periods); a newcomer (the deleted leader's replacement, a replica of a scale-up) waits
    // until it has, so the standby that is already running takes over instead of racing it.
    const expired = holder
      ? Date.now() > observed!.at + (lease.spec?.leaseDurationSeconds ?? 0) * 1000
      : Date.now() - firstSeen! >= standbyWaitMs;
    const overdue = Date.now() - observed!.at > 1.5 * retryPeriodMs;
    let gone = false;
    if (holder && holder !== identity && !expired && overdue && options.holderGone) {
      gone = await options.holderGone(holder).catch((err) => {
        log.warn("could not tell whether the holder is gone; waiting for its Lease to expire", {
          holder,
          err: (err as Error).message,
        });
        return false;
      });
      if (gone) log.warn("the holder is gone; taking its Lease over before it expires", { holder });
    }
    if (holder !== identity && !expired && !gone) return false;
    // The resourceVersion makes this a compare-and-swap: two standbys racing for an expired Lease
    // cannot both win.
    const updated = await client.replace<Lease>(Resources.leases, { ...lease, spec: desired(lease.spec) });
    observe(updated);
    return true;
  }

  async function step() {
    let holding = false;
    try {
      holding = await tryAcquireOrRenew();
      lastError = undefined;
    } catch (err) {
      lastError = (err as Error).message;
      log.warn("lease update failed", { err: lastError });
    }
    if (holding) {
      lastRenew = Date.now();
      if (!leader) {
        leader = true;
        log.info("became the leader", { identity });
        await options.onStartedLeading();
      }
    } else if (
      leader &&
      (Date.now() - lastRenew > renewDeadlineMs ||
        (observed && observed.spec.holderIdentity !== identity && !lastError))
    ) {
      leader = false;
      log.warn("lost the lease; stepping down", { identity, holder: observed?.spec.holderIdentity });
      await options.onStoppedLeading();
    }
  }

  function schedule() {
    if (stopped) return;
    // Standbys poll a little faster than the holder renews, so a dead holder is noticed promptly.
    timer = setTimeout(
      () => {
        running = step()
          .catch((err) => log.error("leader election step failed", { err }))
          .finally(schedule);
      },
      leader ? retryPeriodMs : retryPeriodMs / 2,
    );
  }

  return {
    start() {
      stopped = false;
      firstSeen = undefined;
      running = step()
        .catch((err) => log.error("leader election step failed", { err }))
        .finally(schedule);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      if (!leader) return;
      leader = false;
      await options.onStoppedLeading();
      try {
        // Releasing: an empty holder lets a standby take over without waiting for expiry.
        const lease = await client.get<Lease>(Resources.leases, name, namespace);
        if (lease.spec?.holderIdentity === identity) {
          await client.replace(Resources.leases, {
            ...lease,
            spec: { ...lease.spec, holderIdentity: "", renewTime: microTime(Date.now()), leaseDurationSeconds: 1 },
          });
        }
      } catch (err) {
        log.warn("could not release the lease", { err: (err as Error).message });
      }
    },
    isLeader: () => leader,
    status: () => ({
      identity,
      leader,
      holder: observed?.spec.holderIdentity || undefined,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      renewTime: observed?.spec.renewTime,
      transitions: observed?.spec.leaseTransitions ?? 0,
      lastError,
    }),
  };
}

/** client-go's default identity: the host (the pod name in a pod) and a random suffix, unique per process. */
export function defaultLeaderIdentity(): string {
  return `${process.env.POD_NAME || hostname()}_${randomUUID()}`;
}

/** The pod an identity of the form `<pod>-<pid>` (the gateway's, in a pod) names. */
export function podOfIdentity(identity: string): string | undefined {
  return /^(.+)-\d+$/.exec(identity)?.[1];
}

/**
 * A holder's pod whose every container has stopped (terminated, or waiting to be restarted): its
 * process is dead, so it holds nothing. A pod without container statuses yet, or that cannot be
 * read, tells nothing (the Lease is left to expire).
 */
export function holderPodDead(pod: Pod | undefined): boolean {
  const statuses = pod?.status?.containerStatuses ?? [];
  return statuses.length > 0 && statuses.every((c) => !c.state?.running);
}
