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
