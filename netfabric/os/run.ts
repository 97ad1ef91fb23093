// The one place that spawns processes. Adapters take a CommandRunner so the logic above them can
// be tested with a fake that records argv.
import { CommandError } from "./errors.ts";

export interface RunOptions {
  stdin?: string;
  /** Run inside this network namespace (`ip netns exec`). */
  netns?: string;
}

export interface CommandRunner {
  /** Runs argv to completion; resolves with stdout, rejects with CommandError on a non-zero exit. */
  run(argv: readonly string[], options?: RunOptions): Promise<string>;
}

export function createCommandRunner(): CommandRunner {
  return {
    async run(argv, options = {}) {
      const full = options.netns ? ["ip", "netns", "exec", options.netns, ...argv] : [...argv];
      let proc;
      try {
        proc = Bun.spawn(full, {
          stdin: options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
          stdout: "pipe",
          stderr: "pipe",
        });
      } catch (err) {
        throw new CommandError(
          full,
          127,
          `cannot start ${full[0]}: ${(err as Error).message}; install it (see scripts/debian-packages.txt)`,
          options.netns,
          { cause: err },
        );
      }
      const [stdout, stderr, exitCode] = await Promise.all([
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
        proc.exited,
      ]);
      if (exitCode !== 0) throw new CommandError(argv, exitCode, stderr, options.netns);
      return stdout;
    },
  };
}
