// Readiness hooks a role registers ("caches-synced", "leader", ...). Each run gives every check
// its own deadline, so one hung check reports a failure instead of hanging /readyz. Probes that
// arrive while a check is still running join that run rather than stacking new ones.
import { silentLogger, type Logger } from "../log.ts";

/** Pass by returning nothing or true; fail by throwing, returning false, or `{ ok: false, reason }`. */
export type ReadinessCheck = (ctx: { signal: AbortSignal }) => CheckAnswer | Promise<CheckAnswer>;
export type CheckAnswer = void | boolean | { ok: boolean; reason?: string };

export interface CheckResult {
  name: string;
  ok: boolean;
  reason?: string;
  durationMs: number;
}

export interface ReadinessReport {
  ready: boolean;
  checks: CheckResult[];
}

export interface ReadinessOptions {
  /** Default per-check deadline. */
  timeoutMs?: number;
  logger?: Logger;
  /** Milliseconds clock for durations; injected by tests. */
  now?: () => number;
}

export interface Readiness {
  /** Registers a check; returns a function that removes it again. */
  add(name: string, check: ReadinessCheck, options?: { timeoutMs?: number }): () => void;
  remove(name: string): boolean;
  has(name: string): boolean;
  names(): string[];
  /** Runs the checks concurrently, in registration order in the report. */
  run(options?: { exclude?: readonly string[]; only?: string }): Promise<ReadinessReport>;
}

/** Check names appear in URLs (/readyz/<name>) and in ?exclude=, so they stay URL-safe. */
export const CHECK_NAME_PATTERN = /^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$/;

interface Outcome {
  ok: boolean;
  reason?: string;
}

interface Entry {
  check: ReadinessCheck;
  timeoutMs: number;
  inflight?: { promise: Promise<Outcome>; abort: AbortController };
}

function interpret(answer: CheckAnswer): Outcome {
  if (answer === undefined || answer === true) return { ok: true };
  if (answer === false) return { ok: false, reason: "check returned false" };
  if (answer !== null && typeof answer === "object" && typeof answer.ok === "boolean") {
    return answer.ok ? { ok: true } : { ok: false, reason: answer.reason ?? "check reported not ok" };
  }
  return { ok: false, reason: `check returned an unexpected value (${typeof answer})` };
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

function assertTimeout(ms: number, what: string): void {
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`${what}: timeoutMs must be a positive number, got ${ms}`);
}

export function createReadiness(options: ReadinessOptions = {}): Readiness {
  const defaultTimeout = options.timeoutMs ?? 2000;
  assertTimeout(defaultTimeout, "readiness");
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? (() => performance.now());
  const entries = new Map<string, Entry>();

  const start = (name: string, entry: Entry) => {
    if (entry.inflight) return entry.inflight;
    const abort = new AbortController();
    const promise = Promise.resolve()
      .then(() => entry.check({ signal: abort.signal }))
      .then(interpret, (err: unknown): Outcome => ({ ok: false, reason: describe(err) }))
      .finally(() => {
        if (entry.inflight?.abort === abort) entry.inflight = undefined;
      });
    entry.inflight = { promise, abort };
    return entry.inflight;
  };

  const runOne = async (name: string, entry: Entry): Promise<CheckResult> => {
    const began = now();
    const inflight = start(name, entry);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut: Outcome = { ok: false, reason: `timed out after ${entry.timeoutMs}ms` };
    const expired = new Promise<Outcome>((resolve) => {
      timer = setTimeout(() => resolve(timedOut), entry.timeoutMs);
    });
    const outcome = await Promise.race([inflight.promise, expired]).finally(() => clearTimeout(timer));
    if (outcome === timedOut && entry.inflight === inflight) {
      // Abort and forget the hung run: a check that honours its signal stops now, and the next
      // probe starts a fresh attempt instead of inheriting a run that may never settle.
      inflight.abort.abort(new Error(`readiness check ${name} timed out`));
      entry.inflight = undefined;
    }
    const result: CheckResult = { name, ok: outcome.ok, durationMs: Math.round((now() - began) * 1000) / 1000 };
    if (!outcome.ok) {
      result.reason = outcome.reason;
      logger.debug("readiness check failed", { check: name, reason: outcome.reason });
    }
    return result;
  };

  return {
    add(name, check, addOptions = {}) {
      if (typeof name !== "string" || !CHECK_NAME_PATTERN.test(name)) {
        throw new TypeError(
          `readiness check name ${JSON.stringify(name)} must be lowercase letters, digits, "-" or ".", at most 63 characters`,
        );
      }
      if (typeof check !== "function") throw new TypeError(`readiness check ${name}: check must be a function`);
      if (entries.has(name)) throw new Error(`readiness check ${name} is already registered`);
      const timeoutMs = addOptions.timeoutMs ?? defaultTimeout;
      assertTimeout(timeoutMs, `readiness check ${name}`);
      const entry: Entry = { check, timeoutMs };
      entries.set(name, entry);
      return () => {
        if (entries.get(name) === entry) entries.delete(name);
      };
    },
    remove: (name) => entries.delete(name),
    has: (name) => entries.has(name),
    names: () => [...entries.keys()],
    async run(runOptions = {}) {
      const excluded = new Set(runOptions.exclude ?? []);
      const selected = [...entries].filter(([name]) =>
        runOptions.only !== undefined ? name === runOptions.only : !excluded.has(name),
      );
      const checks = await Promise.all(selected.map(([name, entry]) => runOne(name, entry)));
      return { ready: checks.every((c) => c.ok), checks };
    },
  };
}
