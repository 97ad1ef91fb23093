// Errors a user caused or can fix, shared by both command lines: liqoctl (cli/) and the liqo roles'
// flags (core/roles/). It lives here, below both, so a role never imports from the CLI.

/** An error the user caused or can fix: printed without a stack, with a documented exit code. */
export class CliError extends Error {
  override name = "CliError";
  constructor(
    message: string,
    readonly code: number = ExitCode.Usage,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** liqoctl's and liqo's exit codes (documented in docs/liqoctl.md). */
export const ExitCode = {
  Ok: 0,
  /** Something failed at run time: a cluster answered with an error, a wait timed out. */
  Failure: 1,
  /** Wrong flags or arguments. */
  Usage: 2,
  /** A cluster could not be reached or the kubeconfig is unusable. */
  Unreachable: 3,
} as const;
