// A failed OS command, with everything needed to reproduce it by hand.

export class CommandError extends Error {
  override name = "CommandError";
  constructor(
    readonly argv: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
    /** Network namespace the command ran in, if any. */
    readonly netns?: string,
    options?: { cause?: unknown },
  ) {
    const where = netns ? ` in netns ${netns}` : "";
    super(`\`${argv.join(" ")}\`${where} exited with ${exitCode}: ${stderr.trim() || "(no stderr)"}`, options);
  }
}

/** A WireGuard UAPI request the device refused (non-zero errno) or could not be reached. */
export class WireguardError extends Error {
  override name = "WireguardError";
  constructor(
    message: string,
    readonly device: string,
    readonly errno: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
