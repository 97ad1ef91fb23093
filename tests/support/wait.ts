// Waiting for a condition with a deadline: the only way tests wait (never a fixed sleep).
export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Called at the deadline to describe the last observed state in the failure message. */
  describe?: () => unknown;
}

export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let lastError: unknown;
  while (true) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const state = options.describe ? `; last state: ${JSON.stringify(await options.describe())}` : "";
      const err = lastError ? `; last error: ${(lastError as Error).message}` : "";
      throw new Error(`timed out after ${options.timeoutMs ?? 60_000}ms waiting for ${what}${state}${err}`);
    }
    await Bun.sleep(options.intervalMs ?? 100);
  }
}

/**
 * The other half: a condition that must stay true for a while (nothing happens within a threshold,
 * a state holds through a window). Checked every interval until `forMs` has passed; the first
 * sample where it does not hold fails with what was seen and when.
 */
export async function holdsFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  forMs: number,
  options: Pick<WaitOptions, "intervalMs" | "describe"> = {},
): Promise<void> {
  const start = Date.now();
  while (true) {
    if (!(await check())) {
      const state = options.describe ? `; state: ${JSON.stringify(await options.describe())}` : "";
      throw new Error(`${what} stopped holding after ${Date.now() - start}ms of ${forMs}ms${state}`);
    }
    const left = start + forMs - Date.now();
    if (left <= 0) return;
    await Bun.sleep(Math.min(options.intervalMs ?? 200, left));
  }
}
